"""Bradley–Terry ratings from the Arena's votes, with bootstrap intervals and rank ranges, as the LMSYS Chatbot Arena
publishes them (FastChat's elo_analysis: a logistic regression on (model A, model B, outcome), a tie counted as half a
win for each side, the battles resampled with replacement 1,000 times, the 2.5 and 97.5 percentiles of each model's
rating). The fit here is our own: Newton's method on the weighted log-likelihood, numpy only.

A rating is on the Elo scale: 1000 + 400 * log10-odds, the models' mean fixed at 1000. "both_bad" counts as a tie
(both reports failed the reader equally: no information on which is better, as FastChat counts "tie (bothbad)");
`both_bad="drop"` leaves those votes out instead. A model is ranked only with at least `min_votes` counted votes;
fewer, it is fitted (its votes inform the others) but listed unranked. A rank range is where the intervals put a
model: its best rank is 1 + the models whose lower bound is above its upper bound, its worst is the count of ranked
models minus those whose upper bound is below its lower bound (LMSYS's "rank (UB)" is the best)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCALE = 400.0 / math.log(10.0)  # log-odds -> Elo points
CENTRE = 1000.0
RESAMPLES = 1000
SEED = 0
MIN_VOTES = 30  # a model is ranked past this many counted votes
# A ridge on the log-strengths, in log-likelihood units: it keeps a model that never lost finite (the plain MLE is
# infinite) and moves any rating with a few votes by far less than a point.
RIDGE = 1e-3
SCORES = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}  # A's share of a vote


@dataclass(frozen=True)
class Battles:
    """Votes as arrays: model indices of side A and B, A's score (1, 0.5, 0) and each vote's weight."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.a)


def battles(votes: Sequence, weights: Sequence[float] | None = None, both_bad: str = "tie") -> Battles:
    """Votes (anything with model_a, model_b, winner) as arrays; `both_bad` "tie" or "drop"."""
    if both_bad not in ("tie", "drop"):
        raise ValueError(f"both_bad must be 'tie' or 'drop', not {both_bad!r}")
    weights = [1.0] * len(votes) if weights is None else list(weights)
    kept = [(v, w) for v, w in zip(votes, weights) if not (both_bad == "drop" and v.winner == "both_bad")]
    models = sorted({m for v, _ in kept for m in (v.model_a, v.model_b)})
    index = {m: i for i, m in enumerate(models)}
    return Battles(models,
                   np.array([index[v.model_a] for v, _ in kept], dtype=np.int64),
                   np.array([index[v.model_b] for v, _ in kept], dtype=np.int64),
                   np.array([SCORES[v.winner] for v, _ in kept], dtype=float),
                   np.array([w for _, w in kept], dtype=float))


def fit(a: np.ndarray, b: np.ndarray, score: np.ndarray, weight: np.ndarray, n_models: int) -> np.ndarray:
    """Log-strengths (mean 0) maximising sum w * [s log p + (1 - s) log (1 - p)], p = sigmoid(theta_a - theta_b),
    minus RIDGE/2 * |theta|^2: Newton's method on the pair totals, halving a step that does not improve."""
    # per ordered pair: the weight of its votes and A's weighted score; the likelihood needs nothing else
    pair = a * n_models + b
    total = np.bincount(pair, weight, n_models * n_models).reshape(n_models, n_models)
    won = np.bincount(pair, weight * score, n_models * n_models).reshape(n_models, n_models)
    i, j = np.nonzero(total)
    n, s = total[i, j], won[i, j]
    theta = np.zeros(n_models)

    def objective(t: np.ndarray) -> float:
        d = t[i] - t[j]
        return float(np.sum(s * d - n * np.logaddexp(0.0, d)) - RIDGE / 2 * t @ t)

    current = objective(theta)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
        residual = s - n * p
        gradient = np.bincount(i, residual, n_models) - np.bincount(j, residual, n_models) - RIDGE * theta
        h = n * p * (1 - p)
        hessian = np.zeros((n_models, n_models))
        np.add.at(hessian, (i, j), h)
        np.add.at(hessian, (j, i), h)
        hessian[np.diag_indices(n_models)] -= hessian.sum(axis=1)
        hessian -= RIDGE * np.eye(n_models)
        step = np.linalg.solve(hessian, -gradient)
        for _ in range(30):
            trial = theta + step
            if (value := objective(trial)) >= current - 1e-12:
                break
            step /= 2
        theta, done = trial, abs(value - current) < 1e-10 * max(1.0, abs(current))
        current = value
        if done and np.max(np.abs(step)) < 1e-8:
            break
    return theta - theta.mean()


def elo(theta: np.ndarray) -> np.ndarray:
    return CENTRE + SCALE * theta


def bootstrap(data: Battles, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Ratings (resamples, models) of votes resampled with replacement (each vote keeps its weight)."""
    rng = np.random.default_rng(seed)
    k, n = len(data.models), len(data)
    out = np.empty((resamples, k))
    for r in range(resamples):
        drawn = np.bincount(rng.integers(0, n, n), minlength=n)  # how often each vote was drawn
        out[r] = elo(fit(data.a, data.b, data.score, data.weight * drawn, k))
    return out


@dataclass(frozen=True)
class Rating:
    model: str
    rating: float
    low: float
    high: float
    votes: int  # votes it took part in (counted, after the rules)
    weight: float  # their total weight
    wins: float  # weighted: a tie is half
    ranked: bool
    best_rank: int | None = None
    worst_rank: int | None = None


def rate(data: Battles, min_votes: int = MIN_VOTES, resamples: int = RESAMPLES, seed: int = SEED,
         confidence: float = 0.95) -> list[Rating]:
    """Every model's rating and interval, ranked ones first (best rating first), then the unranked."""
    k = len(data.models)
    if k == 0:
        return []
    point = elo(fit(data.a, data.b, data.score, data.weight, k))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(bootstrap(data, resamples, seed), [tail, 100 - tail], axis=0)
    votes = np.bincount(data.a, minlength=k) + np.bincount(data.b, minlength=k)
    weight = np.bincount(data.a, data.weight, k) + np.bincount(data.b, data.weight, k)
    wins = np.bincount(data.a, data.weight * data.score, k) + np.bincount(data.b, data.weight * (1 - data.score), k)
    ranked = votes >= min_votes
    rows = []
    for m in range(k):
        best = worst = None
        if ranked[m]:
            others = ranked & (np.arange(k) != m)
            best = 1 + int(np.sum(others & (low > high[m])))
            worst = int(ranked.sum()) - int(np.sum(others & (high < low[m])))
        rows.append(Rating(data.models[m], float(point[m]), float(low[m]), float(high[m]), int(votes[m]),
                           float(weight[m]), float(wins[m]), bool(ranked[m]), best, worst))
    return sorted(rows, key=lambda r: (not r.ranked, -r.rating, r.model))


@dataclass(frozen=True)
class PositionBias:
    """Of the decisive votes (A or B won), the share for the side shown first (A), with its interval."""

    share: float
    low: float
    high: float
    decisive: int


def position_bias(winners: Sequence[str], resamples: int = RESAMPLES, seed: int = SEED,
                  confidence: float = 0.95) -> PositionBias | None:
    """None without a decisive vote. Sides are drawn at random, so an unbiased reader's share is 0.5."""
    from rexrank.stats import estimate

    decisive = np.array([w == "a" for w in winners if w in ("a", "b")], dtype=float)
    if decisive.size == 0:
        return None
    e = estimate(decisive, "mean", resamples, seed, confidence)
    return PositionBias(e.value, e.low, e.high, int(decisive.size))
