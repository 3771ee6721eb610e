"""Each metric against the votes, by hand: the share of decisive votes where the metric prefers the chosen report
(per study, direction from the registry, a metric tie half), its weighting, its interval, and Kendall's tau-b between
the metric's order of the models and the votes'; the tables read back from files as `rexrank score --out` writes
them."""

import math

import numpy as np
import pandas as pd
import pytest

from rexrank import per_study
from rexrank.arena.agreement import agreement, load_tables, tau_b
from rexrank.arena.limits import Counted
from rexrank.arena.votes import Vote
from rexrank.results import MetricResult, ModelInfo, Result
from rexrank.signature import Signature

NAN = math.nan
PER_STUDY = {  # model -> metric -> (s1, s2, s3); radcliq_v1 is better lower per study
    "A": {"bleu2": (0.5, 0.2, 0.4), "radcliq_v1": (1.0, 2.0, 1.0)},
    "B": {"bleu2": (0.3, 0.2, 0.6), "radcliq_v1": (2.0, 1.0, 1.0)},
    "C": {"bleu2": (0.1, 0.9, NAN), "radcliq_v1": (3.0, 3.0, 3.0)},
}
VALUES = {"A": {"bleu2": 0.40, "radcliq_v1": 0.8}, "B": {"bleu2": 0.35, "radcliq_v1": 0.9},
          "C": {"bleu2": 0.30, "radcliq_v1": 0.2}}
VOTES = [("s1", "A", "B", "a"),  # bleu2 prefers A: agrees; radcliq prefers A: agrees
         ("s2", "A", "B", "b"),  # bleu2 ties: half; radcliq prefers B: agrees
         ("s3", "B", "A", "a"),  # bleu2 prefers B: agrees; radcliq ties: half
         ("s1", "C", "A", "a"),  # both prefer A: neither agrees
         ("s2", "A", "C", "tie"),  # not decisive: left out
         ("s3", "A", "C", "b")]  # bleu2: C has no score, left out; radcliq prefers A: disagrees


def counted(weights=None) -> Counted:
    votes = [Vote("0" * 64, s, "iu_xray", "findings", a, b, w, "2026-01-01T00:00:00Z") for s, a, b, w in VOTES]
    return Counted(votes, weights or [1.0] * len(votes))


def metric(name: str, value: float) -> MetricResult:
    inverse = name == "radcliq_v1"
    return MetricResult(value, 1 / value if inverse else value, value - 0.01, value + 0.01, 3,
                        "inverse_mean" if inverse else "mean", signature=Signature(name, "1"))


def tables() -> dict:
    ids = ("s1", "s2", "s3")
    return {m: (Result(ModelInfo(m), "iu_xray", "test", "findings",
                       {k: metric(k, VALUES[m][k]) for k in VALUES[m]}, counts={"scored": 3}),
                {k: dict(zip(ids, v)) for k, v in PER_STUDY[m].items()}) for m in PER_STUDY}


def test_agreement_by_hand():
    rows = {r.metric: r for r in agreement(counted(), tables(), resamples=500)}
    assert list(rows) == ["bleu2", "radcliq_v1"]  # the registry's order
    bleu, radcliq = rows["bleu2"], rows["radcliq_v1"]
    assert (bleu.share, bleu.votes, bleu.metric_ties) == (2.5 / 4, 4, 1)
    assert (radcliq.share, radcliq.votes, radcliq.metric_ties) == (2.5 / 5, 5, 1)
    assert 0 <= bleu.low <= bleu.share <= bleu.high <= 1 and bleu.high - bleu.low > 0.2  # four votes: wide
    # votes: C beat A twice and never lost, B beat A 2-1: C > B > A; bleu2's values A > B > C: reversed
    assert bleu.tau == pytest.approx(-1.0) and bleu.models == 3
    # radcliq's B > A > C against C > B > A: (B, A) concordant, (B, C) and (A, C) discordant: (1 - 2) / 3
    assert radcliq.tau == pytest.approx(-1 / 3)


def test_a_votes_weight_counts_in_the_share():
    rows = {r.metric: r for r in agreement(counted([2.0, 1, 1, 1, 1, 1]), tables(), resamples=100)}
    assert rows["bleu2"].share == pytest.approx((2 + 0.5 + 1 + 0) / 5) and rows["bleu2"].votes == 4


def test_a_metric_that_always_agrees_has_a_point_interval():
    agreeing = [Vote("0" * 64, "s1", "iu_xray", "findings", "A", "B", "a", "2026-01-01T00:00:00Z")] * 5
    row = next(r for r in agreement(Counted(agreeing, [1.0] * 5), tables(), resamples=100) if r.metric == "bleu2")
    assert (row.share, row.low, row.high) == (1.0, 1.0, 1.0)


def test_tau_b_by_hand():
    assert tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx((5 - 1) / 6)
    # ties: one pair tied in x, another in y; 4 concordant of 6: 4 / sqrt(5 * 5)
    assert tau_b([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.8)
    assert math.isnan(tau_b([1, 1], [1, 2]))


def test_tables_read_back_from_a_score_out_folder(tmp_path):
    for model, (result, scores) in tables().items():
        result.write(tmp_path / f"iu_xray.findings.{model}.json")
        frame = pd.DataFrame({"study_id": ["s1", "s2", "s3"],
                              **{k: np.array(list(v.values()), dtype=float) for k, v in scores.items()}})
        per_study.write(frame, tmp_path / f"iu_xray.findings.{model}.per_study.parquet")
    read = load_tables(tmp_path, "iu_xray", "findings")
    assert sorted(read) == ["A", "B", "C"] and read["B"][1]["bleu2"]["s3"] == 0.6
    assert load_tables(tmp_path, "iu_xray", "findings_impression") == {}
    rows = agreement(counted(), read, resamples=100)
    assert [(r.metric, r.share) for r in rows] == [("bleu2", 0.625), ("radcliq_v1", 0.5)]
