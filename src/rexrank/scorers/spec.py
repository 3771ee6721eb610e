"""One shape for every metric: its spec (docs/architecture.md, "One metric shape").

A spec says what a study contributes (its per-study columns: one score, or k sufficient statistics), how the dataset
value is made from them (`statistic`: a function of their mean or of their column sums, `rexrank.stats`), what the
metric is (title, version, range, what an empty prediction scores, what it measures, where docs/metrics.md defines
it), the options that change its number (each with the value the published figures were made with as its default),
and the record of how those figures were made (`published`, as signed), kept apart from the options. The CLI, the
evaluate modules, the cards, the board, the bootstrap, the paired tests, the shard merge and the rules read specs; the
implementation (a `Scorer`, a `Composite`, a `LabelF1`, a `Judged` or a module) only computes.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from rexrank.scorers import published as record


class Kind(StrEnum):
    """The kinds of implementation, by what computes a study's columns."""

    SCORER = "scorer"  # texts -> features (a model or rules) -> per-study columns
    COMPOSITE = "composite"  # other metrics' per-study scores combined
    AGGREGATED = "aggregated"  # per-study sufficient statistics made from another scorer's features
    JUDGED = "judged"  # an LLM judge per pair
    REASONING = "reasoning"  # RadRBench-CXR's: scored on reasoning steps, not on report pairs (not a board column)
    VQA = "vqa"  # ReXVQA's: an option letter read from a model's answer per question (the VQA track: no report pair)


# The kinds whose metrics score no report pair: never a report board column, a card block or a `rexrank score` metric.
NOT_REPORTS = frozenset({Kind.REASONING, Kind.VQA})


RUNTIME = frozenset({"device", "batch_size", "progress", "dtype"})  # how it runs, never what it computes


