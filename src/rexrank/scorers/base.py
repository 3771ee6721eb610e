"""The two shapes of a metric.

A `Scorer` turns texts into features (inference, cacheable, computed once per distinct text) and
features into per-study scores (pure math). A `Composite` combines other metrics' per-study columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from rexrank.signature import Signature


class MetricUnavailable(RuntimeError):
    """A metric cannot run here (weights missing, component not computable); the message says how to fix it."""


class Scorer:
    name: ClassVar[str]
    version: ClassVar[str]
    statistic: ClassVar[str] = "mean"  # how the dataset value is made from per-study scores
    empty_prediction: ClassVar[str] = ""  # what an empty candidate scores, in words (METRICS.md)

    def features(self, texts: Sequence[str]) -> list[Any]:
        raise NotImplementedError

    def score(self, candidates: Sequence[Any], references: Sequence[Any]) -> np.ndarray:
        raise NotImplementedError

    def signature(self) -> Signature:
        raise NotImplementedError

    def __call__(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Per-study scores; each distinct text goes through `features` once."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        distinct = list(dict.fromkeys([*predictions, *references]))
        features = dict(zip(distinct, self.features(distinct), strict=True))
        return self.score([features[t] for t in predictions], [features[t] for t in references])


class Composite:
    name: ClassVar[str]
    version: ClassVar[str]
    needs: ClassVar[tuple[str, ...]]
    statistic: ClassVar[str] = "mean"
    empty_prediction: ClassVar[str] = ""

    def combine(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def signature(self, components: Sequence[Signature]) -> Signature:
        return Signature(self.name, self.version, components=tuple(components))
