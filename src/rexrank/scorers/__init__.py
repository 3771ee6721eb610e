"""Metric registry: names as they appear in result files and on the command line."""

from __future__ import annotations

from rexrank.errors import InputError
from rexrank.scorers.base import Composite, Judged, MetricUnavailable, Scorer
from rexrank.scorers.bertscore import BertScore
from rexrank.scorers.bleu import Bleu2
from rexrank.scorers.fineradscore import FineRadScore
from rexrank.scorers.green import Green
from rexrank.scorers.label_f1 import LABEL_F1, LabelF1
from rexrank.scorers.radcliq import RADCLIQ_V0, RADCLIQ_V1, RadCliQ
from rexrank.scorers.radgraph import RadGraphF1
from rexrank.scorers.ratescore import RaTEScore
from rexrank.scorers.semb import SembScore

SCORERS: dict[str, type[Scorer]] = {"bleu2": Bleu2, "bertscore": BertScore, "semb_score": SembScore,
                                    "radgraph": RadGraphF1, "ratescore": RaTEScore}
COMPOSITES: dict[str, Composite] = {
    "radcliq_v1": RadCliQ("radcliq_v1", "RadCliQ-v1", RADCLIQ_V1),
    "radcliq_v0": RadCliQ("radcliq_v0", "RadCliQ-v0", RADCLIQ_V0),
}
# Statistics of per-study sufficient statistics (TP/FP/FN bitmasks) made from another scorer's features.
AGGREGATED: dict[str, LabelF1] = dict(LABEL_F1)
# Judged by an LLM: named explicitly, with a judge endpoint (GREEN also a local model); never part of `all`.
JUDGED: dict[str, type[Judged]] = {"green": Green, "fineradscore": FineRadScore}
METRICS = (*SCORERS, *COMPOSITES, *AGGREGATED, *JUDGED)
# Other names of the same metrics: the `evaluate` modules' Space names (`rexrank/sembscore`, `rexrank/radcliq`, as
# metrics/<name>/ is named) and the keys CXR-Report-Metric's tables use (`radgraph_combined`), where the command
# line, result files and the board say `semb_score`, `radcliq_v1` and `radgraph`. Accepted wherever a metric is named
# (`--metrics`, `compute`, `metric_class`); what rexrank writes is the name in METRICS.
ALIASES = {"sembscore": "semb_score", "radgraph_combined": "radgraph", "radcliq": "radcliq_v1"}


def aliases(name: str) -> tuple[str, ...]:
    """The other names a metric is accepted under."""
    return tuple(old for old, new in ALIASES.items() if new == name)


def canonical(name: str) -> str:
    """The metric's one name (an alias mapped to it); anything else comes back as it is."""
    return ALIASES.get(name, name)


# What `all` means: every metric this version computes without a judge (a composite needs its components).
AVAILABLE = tuple(m for m in (*SCORERS, *COMPOSITES, *AGGREGATED)
                  if m in SCORERS or all(c in SCORERS for c in (COMPOSITES.get(m) or AGGREGATED[m]).needs))

__all__ = ["AGGREGATED", "ALIASES", "AVAILABLE", "aliases", "COMPOSITES", "JUDGED", "METRICS", "SCORERS", "Composite",
           "Judged", "MetricUnavailable", "Scorer", "canonical", "inverted", "metric_class", "needs_here",
           "parse_metrics", "shown"]


def metric_class(name: str) -> type[Scorer] | Composite | type[Judged] | LabelF1:
    """The class or composite behind a metric name or alias (its statistic, version, empty-prediction rule)."""
    name = canonical(name)
    return SCORERS.get(name) or JUDGED.get(name) or AGGREGATED.get(name) or COMPOSITES[name]


def inverted(name: str) -> bool:
    """Whether a metric's value is shown as 1 / its mean (RadCliQ, FineRadScore): decided by its statistic alone."""
    return metric_class(name).statistic == "inverse_mean"


def shown(name: str) -> str:
    """A metric's value as the board, ReXrank's tables and the reports name it: its title, 1/ before it when the
    value is 1 / the mean ("1/RadCliQ-v1")."""
    title = metric_class(name).title
    return f"1/{title}" if inverted(name) else title


def parse_metrics(text: str | None) -> list[str]:
    """`bleu2,radcliq_v1` -> names, checked; None or 'all' -> every metric this version can compute."""
    if text is None or text.strip() == "all":
        return list(AVAILABLE)
    names = [canonical(n.strip()) for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InputError(f"unknown metric {', '.join(map(repr, unknown))}: known metrics are {', '.join(METRICS)}")
    if not names:
        raise InputError("no metric named: give --metrics NAME[,NAME...]")
    return list(dict.fromkeys(names))


def needs_here(name: str) -> list[str]:
    """What metric `name` lacks on this machine now, each a line with its fix; empty when it can run. Nothing is
    downloaded or loaded: the weights are looked for where `rexrank models check` looks (a local override, the cache).
    A judged metric needs a judge (--judge-url/--judge-model or their variables); GREEN may use its local weights."""
    import importlib.util
    import os

    from rexrank.models import status

    name = canonical(name)
    if name in COMPOSITES or name in AGGREGATED:
        parts = [part for part in (COMPOSITES.get(name) or AGGREGATED[name]).needs if needs_here(part)]
        return [f"{', '.join(parts)}, which cannot run here"] if parts else []
    if name in JUDGED:
        judge = os.environ.get("REXRANK_JUDGE_URL") and os.environ.get("REXRANK_JUDGE_MODEL")
        if judge or (name == "green" and not status("GREEN").missing):
            return []
        local = ", or GREEN's own weights: rexrank models download green (13.5 GB)" if name == "green" else ""
        return [f"a judge: --judge-url URL --judge-model NAME (or REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL){local}"]
    installed = all(importlib.util.find_spec(module) for module in ("torch", "transformers"))
    lacking = [] if installed or not SCORERS[name].models else ["torch and transformers: pip install 'rexrank[models]'"]
    missing = [key for key in SCORERS[name].models if status(key).missing]
    if missing:
        lacking.append(f"weights of {', '.join(k.lower() for k in missing)}: rexrank models download "
                       + " ".join(k.lower() for k in missing))
    return lacking
