"""CheXbert label F1 as metrics: per-study bitmasks of TP/FP/FN, and their F1 equal to `semb.label_f1`'s."""

import numpy as np
import pytest
from fixtures.metric_contract import SAME, LabelF1Case, MetricContract
from test_semb import SEMB

from rexrank import stats
from rexrank.models.conditions import BLANK, CONDITIONS, NEGATIVE, POSITIVE, UNCERTAIN
from rexrank.scorers import AGGREGATED
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


def f1_by_hand(hyp, ref, labels, statistic) -> float:
    """F1 over `labels` counted here: positive or uncertain is positive; micro sums the counts, macro averages each
    condition's F1 (one never positive on either side counts 0)."""
    h, r = (np.isin(x[:, list(labels)], (POSITIVE, UNCERTAIN)) for x in (hyp, ref))
    tp, fp, fn = (h & r).sum(0), (h & ~r).sum(0), (~h & r).sum(0)
    if statistic == "micro_f1":
        tp, fp, fn = tp.sum(), fp.sum(), fn.sum()
    made = 2 * tp + fp + fn
    return float(np.mean(np.divide(2 * tp, made, out=np.zeros(np.shape(tp)), where=made > 0)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_label_f1_equals_label_f1_exactly_and_a_count_by_hand(seed):
    hyp, ref = random_classes(60, seed)
    expected = label_f1(hyp, ref)  # SembScore's extra: the 14 and the top 5, as f1chexbert
    columns = masks(hyp, ref)
    for name, metric in LABEL_F1.items():
        value = stats.estimate(metric.table(columns), metric.statistic, resamples=20).value
        assert value == pytest.approx(f1_by_hand(hyp, ref, metric.labels, metric.statistic), abs=1e-12), name
        assert value == expected.get(name.removeprefix("chexbert_"), value), name
    assert {n.removeprefix("chexbert_") for n in LABEL_F1} & set(expected) == set(expected)  # each extra is a metric


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
    kinds, titles = {(m.labels, m.statistic) for m in LABEL_F1.values()}, {m.title for m in LABEL_F1.values()}
    assert len(kinds) == len(titles) == len(LABEL_F1)  # each its own F1, under its own title


F1_NAMES = list(LABEL_F1)


def scored_rows(n: int = 40):
    import pandas as pd
    from fixtures.reports import reports

    texts = reports(2 * n, seed=9)
    return pd.DataFrame({"study_id": [f"s{i}" for i in range(n)], "prediction": texts[:n], "reference": texts[n:]})


@pytest.mark.slow
def test_rexrank_score_gives_the_four_with_a_ci_equal_to_semb_extras(local_models):
    from rexrank.scorecard import MetricSet, score

    card = score(scored_rows(), MetricSet(F1_NAMES, progress=False, batch_size=8, chunk=16), resamples=200)
    assert set(F1_NAMES) <= set(card.metrics) and not card.skipped
    assert set(MASKS) <= set(card.per_study.columns) and not set(F1_NAMES) & set(card.per_study.columns)
    for name in F1_NAMES:  # the same labels SembScore's extra is made from, the same numbers
        metric = card.metrics[name]
        extra = card.extras["chexbert_label_f1"]  # the 14 and the top 5 (test_every_label_f1_equals_... : the rest)
        assert metric.value == extra.get(name.removeprefix("chexbert_"), metric.value)
        assert metric.statistic == LABEL_F1[name].statistic and metric.n == 40
        assert 0 <= metric.low <= metric.value <= metric.high <= 1 and metric.low < metric.high
        assert [p.metric for p in metric.signature.components] == ["semb_score"]
    assert all(card.per_study[c].dtype == np.int64 for c in MASKS)


def test_without_sembscore_the_four_are_skipped_saying_why(local_models, monkeypatch):
    from rexrank.scorecard import MetricSet, score

    metric_set = MetricSet(F1_NAMES[:1], progress=False)
    monkeypatch.setattr(metric_set, "scorers", {})
    metric_set.unavailable["semb_score"] = "no CheXbert weights"
    card = score(scored_rows(4), metric_set, resamples=20)
    assert card.skipped[F1_NAMES[0]] == "needs semb_score (no CheXbert weights)" and not card.metrics


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def label_f1_case(name: str) -> LabelF1Case:
    return LabelF1Case(
        name=name, metric=AGGREGATED[name], semb=SEMB, tolerance=0.0,
        why="counts of CheXbert labels, argmax classes (no near tie in these texts)",
        nfd=SAME, nfd_why="CheXbert reads bert-base-uncased wordpieces, whose normalizer strips accents (NFD) first",
        variant={"dtype": "bf16"},
        skips={"cache": "no features of its own: they are SembScore's, whose case checks their cache",
               "oracle": "a statistic of sums, no per-study value to compare: its value equals SembScore's label F1 "
                         "(f1chexbert's) in test_every_label_f1_equals_label_f1_exactly_and_a_count_by_hand"})


class TestMicroF1Of14Contract(MetricContract):
    case = label_f1_case("chexbert_micro_f1_14")


class TestMacroF1Of14Contract(MetricContract):
    case = label_f1_case("chexbert_macro_f1_14")


class TestMicroF1Of5Contract(MetricContract):
    case = label_f1_case("chexbert_micro_f1_5")


class TestMacroF1Of5Contract(MetricContract):
    case = label_f1_case("chexbert_macro_f1_5")
