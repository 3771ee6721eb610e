"""The shapes of a metric.

A `Scorer` turns texts into features (inference, cacheable, computed once per distinct text) and
features into per-study scores (pure math): the scorecard runs it chunk by chunk. Every other metric is made once
the scorers have run, from the `Run` (`made_from(run) -> Made`, one call for each): a `Composite` combines other
metrics' per-study scores, a `LabelF1` counts the labels a scorer's features hold, a `Judged` metric asks an LLM
about each pair (what the judge returns is a `Judgements`: a score per study, or the `Problem` that left it
unscored).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rexrank.cache import FeatureCache, default_path
from rexrank.errors import MetricUnavailable  # noqa: F401  (re-exported: scorers raise it)
from rexrank.signature import Signature

if TYPE_CHECKING:  # the judges' client (httpx) loads when a judge runs, not with the registry
    from rexrank.llm.guard import DataUse

UNBOUNDED = (-math.inf, math.inf)


@dataclass
class Run:
    """What a metric made after the per-text scorers reads: the pairs and their test set, each scorer's per-study
    scores (and those made before it), its small per-pair columns (every chunk's, joined) and signature, and why a
    metric was skipped."""

    predictions: Sequence[str]
    references: Sequence[str]
    dataset: Any = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    joined: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    signatures: dict[str, Signature] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    shared: dict[Any, Any] = field(default_factory=dict)  # what several metrics are made from, made once (`once`)

    def once(self, key: Any, make):
        """`make()`'s value, made the first time `key` is asked for in this run (the four label F1s' bitmasks)."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]

    def lacking(self, needs: Sequence[str], what: str) -> None:
        """MetricUnavailable naming what of `needs` did not run (in `what`: its scores or its features) and why."""
        held = self.scores if what == "scores" else self.joined
        missing = [c for c in needs if c not in held]
        if len(missing) == 1:
            raise MetricUnavailable(f"needs {missing[0]} ({self.skipped.get(missing[0], 'not run')})")
        if missing:
            reasons = "; ".join(f"{c}: {self.skipped.get(c, 'not run')}" for c in missing)
            raise MetricUnavailable(f"needs {', '.join(missing)} ({reasons})")


@dataclass
class Made:
    """A metric made from a run: its per-study columns (its score, or its sufficient statistics, as its spec names
    them), its signature, and what a judge adds (per-study detail columns, corpus-level numbers by metric)."""

    columns: dict[str, np.ndarray]
    signature: Signature
    detail: dict[str, list] = field(default_factory=dict)
    extras: dict[str, dict] = field(default_factory=dict)
CHUNK = 512  # studies scored at once (rexrank.scorecard): at most one chunk's features of one metric are in memory