@dataclass(frozen=True)
class Spec:
    name: str
    title: str  # as ReXrank's tables head its column, without the 1/ an inverse_mean statistic adds
    version: str
    kind: Kind
    statistic: str  # rexrank.stats.STATISTICS (of the mean) or AGGREGATES (of the column sums)
    columns: Mapping[str, str]  # its per-study columns in a per-study table -> "score", "count" or "mask"
    bounds: tuple[float, float] = (-math.inf, math.inf)  # a study's score (a score column), or the value's
    empty_prediction: str = ""
    summary: str = ""
    convention: str = ""  # its tokenisation and implementation, other tools' names beside (`rexrank metrics`, cards)
    section: str = ""  # where docs/metrics.md defines it
    needs: tuple[str, ...] = ()  # the metrics whose columns or features it is made from
    options: Mapping[str, Any] = field(default_factory=dict)  # what changes the number -> its published value
    published: Mapping[str, str | None] = field(default_factory=dict)  # how ReXrank's figures were made, signed
    models: tuple[str, ...] = ()  # the weights it needs (rexrank.models keys)
    details: Mapping[str, str] = field(default_factory=dict)  # per-study columns beside its numbers (a judge's)
    citation: str = ""  # BibTeX of what it reproduces (a spec-made evaluate module cites it)
    codebase: tuple[str, ...] = ()  # the reference code it reproduces
    implementation: Any = None
    reader: Callable[[Mapping[str, Any]], np.ndarray] | None = None  # columns -> (n, k) table, when not as stored
    check: Callable[[Mapping[str, Any]], list[str]] | None = None  # what no run can write in its count columns
    # its presentation: its place among the board's default columns (None: a column a visitor adds), its title above
    # (ReXrank's tables' column name where they publish it), the demo board's value of it at quality 1
    board: float | None = None
    demo: float | None = None
    ranks: bool = False  # the board ranks by it (one metric does: RANK_BY)
    option_texts: Mapping[str, str] = field(default_factory=dict)  # what an option means, where its name says little

    # What it is, asked by what it does: the callers' questions, answered here by its kind alone.
    @property
    def per_text(self) -> bool:
        """Whether its per-study columns come from each text's features (a `Scorer`: run chunk by chunk, features
        cached); every other report metric is made from the run after (`made_from`)."""
        return self.kind == Kind.SCORER

    @property
    def judged(self) -> bool:
        """Whether an LLM judge answers it (its judge's options are its options too)."""
        return self.kind in (Kind.JUDGED, Kind.REASONING)

    @property
    def report(self) -> bool:
        """Whether it scores report pairs: a `rexrank score` metric, a board column, a card's block."""
        return self.kind not in NOT_REPORTS

    @property
    def reasoning(self) -> bool:
        """Whether it scores reasoning steps (RadRBench-CXR's): a reference is a list of steps, not a report."""
        return self.kind == Kind.REASONING

    @property
    def combined(self) -> bool:
        """Whether its per-study score is other metrics' combined (RadCliQ)."""
        return self.kind == Kind.COMPOSITE

    @property
    def own_module(self) -> bool:
        """Whether its module computes its whole answer (`compute`): a judged metric, RadRScore, ReXVQA accuracy."""
        return self.kind in (Kind.JUDGED, Kind.REASONING, Kind.VQA)

    def build(self, settings: Mapping[str, Any] | None = None, *, device: str | None = None,
              batch_size: int | None = None, progress: bool = True, dtype: str = "fp32",
              judge: Mapping[str, Any] | None = None):
        """What computes it in a run, built once: a per-text scorer with its settings and how it runs, a judged metric
        with its judge's options and its own (MetricUnavailable when it cannot run here), else the implementation."""
        settings = dict(settings or {})
        if self.kind == Kind.SCORER:
            return self.implementation(**settings, device=device, batch_size=batch_size, progress=progress,
                                       dtype=dtype)
        if self.kind == Kind.JUDGED:
            return self.implementation.from_options({**(judge or {}), **settings}, device=device, progress=progress)
        return self.implementation

    @property
    def sufficient(self) -> bool:
        """Whether its value is a function of column sums (an F1, corpus BLEU) rather than of a mean of scores."""
        return list(self.columns.values()) != ["score"]

    def table(self, columns: Mapping[str, Any]) -> np.ndarray:
        """Its numbers from a per-study table (a DataFrame or column mapping): (n,) scores for a mean, (n, k) sufficient
        statistics for an aggregate of sums."""
        if self.reader is not None:
            return self.reader(columns)
        if not self.sufficient:
            return np.asarray(columns[self.name], dtype=np.float64)
        return np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in self.columns])

    def read_option(self, key: str, text: str) -> Any:
        """An option's value from its text (the command line's `--option METRIC.KEY=VALUE`), typed as its default
        ("none" for None where the default is not text); the constructor checks the value itself."""
        if key not in self.options:
            raise ValueError(f"{self.name} has no option {key!r} (its options: {', '.join(self.options) or 'none'})")
        default = self.options[key]
        if isinstance(default, str):
            return text
        if text.lower() == "none":
            return None
        if isinstance(default, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(f"{self.name}.{key} is true or false, not {text!r}")
            return text.lower() == "true"
        for kind in (int, float):
            if isinstance(default, kind):
                try:
                    return kind(text)
                except ValueError:
                    raise ValueError(f"{self.name}.{key} is a number like {default!r}, not {text!r}") from None
        return text

    def departures(self, signature) -> list[str]:
        """How a number's making departs from the published figures', in the metric's words where its implementation
        declares them (`departures`), else by the rule of `rexrank.scorers.published`."""
        own = getattr(self.implementation, "departures", None)
        return own(signature) if callable(own) else record.departures(signature, self.published)

    def carried_by(self, names) -> bool:
        """Whether a table with these columns holds this metric's numbers."""
        return set(self.columns) <= set(names)


def options_of(implementation: Any) -> dict[str, Any]:
    """The keyword defaults of a scorer's constructor, but how it runs: every one changes the number it computes."""
    parameters = inspect.signature(implementation.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not p.empty and p.name not in RUNTIME}


def spec_of(implementation: Any, kind: Kind) -> Spec:
    """The spec an implementation declares (its class attributes)."""
    name = implementation.name
    columns = dict(getattr(implementation, "columns", None) or {name: "score"})
    return Spec(
        name=name, title=implementation.title, version=implementation.version, kind=kind,
        statistic=implementation.statistic, columns=columns, bounds=tuple(implementation.bounds),
        empty_prediction=implementation.empty_prediction, summary=implementation.summary,
        convention=getattr(implementation, "convention", ""),
        section=implementation.section, needs=tuple(getattr(implementation, "needs", ())),
        options=options_of(implementation) if kind == Kind.SCORER else dict(getattr(implementation, "options", {})),
        published=dict(implementation.published), models=tuple(getattr(implementation, "models", ())),
        details=dict(implementation.detail_columns()) if kind == Kind.JUDGED else {},
        citation=getattr(implementation, "citation", ""), codebase=tuple(getattr(implementation, "codebase", ())),
        implementation=implementation,
        reader=implementation.table if kind == Kind.AGGREGATED else None, check=getattr(implementation, "check", None),
        board=getattr(implementation, "board", None), demo=getattr(implementation, "demo", None),
        ranks=getattr(implementation, "ranks", False), option_texts=dict(getattr(implementation, "option_texts", {})))
