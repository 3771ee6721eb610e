"""The shapes of a metric.

A `Scorer` turns texts into features (inference, cacheable, computed once per distinct text) and
features into per-study scores (pure math). A `Composite` combines other metrics' per-study columns. A
`Judged` metric asks an LLM about each pair; what it returns is a `Judgements`: a score per study, or the
`Problem` that left it unscored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from rexrank.cache import FeatureCache, default_path
from rexrank.errors import MetricUnavailable  # noqa: F401  (re-exported: scorers raise it)
from rexrank.llm.guard import DataUse
from rexrank.signature import Signature

UNBOUNDED = (-math.inf, math.inf)


class Scorer:
    name: ClassVar[str]
    version: ClassVar[str]
    statistic: ClassVar[str] = "mean"  # how the dataset value is made from per-study scores
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED  # every per-study score lies here (what the math guarantees)
    empty_prediction: ClassVar[str] = ""  # what an empty candidate scores, in words (docs/metrics.md)
    summary: ClassVar[str] = ""  # what it measures, in a line (the board's About tab)
    section: ClassVar[str] = ""  # where docs/metrics.md defines it: "§2"
    cacheable: ClassVar[bool] = False  # features worth keeping across runs (model outputs)
    cache: FeatureCache | None = None

    def __init__(self, device: str | None = None, batch_size: int | None = None, progress: bool = True,
                 dtype: str = "fp32"):
        """Model scorers run on `device` (default: CUDA when present, else CPU) in batches of `batch_size` (default:
        from the free GPU memory, or 32 on the CPU), at `dtype` (fp32; bf16 or fp16 under autocast, recorded in the
        signature)."""
        from rexrank.models.runtime import Runtime

        self.runtime = Runtime(device, batch_size, dtype)
        self.progress = progress

    def features(self, texts: Sequence[str]) -> list[Any]:
        raise NotImplementedError

    def score(self, candidates: Sequence[Any], references: Sequence[Any]) -> np.ndarray:
        raise NotImplementedError

    def signature(self) -> Signature:
        raise NotImplementedError

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
    version: ClassVar[str]
    needs: ClassVar[tuple[str, ...]]
    statistic: ClassVar[str] = "mean"
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED
    empty_prediction: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    section: ClassVar[str] = ""

    def combine(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def signature(self, components: Sequence[Signature]) -> Signature:
        return Signature(self.name, self.version, components=tuple(components))


class Problem(StrEnum):
    """Why a judged study has no score: it is left out of the mean and counted, never scored 0."""

    FAILED = "failed"  # the call failed after the judge's retries, or came back without an answer
    UNPARSEABLE = "unparseable"  # an answer the metric's reader cannot read
    CUT = "cut"  # an answer cut at the length limit, which the metric does not score (GREEN: its later errors)


@dataclass(kw_only=True)
class Judgements:
    """What a judged metric computed over a list of pairs: each study's score, or None with its `Problem` and why in
    words; whether a reply was cut at the length limit (scored or not); the signature. Each metric adds its own
    per-study columns."""

    scores: list[float | None]
    problems: list[Problem | None]
    messages: list[str | None]
    truncated_flags: list[bool]
    signature: str

    @property
    def failed(self) -> int:
        return self.problems.count(Problem.FAILED)

    @property
    def unparseable(self) -> int:
        return self.problems.count(Problem.UNPARSEABLE)

    @property
    def truncated(self) -> int:
        return sum(self.truncated_flags)

    @property
    def mean(self) -> float:
        """Mean over the scored studies (NaN when none was)."""
        return mean_scored(self.scores)

    def tally(self) -> dict[str, int]:
        """The counts every judged metric reports."""
        return {"unparseable": self.unparseable, "failed": self.failed, "truncated": self.truncated}


def mean_scored(values: Sequence[float | None]) -> float:
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else math.nan


class Judged:
    """A metric an LLM judges pair by pair: per-study scores (NaN where the reply could not be read or the call
    failed: left out of the mean and counted, never scored 0), per-study detail columns, and counts."""

    name: ClassVar[str]
    version: ClassVar[str]
    statistic: ClassVar[str] = "mean"
    bounds: ClassVar[tuple[float, float]] = UNBOUNDED
    details: ClassVar[dict[str, str]] = {}  # per-study detail columns beside the score: name -> "number" or "text"
    empty_prediction: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    section: ClassVar[str] = ""

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

    def run(self, predictions: Sequence[str], references: Sequence[str], dataset: DataUse | str | None
            ) -> tuple[np.ndarray, dict[str, list], dict[str, Any]]:
        """(scores, detail columns for the per-study table, extras for the result: the counts and the metric's own
        numbers under its name)."""
        result = self.judge(predictions, references, dataset)
        scores = np.array([np.nan if s is None else s for s in result.scores], dtype=np.float64)
        return scores, self.detail(result), {self.name: {**result.tally(), **self.extras(result)}}

    def signature(self) -> Signature:
        raise NotImplementedError
