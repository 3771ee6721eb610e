"""Confidence intervals and paired significance tests over studies (docs/metrics.md §0; the method is ours).

All statistics here are functions of a mean over studies: `mean` itself, or `inverse_mean` (1 / mean, the
leaderboard's 1/RadCliQ-v1). Intervals are percentile bootstraps: resample studies with replacement,
take the mean of the resample, then apply the statistic (so 1/RadCliQ is resampled, then inverted).
A seed makes every result bit-identical; resample indices depend only on (seed, n, resamples), so
every metric of one study table is resampled on the same draws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import numpy as np

STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda m: m,
    "inverse_mean": lambda m: 1.0 / m,
}
RESAMPLES = 1000
TRIALS = 10_000
SEED = 0
_CELLS = 1 << 22  # resample rows x studies held in memory at once


def _values(values: object, what: str = "scores") -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what}: expected a non-empty 1-d sequence of per-study scores")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{what}: {bad.size} non-finite per-study score(s), first at position {bad[0]}")
    return array


def _statistic(name: str) -> Callable[[np.ndarray], np.ndarray]:
    try:
        return STATISTICS[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}: expected one of {', '.join(STATISTICS)}") from None


def _chunks(total: int, n: int) -> Iterator[int]:
    step = max(1, _CELLS // n)
    for start in range(0, total, step):
        yield min(step, total - start)


def resample_means(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of the rows of `values` (n,) or (n, k)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    parts = [values[rng.integers(0, n, size=(size, n))].mean(axis=1) for size in _chunks(resamples, n)]
    return np.concatenate(parts)


@dataclass(frozen=True)
class Estimate:
    """A dataset value with its percentile-bootstrap interval."""

    value: float  # the reported number: the mean, or 1 / mean
    mean: float  # the raw mean over studies, always reported
    low: float
    high: float
    n: int
    statistic: str
    resamples: int
    seed: int
    confidence: float
    non_positive_mean: bool  # for inverse_mean: the inverse is meaningless (explodes or flips sign)

    def to_dict(self) -> dict:
        return asdict(self)


def estimate(
    values: object,
    statistic: str = "mean",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = 0.95,
) -> Estimate:
    scores = _values(values)
    f = _statistic(statistic)
    mean = float(scores.mean())
    boot = resample_means(scores, resamples, seed)
    tail = 100 * (1 - confidence) / 2
    with np.errstate(divide="ignore"):
        low, high = np.percentile(f(boot), [tail, 100 - tail])
        value = float(f(np.float64(mean)))
    non_positive = statistic == "inverse_mean" and (mean <= 0 or bool((boot <= 0).any()))
    return Estimate(value, mean, float(low), float(high), scores.size, statistic, resamples, seed, confidence,
                    non_positive)


@dataclass(frozen=True)
class PairedTest:
    """System A minus system B on the same studies."""

    method: str
    statistic: str
    delta: float  # statistic(A) - statistic(B)
    p_value: float  # two-sided
    iterations: int
    seed: int
    low: float | None = None  # percentile interval of delta (paired bootstrap only)
    high: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _pair(a: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    a, b = _values(a, "system A"), _values(b, "system B")
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same studies: {a.size} scores for A, {b.size} for B")
    return a, b


def paired_bootstrap(
    a: object, b: object, statistic: str = "mean", resamples: int = TRIALS, seed: int = SEED,
    confidence: float = 0.95,
) -> PairedTest:
    """Paired bootstrap: both systems resampled on the same study draws.

    p-value: the bootstrap distribution of delta, shifted to centre on 0, as extreme as the observed delta.
    """
    a, b = _pair(a, b)
    f = _statistic(statistic)
    delta = float(f(a.mean()) - f(b.mean()))
    means = resample_means(np.stack([a, b], axis=1), resamples, seed)
    deltas = f(means[:, 0]) - f(means[:, 1])
    extreme = int(np.count_nonzero(np.abs(deltas - delta) >= abs(delta)))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(deltas, [tail, 100 - tail])
    return PairedTest("paired_bootstrap", statistic, delta, (extreme + 1) / (resamples + 1), resamples, seed,
                      float(low), float(high))


def permutation_test(
    a: object, b: object, statistic: str = "mean", trials: int = TRIALS, seed: int = SEED
) -> PairedTest:
    """Approximate randomisation: swap each study's pair of scores with probability 1/2."""
    a, b = _pair(a, b)
    f = _statistic(statistic)
    n = a.size
    delta = float(f(a.mean()) - f(b.mean()))
    diff, sum_a, sum_b = a - b, a.sum(), b.sum()
    rng = np.random.default_rng(seed)
    extreme = 0
    for size in _chunks(trials, n):
        moved = (rng.random((size, n)) < 0.5) @ diff  # how much swapping moves from A to B
        deltas = f((sum_a - moved) / n) - f((sum_b + moved) / n)
        extreme += int(np.count_nonzero(np.abs(deltas) >= abs(delta) - 1e-12 * max(1.0, abs(delta))))
    return PairedTest("approximate_randomisation", statistic, delta, (extreme + 1) / (trials + 1), trials, seed)
