"""Confidence intervals and paired significance tests over studies (docs/metrics.md §0; the method is ours).

Most statistics here are functions of a mean over studies: `mean` itself, or `inverse_mean` (1 / mean, the
leaderboard's 1/RadCliQ-v1). The others (`AGGREGATES`: micro and macro F1) are functions of the column sums
of per-study sufficient statistics, an (n, k) table (a study's true positives, false positives and false
negatives per label). Intervals are percentile bootstraps: resample studies with replacement, take the mean
(or the column sums) of the resample, then apply the statistic (so 1/RadCliQ is resampled, then inverted; an F1
is made from the resampled sums). A seed makes every result bit-identical; resample indices depend only on
(seed, n, resamples), so every metric of one study table is resampled on the same draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import numpy as np

STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda m: m,
    "inverse_mean": lambda m: 1.0 / m,
}


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """2TP / (2TP + FP + FN), 0 where nothing was positive in either (sklearn's zero_division=0)."""
    denominator = 2 * tp + fp + fn
    return np.divide(2 * tp, denominator, out=np.zeros(np.shape(tp), dtype=np.float64), where=denominator > 0)


def micro_f1(sums: np.ndarray) -> np.ndarray:
    """F1 of the counts summed over labels; `sums` (..., 3L): TP of L labels, then their FP, then their FN."""
    tp, fp, fn = np.split(np.asarray(sums, dtype=np.float64), 3, axis=-1)
    return _f1(tp.sum(axis=-1), fp.sum(axis=-1), fn.sum(axis=-1))


def macro_f1(sums: np.ndarray) -> np.ndarray:
    """The mean over labels of each label's F1 (a label never positive counts 0, as sklearn's macro average)."""
    tp, fp, fn = np.split(np.asarray(sums, dtype=np.float64), 3, axis=-1)
    return _f1(tp, fp, fn).mean(axis=-1)


# coco-caption's bleu_scorer adds these so that a zero count still makes a number (pycocoevalcap 1.2).
TINY, SMALL = 1e-15, 1e-9


def corpus_bleu(sums: np.ndarray) -> np.ndarray:
    """Corpus BLEU-N as coco-caption's `BleuScorer.compute_score` makes it (pycocoevalcap 1.2, option "closest", one
    reference per study) from summed counts (..., 2N + 2): the N clipped n-gram matches, the N n-gram counts of the
    hypotheses, the hypotheses' length, the references' length. The product of (match + TINY) / (count + SMALL) over n
    in that order, to the power 1/N, times exp(1 - 1/ratio) where ratio = (length + TINY) / (reference + SMALL) < 1.
    Each step is one IEEE operation in coco-caption's order, the exponential libm's, so the value is theirs to the
    last bit."""
    sums = np.asarray(sums, dtype=np.float64)
    n = (sums.shape[-1] - 2) // 2
    bleu = np.ones(sums.shape[:-1])
    for k in range(n):
        bleu = bleu * ((sums[..., k] + TINY) / (sums[..., n + k] + SMALL))
    bleu = bleu ** (1.0 / n)
    ratio = (sums[..., -2] + TINY) / (sums[..., -1] + SMALL)
    brevity = np.array([math.exp(1 - 1 / r) if r < 1 else 1.0 for r in np.ravel(ratio).tolist()]).reshape(ratio.shape)
    return bleu * brevity


# Statistics of an (n, k) table of per-study sufficient statistics: functions of its column sums (..., k) -> (...).
AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {"micro_f1": micro_f1, "macro_f1": macro_f1,
                                                             "corpus_bleu": corpus_bleu}
KNOWN = (*STATISTICS, *AGGREGATES)  # every statistic a result may name
WORDS = {"mean": "mean over studies", "inverse_mean": "1 / mean over studies",  # what each makes, for `rexrank metrics`
         "micro_f1": "F1 of the studies' summed TP/FP/FN", "macro_f1": "mean over conditions of each one's F1 of the "
         "studies' summed TP/FP/FN", "corpus_bleu": "BLEU of the studies' summed n-gram counts and lengths"}
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


def _table(values: object, what: str = "sufficient statistics") -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or array.size == 0:
        raise ValueError(f"{what}: expected a non-empty (studies, k) table of per-study sufficient statistics")
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise ValueError(f"{what}: {bad.size} study row(s) with a non-finite number, first at position {bad[0]}")
    return array


def _statistic(name: str) -> Callable[[np.ndarray], np.ndarray]:
    try:
        return STATISTICS[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}: expected one of {', '.join(KNOWN)}") from None


def _chunks(total: int, n: int) -> Iterator[int]:
    step = max(1, _CELLS // n)
    for start in range(0, total, step):
        yield min(step, total - start)


def _draws(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The resamples' study indices, a chunk of rows at a time: fixed by (seed, n, resamples) alone."""
    rng = np.random.default_rng(seed)
    for size in _chunks(resamples, n):
        yield rng.integers(0, n, size=(size, n))


def resample_means(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of the rows of `values` (n,) or (n, k)."""
    return np.concatenate([values[rows].mean(axis=1) for rows in _draws(len(values), resamples, seed)])


def resample_sums(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Column sums (resamples, k) of bootstrap resamples of the rows of `values` (n, k), on `resample_means`'s draws;
    gathered a block of resamples at a time, so that k columns take no more memory than one."""
    n, k = values.shape
    block = max(1, _CELLS // (n * k))
    return np.concatenate([values[rows[i:i + block]].sum(axis=1) for rows in _draws(n, resamples, seed)
                           for i in range(0, len(rows), block)])


@dataclass(frozen=True)
class Estimate:
    """A dataset value with its percentile-bootstrap interval."""

    value: float  # the reported number: the mean, or 1 / mean, or an aggregate of the sums
    mean: float  # the raw mean over studies, always reported; an aggregate's value (it has no per-study mean)
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
    """`values`: per-study scores (n,), or for an `AGGREGATES` statistic per-study sufficient statistics (n, k)."""
    if statistic in AGGREGATES:
        return _estimate_sums(_table(values), statistic, resamples, seed, confidence)
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


def _estimate_sums(table: np.ndarray, statistic: str, resamples: int, seed: int, confidence: float) -> Estimate:
    f = AGGREGATES[statistic]
    value = float(f(table.sum(axis=0)))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(f(resample_sums(table, resamples, seed)), [tail, 100 - tail])
    return Estimate(value, value, float(low), float(high), len(table), statistic, resamples, seed, confidence, False)


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

    @property
    def p_text(self) -> str:
        """The p-value to 4 places; at its floor (no resample or randomisation as extreme as the data's: p is then
        1 / (iterations + 1)) what that says, below 1/iterations ("<0.0001" of 10,000), not a rounded 0.0001."""
        if self.p_value * (self.iterations + 1) <= 1 + 1e-9:
            return f"<{1 / self.iterations:.2g}"
        return f"{self.p_value:.4f}"


def _pair(a: object, b: object, statistic: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    read = _table if statistic in AGGREGATES else _values
    a, b = read(a, "system A"), read(b, "system B")
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same studies: {len(a)} scores for A, {len(b)} for B")
    return a, b


def paired_bootstrap(
    a: object, b: object, statistic: str = "mean", resamples: int = TRIALS, seed: int = SEED,
    confidence: float = 0.95,
) -> PairedTest:
    """Paired bootstrap: both systems resampled on the same study draws.

    p-value: the bootstrap distribution of delta, shifted to centre on 0, as extreme as the observed delta.
    """
    a, b = _pair(a, b, statistic)
    if statistic in AGGREGATES:  # A's columns then B's, resampled on the same draws
        f, k = AGGREGATES[statistic], a.shape[1]
        delta = float(f(a.sum(axis=0)) - f(b.sum(axis=0)))
        sums = resample_sums(np.concatenate([a, b], axis=1), resamples, seed)
        deltas = f(sums[:, :k]) - f(sums[:, k:])
    else:
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
    """Approximate randomisation: swap each study's pair of scores (or rows of sufficient statistics) with
    probability 1/2."""
    a, b = _pair(a, b, statistic)
    n = len(a)
    diff, sum_a, sum_b = a - b, a.sum(axis=0), b.sum(axis=0)
    if statistic in AGGREGATES:  # a function of the sums, which swapping moves row by row
        f, scale = AGGREGATES[statistic], 1
        delta = float(f(sum_a) - f(sum_b))
    else:
        f, scale = _statistic(statistic), n
        delta = float(f(a.mean()) - f(b.mean()))
    rng = np.random.default_rng(seed)
    extreme = 0
    for size in _chunks(trials, n):
        moved = (rng.random((size, n)) < 0.5) @ diff  # how much swapping moves from A to B
        deltas = f((sum_a - moved) / scale) - f((sum_b + moved) / scale)
        extreme += int(np.count_nonzero(np.abs(deltas) >= abs(delta) - 1e-12 * max(1.0, abs(delta))))
    return PairedTest("approximate_randomisation", statistic, delta, (extreme + 1) / (trials + 1), trials, seed)
