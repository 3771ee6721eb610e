"""CheXbert label F1 as metrics: per-study bitmasks of TP/FP/FN, and their F1 equal to `semb.label_f1`'s."""

import numpy as np
import pytest

from rexrank import stats
from rexrank.models.conditions import BLANK, CONDITIONS, NEGATIVE, POSITIVE, UNCERTAIN
from rexrank.scorers.label_f1 import LABEL_F1, MASKS, masks, sufficient
from rexrank.scorers.semb import label_f1


def random_classes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    kinds = np.array([BLANK, POSITIVE, NEGATIVE, UNCERTAIN])
    return kinds[rng.integers(0, 4, (n, len(CONDITIONS)))], kinds[rng.integers(0, 4, (n, len(CONDITIONS)))]


def test_bitmasks_of_one_study_by_hand():
    hyp = np.full((1, 14), BLANK)
    ref = np.full((1, 14), NEGATIVE)
    hyp[0, [1, 4]] = POSITIVE, UNCERTAIN  # Cardiomegaly, Edema called; uncertain counts as positive
    ref[0, [1, 9]] = POSITIVE, POSITIVE  # Cardiomegaly, Pleural Effusion present
    found = masks(hyp, ref)
    assert [int(found[c][0]) for c in MASKS] == [1 << 1, 1 << 4, 1 << 9]
    assert sufficient(found, [1, 4, 9]).tolist() == [[1, 0, 0, 0, 1, 0, 0, 0, 1]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_four_metrics_equal_label_f1_exactly(seed):
    hyp, ref = random_classes(60, seed)
    expected = label_f1(hyp, ref)
    columns = masks(hyp, ref)
    for name, metric in LABEL_F1.items():
        value = stats.estimate(metric.table(columns), metric.statistic, resamples=20).value
        assert value == expected[name.removeprefix("chexbert_")], name


def test_a_condition_never_positive_counts_zero_in_the_macro_mean_as_in_label_f1():
    hyp, ref = random_classes(30, 3)
    hyp[:, 1], ref[:, 1] = NEGATIVE, BLANK  # Cardiomegaly never positive on either side
    metric = LABEL_F1["chexbert_macro_f1_5"]
    assert stats.estimate(metric.table(masks(hyp, ref)), "macro_f1", resamples=20).value == label_f1(hyp, ref)[
        "macro_f1_5"]


def test_every_metric_is_an_f1_of_section_3_with_its_words():
    assert {m.statistic for m in LABEL_F1.values()} <= set(stats.AGGREGATES)
    for metric in LABEL_F1.values():
        assert metric.bounds == (0.0, 1.0) and metric.section == "§3" and metric.summary and metric.empty_prediction
    assert len({m.labels for m in LABEL_F1.values()}) == 2 and len({m.title for m in LABEL_F1.values()}) == 4