class Scorer:
    name: ClassVar[str]
    title: ClassVar[str]  # as ReXrank's tables head its column, without the 1/ an inverse_mean statistic adds
    version: ClassVar[str]
    statistic: ClassVar[str] = "mean"  # how the dataset value is made from per-study scores: mean or inverse_mean
    # A study's columns when it gives sufficient statistics, not a score (BLEU-4's counts): name -> "count"; empty:
    # its one score column, named as the metric (rexrank.scorers.spec)
    columns: ClassVar[dict[str, str]] = {}
    # How ReXrank's published figures were made, as this metric signs each setting (None: not published, so not
    # compared); `rexrank.official.departures` compares every signed setting with it.
    published: ClassVar[dict[str, str | None]] = {}
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED  # every per-study score lies here (what the math guarantees)
    empty_prediction: ClassVar[str] = ""  # what an empty candidate scores, in words (docs/metrics.md)
    summary: ClassVar[str] = ""  # what it measures, in a line (the board's About tab)
    # How it tokenises and which implementation's number it is, other tools' names for theirs beside (no "|")
    convention: ClassVar[str] = ""
    section: ClassVar[str] = ""  # where docs/metrics.md defines it: "§2"
    # Its presentation: its place among the board's default columns (1 = first; a new column between two takes a
    # number between theirs; None: a column a visitor adds) and the demo board's value of it at quality 1.
    board: ClassVar[float | None] = None
    demo: ClassVar[float | None] = None
    cacheable: ClassVar[bool] = False  # features worth keeping across runs (model outputs)
    models: ClassVar[tuple[str, ...]] = ()  # the weights it needs (rexrank.models.MODELS keys): `rexrank metrics`
    option_texts: ClassVar[dict[str, str]] = {}  # what each option means, where its name says too little
    cache: FeatureCache | None = None

    def __init__(self, device: str | None = None, batch_size: int | None = None, progress: bool = True,
                 dtype: str = "fp32"):
        """Model scorers run on `device` (default: CUDA when present, else CPU) in batches of `batch_size` (default:
        from the free GPU memory, or 32 on the CPU), at `dtype` (fp32; bf16 or fp16 under autocast, recorded in the
        signature)."""
        self._runtime_options = (device, batch_size, dtype)
        self.progress = progress

    @property
    def runtime(self):
        """The device, precision and batching the models run with: made (importing torch) when a model first needs
        it, so that a scorer without a model (BLEU-2) never loads torch."""
        if "_runtime" not in self.__dict__:
            from rexrank.models.runtime import Runtime

            self._runtime = Runtime(*self._runtime_options)
        return self._runtime

    def features(self, texts: Sequence[str]) -> list[Any]:
        raise NotImplementedError

    def score(self, candidates: Sequence[Any], references: Sequence[Any]) -> np.ndarray:
        raise NotImplementedError

    def signature(self) -> Signature:
        raise NotImplementedError

    def for_dataset(self, dataset: str | None) -> Scorer:
        """This scorer as it scores the texts of `dataset` (a catalog name; None: unknown): itself, unless its text
        preparation follows the dataset, as R2Gen's cleaners do (BLEU-4, ROUGE-L); what it picks, it signs."""
        return self

    def cache_namespace(self) -> str:
        """What the features depend on (weights, settings); by default everything in the signature."""
        return self.signature().point_key

    def extras(self, candidates: Sequence[Any], references: Sequence[Any]) -> dict[str, Any]:
        """Corpus-level numbers a metric also reports (CheXbert's label F1, say); none by default."""
        return self.extras_from(self.extras_columns(candidates, references))

    def extras_columns(self, candidates: Sequence[Any], references: Sequence[Any]) -> dict[str, np.ndarray]:
        """What `extras` needs of each pair, small (a row per pair): kept while the features are freed chunk by
        chunk, joined, then given to `extras_from`."""
        return {}

    def extras_from(self, columns: Mapping[str, np.ndarray]) -> dict[str, Any]:
        return {}

    def __call__(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Per-study scores."""
        return self.score(*self.paired_features(predictions, references))

    def paired_features(self, predictions: Sequence[str], references: Sequence[str]) -> tuple[list, list]:
        """Features of each prediction and reference; each distinct text computed once, and once ever when
        the metric is cacheable (the reference side of a leaderboard is then never recomputed)."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        distinct = list(dict.fromkeys([*predictions, *references]))
        if self.cacheable:
            if self.cache is None:
                self.cache = FeatureCache(default_path())
            computed = self.cache.get_or_compute(self.cache_namespace(), distinct, self.features)
        else:
            computed = self.features(distinct)
        features = dict(zip(distinct, computed, strict=True))
        return [features[t] for t in predictions], [features[t] for t in references]


class Composite:
    name: ClassVar[str]
    title: ClassVar[str]
    version: ClassVar[str]
    published: ClassVar[dict[str, str | None]] = {}
    needs: ClassVar[tuple[str, ...]]
    statistic: ClassVar[str] = "mean"
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED
    empty_prediction: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    section: ClassVar[str] = ""
    # Its presentation: its place among the board's default columns (1 = first; a new column between two takes a
    # number between theirs; None: a column a visitor adds) and the demo board's value of it at quality 1.
    board: ClassVar[float | None] = None
    demo: ClassVar[float | None] = None

    def combine(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def signature(self, components: Sequence[Signature]) -> Signature:
        return Signature(self.name, self.version, components=tuple(components))

    def made_from(self, run: Run) -> Made:
        run.lacking(self.needs, "scores")
        return Made({self.name: self.combine(run.scores)}, self.signature([run.signatures[c] for c in self.needs]))


class Problem(StrEnum):
    """Why a judged study's answer could not be read. On the board such a study counts as the metric's worst value
    (a submitter must not gain by making its worst studies unreadable), and each kind is counted. A failure of the
    judge's server is never a study's problem: it stops the run (`rexrank.llm.JudgeFailed`)."""

    REFUSED = "refused"  # the judge refused the prompt (HTTP 4xx other than 408/409/429): the request's own doing
    UNPARSEABLE = "unparseable"  # an answer the metric's reader cannot read
    CUT = "cut"  # an answer cut at the length limit: what it would have said after the cut is unknown
    # a sentence of the candidate is not radiology (rexrank.llm.radiology): never sent. Named as it was when a phrase
    # list looked for text addressed to the evaluator: stored results count it under this name
    ADDRESSED = "addressed"


@dataclass(kw_only=True)
class Judgements:
    """What a judged metric computed over a list of pairs: each study's score, or None with its `Problem` and why in
    words; the metric's worst value for each study (what an unread study counts as); the signature. Each metric adds
    its own per-study columns."""

    scores: list[float | None]  # None where the answer could not be read
    problems: list[Problem | None]
    messages: list[str | None]
    worst: list[float]  # per study: the metric's worst value
    signature: str

    @property
    def board_scores(self) -> list[float]:
        """Each study's score, its worst value where the answer could not be read: what the board's value is the
        mean of."""
        return [w if s is None else s for s, w in zip(self.scores, self.worst)]

    def count(self, problem: Problem) -> int:
        return self.problems.count(problem)

    @property
    def unparseable(self) -> int:
        return self.count(Problem.UNPARSEABLE)

    @property
    def refused(self) -> int:
        return self.count(Problem.REFUSED)

    @property
    def cut(self) -> int:
        return self.count(Problem.CUT)

    @property
    def judged(self) -> int:
        """Studies whose answer was read."""
        return sum(s is not None for s in self.scores)

    @property
    def mean(self) -> float:
        """The board's mean: every study, an unread one at its worst value (NaN when there is none)."""
        return mean_scored(self.board_scores)

    @property
    def judged_mean(self) -> float:
        """The mean over the studies whose answer was read (NaN when none was), reported beside `mean`."""
        return mean_scored(self.scores)

    def tally(self) -> dict[str, Any]:
        """What every judged metric reports beside its value: the studies read, their mean, each problem's count."""
        judged_mean = self.judged_mean
        return {"judged": self.judged, "judged_mean": None if math.isnan(judged_mean) else judged_mean,
                **{problem.value: self.count(problem) for problem in Problem}}


def mean_scored(values: Sequence[float | None]) -> float:
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else math.nan


# More than this share of a set's studies unreadable says more about the judge (another model, another template)
# than about the predictions: the metric is not reported (`Judged.run`).
MOSTLY_UNREAD = 0.5


class Judged:
    """A metric an LLM judges pair by pair: per-study scores (the metric's worst value where the answer could not be
    read, with the problem in a detail column), per-study detail columns, and counts."""

    name: ClassVar[str]
    title: ClassVar[str]
    version: ClassVar[str]
    published: ClassVar[dict[str, str | None]] = {}
    statistic: ClassVar[str] = "mean"
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED
    details: ClassVar[dict[str, str]] = {}  # per-study detail columns beside the score: name -> "number" or "text"
    # A study's score when the judge finds no clinically significant error: such a verdict is checked against the
    # deterministic metrics of the same study (`rexrank.contradictions`, its `<name>.contradicted` column); None: not
    best: ClassVar[float | None] = None
    local: ClassVar[bool] = False  # it can also run on its own weights here (the `models` extra), not only a judge
    empty_prediction: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    section: ClassVar[str] = ""
    # Its presentation: its place among the board's default columns (1 = first; a new column between two takes a
    # number between theirs; None: a column a visitor adds) and the demo board's value of it at quality 1.
    board: ClassVar[float | None] = None
    demo: ClassVar[float | None] = None

    @classmethod
    def from_options(cls, judge: Mapping[str, Any], device: str | None = None, progress: bool = True) -> Judged:
        """Built from the command line's judge options (`judge_url`, `judge_model`, `concurrency`,
        `allow_endpoints`, and the metric's own); MetricUnavailable when it cannot run here."""
        raise NotImplementedError

    def judge(self, predictions: Sequence[str], references: Sequence[str], dataset: DataUse | str | None
              ) -> Judgements:
        raise NotImplementedError

    def detail(self, result: Judgements) -> dict[str, list]:
        """The per-study columns beside the score (`details` names them)."""
        return {}

    def extras(self, result: Judgements) -> dict[str, Any]:
        """Corpus-level numbers beside the counts."""
        return {}

    @classmethod
    def detail_columns(cls) -> dict[str, str]:
        """Every per-study column beside the score: the metric's own, `<name>.problem` and, where its verdicts are
        cross-checked, `<name>.contradicted`."""
        checked = {f"{cls.name}.contradicted": "number"} if cls.best is not None else {}
        return {**cls.details, f"{cls.name}.problem": "text", **checked}

    def run(self, predictions: Sequence[str], references: Sequence[str], dataset: DataUse | str | None
            ) -> tuple[np.ndarray, dict[str, list], dict[str, Any]]:
        """(scores, detail columns for the per-study table, extras for the result: the counts and the metric's own
        numbers under its name). The scores are the board's: an unread study at the metric's worst value. A set
        mostly unread raises MetricUnavailable: the judge, not the predictions, is the likely cause."""
        result = self.judge(predictions, references, dataset)
        # the judge's doing, not the candidates': a candidate that is not radiology is the submitter's, and
        # must not make the metric unavailable by numbers
        unread = len(result.scores) - result.judged - result.count(Problem.ADDRESSED)
        if unread > MOSTLY_UNREAD * len(result.scores):
            raise MetricUnavailable(f"the judge's answer could not be read for {unread:,} of {len(result.scores):,} "
                                    f"studies ({result.tally()}): check the judge's model and template; nothing was "
                                    "scored")
        scores = np.array(result.board_scores, dtype=np.float64)
        detail = {**self.detail(result), f"{self.name}.problem": [None if p is None else p.value
                                                                   for p in result.problems]}
        return scores, detail, {self.name: {**result.tally(), **self.extras(result)}}

    def signature(self) -> Signature:
        raise NotImplementedError

    def made_from(self, run: Run) -> Made:
        """Its per-study scores from the judge (no features to hold; the judge's reply cache makes a rerun cheap)."""
        values, detail, extras = self.run(run.predictions, run.references, run.dataset)
        return Made({self.name: values}, self.signature(), detail, extras)
