"""Metric registry: names as they appear in result files and on the command line."""

from __future__ import annotations

from rexrank.catalog import REXVQA_CITATION
from rexrank.errors import InputError
from rexrank.scorers import rexvqa_accuracy
from rexrank.scorers.base import Composite, Judged, MetricUnavailable, Scorer
from rexrank.scorers.bertscore import BertScore
from rexrank.scorers.bleu import Bleu2
from rexrank.scorers.coco import Bleu4, RougeL
from rexrank.scorers.fineradscore import FineRadScore
from rexrank.scorers.green import Green
from rexrank.scorers.label_f1 import LABEL_F1, LabelF1
from rexrank.scorers.radcliq import RADCLIQ_V0, RADCLIQ_V1, RadCliQ
from rexrank.scorers.radgraph import RadGraphF1
from rexrank.scorers.ratescore import RaTEScore
from rexrank.scorers.semb import SembScore
from rexrank.scorers.spec import NOT_REPORTS, Kind, Spec, spec_of

# RadRBench-CXR's judged metric (docs/metrics.md §9): its module loads with the judge's client, so it is declared here.
RADRSCORE = Spec(
    "radrscore", "RadRScore", "4", Kind.REASONING, "mean", {"radrscore": "score"}, bounds=(0.0, 1.0),
    options={"quoted": True},  # the board's: texts quoted as data (off: the reference's messages)
    empty_prediction="judged as written: an empty reasoning has no step to credit (0)",
    summary="An LLM judge's completeness, factuality and effectiveness of a model's reasoning steps against the "
            "reference's, averaged: RadRBench-CXR's reasoning score.",
    section="§9", implementation="rexrank.scorers.radrscore")

# ReXVQA's accuracy (docs/metrics.md §12): a module of its own, as RadRScore's; its evaluate module takes options=.
REXVQA_ACCURACY = Spec(
    rexvqa_accuracy.NAME, "ReXVQA accuracy", rexvqa_accuracy.VERSION, Kind.VQA, "mean", {rexvqa_accuracy.NAME: "score"},
    bounds=(0.0, 1.0), empty_prediction="no letter can be read from it: a failed extraction, wrong (0)",
    summary="The share of multiple-choice questions whose option letter, read from the model's free text by one "
            "written rule, is the correct one; an answer that cannot be read is wrong and counted as a failed "
            "extraction.",
    section="§12", citation=REXVQA_CITATION, codebase=("https://github.com/rajpurkarlab/ReXrank",),
    options={"parser": rexvqa_accuracy.PARSER_VERSION, "unreadable": "wrong"},
    implementation="rexrank.scorers.rexvqa_accuracy")

# Every metric, one spec each (rexrank.scorers.spec), in the order results, tables and the board list them.
REGISTRY: dict[str, Spec] = {s.name: s for s in (
    *(spec_of(cls, Kind.SCORER) for cls in (Bleu2, BertScore, SembScore, RadGraphF1, RaTEScore, Bleu4, RougeL)),
    spec_of(RadCliQ("radcliq_v1", "RadCliQ-v1", RADCLIQ_V1, board=5, demo=0.85, ranks=True), Kind.COMPOSITE),
    spec_of(RadCliQ("radcliq_v0", "RadCliQ-v0", RADCLIQ_V0, demo=0.30), Kind.COMPOSITE),
    *(spec_of(f, Kind.AGGREGATED) for f in LABEL_F1.values()),  # TP/FP/FN bitmasks from SembScore's labels
    *(spec_of(cls, Kind.JUDGED) for cls in (Green, FineRadScore)),  # named explicitly, with a judge; never in `all`
    RADRSCORE,  # RadRBench-CXR's, on reasoning steps: not a report metric, not a board column
    REXVQA_ACCURACY,  # ReXVQA's, on answers to questions: the VQA track's, not a report metric
)}


def _implementations(kind: Kind) -> dict:
    return {name: made.implementation for name, made in REGISTRY.items() if made.kind == kind}


# The registry by kind: what the scorecard builds and runs.
SCORERS: dict[str, type[Scorer]] = _implementations(Kind.SCORER)
COMPOSITES: dict[str, Composite] = _implementations(Kind.COMPOSITE)
AGGREGATED: dict[str, LabelF1] = _implementations(Kind.AGGREGATED)
JUDGED: dict[str, type[Judged]] = _implementations(Kind.JUDGED)
METRICS = tuple(n for n, s in REGISTRY.items() if s.kind not in NOT_REPORTS)  # the report metrics: results, the board
# The board's default columns, in the order each metric declares (`board`; ReXrank's tables' order): each metric's
# title and whether it is shown as 1/mean are its own too (`shown`).
BOARD_METRICS = tuple(sorted((n for n, s in REGISTRY.items() if s.board is not None),
                             key=lambda n: REGISTRY[n].board))
RANK_BY = next(n for n, s in REGISTRY.items() if s.ranks)  # what the board ranks by (1/RadCliQ-v1)
# Other names of the same metrics: the `evaluate` modules' Space names (`rexrank/sembscore`, `rexrank/radcliq`, as
# metrics/<name>/ is named) and the keys CXR-Report-Metric's tables use (`radgraph_combined`), where the command
# line, result files and the board say `semb_score`, `radcliq_v1` and `radgraph`. Accepted wherever a metric is named
# (`--metrics`, `compute`, `spec`); what rexrank writes is the name in METRICS.
ALIASES = {"sembscore": "semb_score", "radgraph_combined": "radgraph", "radcliq": "radcliq_v1"}


def aliases(name: str) -> tuple[str, ...]:
    """The other names a metric is accepted under."""
    return tuple(old for old, new in ALIASES.items() if new == name)


def canonical(name: str) -> str:
    """The metric's one name (an alias mapped to it); anything else comes back as it is."""
    return ALIASES.get(name, name)


# What `all` means: every metric this version computes without a judge (a composite needs its components).
AVAILABLE = tuple(m for m in (*SCORERS, *COMPOSITES, *AGGREGATED) if all(c in SCORERS for c in REGISTRY[m].needs))

__all__ = ["AGGREGATED", "ALIASES", "AVAILABLE", "BOARD_METRICS", "aliases", "COMPOSITES", "JUDGED", "METRICS",
           "RANK_BY", "REGISTRY", "SCORERS", "Composite", "Judged", "Kind", "MetricUnavailable", "Scorer", "Spec",
           "canonical", "inverted", "needs_here", "parse_metrics", "shown", "spec"]


def spec(name: str) -> Spec:
    """The spec of a metric name or alias (KeyError for an unknown name)."""
    return REGISTRY[canonical(name)]


def inverted(name: str) -> bool:
    """Whether a metric's value is shown as 1 / its mean (RadCliQ, FineRadScore): decided by its statistic alone."""
    return spec(name).statistic == "inverse_mean"


def shown(name: str) -> str:
    """A metric's value as the board, ReXrank's tables and the reports name it: its title, 1/ before it when the
    value is 1 / the mean ("1/RadCliQ-v1")."""
    title = spec(name).title
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
    if REGISTRY[name].needs:  # a composite or a label F1: what its parts lack
        parts = [part for part in REGISTRY[name].needs if needs_here(part)]
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
