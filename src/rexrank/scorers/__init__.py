"""Metric registry: names as they appear in result files and on the command line."""

from __future__ import annotations

from collections.abc import Sequence

from rexrank.errors import InputError
from rexrank.reports import check_pairs
from rexrank.scorers.base import Composite, Judged, MetricUnavailable, Scorer
from rexrank.scorers.bertscore import BertScore
from rexrank.scorers.bleu import Bleu2
from rexrank.scorers.fineradscore import FineRadScore
from rexrank.scorers.green import Green
from rexrank.scorers.radcliq import RADCLIQ_V0, RADCLIQ_V1, RadCliQ
from rexrank.scorers.radgraph import RadGraphF1
from rexrank.scorers.ratescore import RaTEScore
from rexrank.scorers.semb import SembScore

SCORERS: dict[str, type[Scorer]] = {"bleu2": Bleu2, "bertscore": BertScore, "semb_score": SembScore,
                                    "radgraph": RadGraphF1, "ratescore": RaTEScore}
COMPOSITES: dict[str, Composite] = {
    "radcliq_v1": RadCliQ("radcliq_v1", RADCLIQ_V1),
    "radcliq_v0": RadCliQ("radcliq_v0", RADCLIQ_V0),
}
# Judged by an LLM: named explicitly, with a judge endpoint (GREEN also a local model); never part of `all`.
JUDGED: dict[str, type[Judged]] = {"green": Green, "fineradscore": FineRadScore}
METRICS = (*SCORERS, *COMPOSITES, *JUDGED)
# What `all` means: every metric this version computes without a judge (a composite needs its components).
AVAILABLE = tuple(m for m in (*SCORERS, *COMPOSITES) if m in SCORERS or all(c in SCORERS for c in COMPOSITES[m].needs))

__all__ = ["AVAILABLE", "COMPOSITES", "JUDGED", "METRICS", "SCORERS", "Composite", "Judged", "MetricUnavailable",
           "Scorer", "compute", "metric_class", "parse_metrics"]


def metric_class(name: str) -> type[Scorer] | Composite | type[Judged]:
    """The class or composite behind a metric name (its statistic, version, empty-prediction rule)."""
    return SCORERS.get(name) or JUDGED.get(name) or COMPOSITES[name]


def parse_metrics(text: str | None) -> list[str]:
    """`bleu2,radcliq_v1` -> names, checked; None or 'all' -> every metric this version can compute."""
    if text is None or text.strip() == "all":
        return list(AVAILABLE)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InputError(f"unknown metric {', '.join(map(repr, unknown))}: known metrics are {', '.join(METRICS)}")
    if not names:
        raise InputError("no metric named: give --metrics NAME[,NAME...]")
    return list(dict.fromkeys(names))


def compute(name: str, predictions: Sequence[str], references: Sequence[str], key: str | None = None,
            **options) -> dict:
    """What an `evaluate` module returns: `{key: mean, key_per_sample: [...], "signature": ..., **extras}`.

    `key` defaults to the metric name; `options` go to the scorer (idf, device, batch_size).
    """
    if name not in SCORERS:
        raise InputError(f"{name!r} is not a per-text scorer: known scorers are {', '.join(SCORERS)}")
    check_pairs(predictions, references)
    scorer = SCORERS[name](**{"progress": False} | options)
    candidates, refs = scorer.paired_features(list(predictions), list(references))
    per_sample = scorer.score(candidates, refs)
    mean = float(per_sample.mean()) if len(per_sample) else float("nan")
    key = key or name
    return {key: mean, f"{key}_per_sample": per_sample.tolist(), "signature": str(scorer.signature()),
            **scorer.extras(candidates, refs)}
