"""Statistics of per-study sufficient statistics: F1 of summed counts, their bootstrap and paired tests."""

import numpy as np
import pytest

from rexrank import stats

# Two labels, three studies; columns: TP of labels 1, 2, then FP of 1, 2, then FN of 1, 2.
TABLE = np.array([[1, 0, 0, 1, 0, 0],
                  [1, 1, 1, 0, 0, 0],
                  [0, 0, 0, 0, 1, 1]])


def test_micro_and_macro_f1_of_a_tiny_table_by_hand():
    # Sums: TP (2, 1), FP (1, 1), FN (1, 1). Micro: 2*3 / (2*3 + 2 + 2) = 6/10.
    # Label 1: 4 / (4 + 1 + 1) = 2/3; label 2: 2 / (2 + 1 + 1) = 1/2; macro = (2/3 + 1/2) / 2 = 7/12.
    micro, macro = stats.estimate(TABLE, "micro_f1", resamples=50), stats.estimate(TABLE, "macro_f1", resamples=50)
    assert micro.value == 6 / 10 and micro.n == 3 and micro.statistic == "micro_f1"
    assert macro.value == (2 / 3 + 1 / 2) / 2  # numpy's mean of two: their float sum, halved


def test_a_label_never_positive_counts_zero_in_the_macro_mean():
    table = np.array([[1, 0, 0, 0, 0, 0]])  # label 2 never predicted nor present: F1 0, as sklearn's macro
    assert stats.macro_f1(table.sum(axis=0)) == 0.5 and stats.micro_f1(np.zeros(6)) == 0.0


def test_the_interval_is_the_percentiles_of_the_f1_of_resampled_sums():
    table = np.random.default_rng(4).integers(0, 2, size=(120, 9))
    found = stats.estimate(table, "micro_f1", resamples=300, seed=8)
    draws = np.random.default_rng(8).integers(0, 120, size=(300, 120))  # one chunk: 300 x 120 < stats._CELLS
    sums = np.array([table[rows].sum(axis=0) for rows in draws])
    low, high = np.percentile(stats.micro_f1(sums), [2.5, 97.5])
    assert (found.low, found.high) == (low, high) and found.low <= found.value <= found.high


def test_resampled_sums_draw_the_studies_resample_means_draws():
    values = np.random.default_rng(3).random(200)
    np.testing.assert_array_equal(stats.resample_sums(values[:, None], 64, 9)[:, 0] / 200,
                                  stats.resample_means(values, 64, 9))


def test_resampled_sums_do_not_depend_on_the_memory_block(monkeypatch):
    table = np.random.default_rng(5).integers(0, 2, size=(50, 6)).astype(np.float64)
    whole = stats.resample_sums(table, 40, 2)
    monkeypatch.setattr(stats, "_CELLS", 50 * 6 * 3)  # 3 resamples gathered at once
    np.testing.assert_array_equal(stats.resample_sums(table, 40, 2), whole)


def test_an_n_by_1_mean_bootstraps_as_the_1d_one():
    values = np.random.default_rng(6).random(150)
    np.testing.assert_array_equal(stats.resample_means(values[:, None], 200, 1)[:, 0],
                                  stats.resample_means(values, 200, 1))


@pytest.mark.slow
def test_paired_tests_of_an_aggregate_see_a_real_gain_and_not_a_null_one():
    rng = np.random.default_rng(11)
    truth = rng.random((400, 4)) < 0.3
    good = truth ^ (rng.random((400, 4)) < 0.05)  # few errors
    bad = truth ^ (rng.random((400, 4)) < 0.25)
    same = truth ^ (rng.random((400, 4)) < 0.05)

    def counts(hyp):
        return np.concatenate([hyp & truth, hyp & ~truth, ~hyp & truth], axis=1).astype(int)

    for test in (stats.paired_bootstrap, stats.permutation_test):
        real = test(counts(good), counts(bad), "micro_f1", 2000, 0)
        null = test(counts(good), counts(same), "micro_f1", 2000, 0)
        assert real.delta == stats.micro_f1(counts(good).sum(0)) - stats.micro_f1(counts(bad).sum(0))
        assert real.p_value < 0.001 and null.p_value > 0.05
    boot = stats.paired_bootstrap(counts(good), counts(bad), "macro_f1", 2000, 0)
    assert boot.low <= boot.delta <= boot.high and boot.low > 0


def test_a_system_against_itself_has_no_difference():
    for test in (stats.paired_bootstrap, stats.permutation_test):
        same = test(TABLE, TABLE, "macro_f1", 200, 0)
        assert same.delta == 0 and same.p_value == 1.0


def test_a_table_that_is_not_2d_or_not_finite_is_refused():
    with pytest.raises(ValueError, match="table"):
        stats.estimate([1.0, 2.0, 3.0], "micro_f1")
    with pytest.raises(ValueError, match="position 1"):
        stats.estimate([[1.0, 0.0, 0.0], [np.nan, 0.0, 0.0]], "micro_f1")
    with pytest.raises(ValueError, match="same studies"):
        stats.paired_bootstrap(TABLE, TABLE[:2], "micro_f1")
