"""What the ranking counts of a voter's votes (docs/security.md, rule 23), and the voters it lists for the
maintainers. The Space refuses a second vote on the same study and pair and limits an account's rate
(`rexrank.arena.pairs`); these rules hold again on whatever the votes file holds, so the numbers never rest on the
Space alone:

1. one vote per account per (dataset, task, study, pair of models): the first, whichever side each model was on;
2. at most `daily` votes per account per UTC day: the first of the day;
3. an account counts only once it has `newcomer` votes left by rules 1-2 (many fresh accounts voting a few times
   each count for nothing);
4. an account's votes weigh min(1, `weight` / its votes): however many it casts, together they weigh at most
   `weight` votes.

So one account moves the ratings at most as `weight` votes do; k accounts, as k * `weight` votes.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rexrank.arena.ranking import battles, fit
from rexrank.arena.votes import Vote

DAILY = 100
NEWCOMER = 10
WEIGHT = 50.0
ANOMALY_MIN = 20  # decisive votes a voter needs before being judged
ANOMALY_P = 1e-3  # one-sided binomial p below which agreement is "far below chance"


@dataclass(frozen=True)
class Limits:
    daily: int = DAILY
    newcomer: int = NEWCOMER
    weight: float = WEIGHT


@dataclass
class Counted:
    """The votes the ranking counts, each with its weight, and how many each rule left out."""

    votes: list[Vote]
    weights: list[float]
    dropped: Counter = field(default_factory=Counter)

    @property
    def accounts(self) -> int:
        return len({v.voter for v in self.votes})


def counted(votes: Sequence[Vote], limits: Limits = Limits()) -> Counted:
    """Rules 1-4, in that order, each account's votes taken in time order (file order among equal times)."""
    order = sorted(range(len(votes)), key=lambda k: (votes[k].time, k))
    seen: set[tuple] = set()
    per_day: Counter = Counter()
    dropped: Counter = Counter()
    by_voter: dict[str, list[Vote]] = defaultdict(list)
    for k in order:
        v = votes[k]
        key = (v.voter, v.dataset, v.task, v.study_id, v.pair)
        if key in seen:
            dropped["a second vote on the same study and pair"] += 1
            continue
        seen.add(key)
        if per_day[v.voter, v.day] >= limits.daily:
            dropped[f"past {limits.daily} votes in a day"] += 1
            continue
        per_day[v.voter, v.day] += 1
        by_voter[v.voter].append(v)
    out = Counted([], [], dropped)
    for cast in by_voter.values():
        if len(cast) < limits.newcomer:
            dropped[f"an account with fewer than {limits.newcomer} votes"] += len(cast)
            continue
        w = min(1.0, limits.weight / len(cast))
        out.votes.extend(cast)
        out.weights.extend([w] * len(cast))
    return out


@dataclass(frozen=True)
class Anomaly:
    voter: str
    decisive: int  # decisive votes on pairs the others' ratings order
    agreed: int  # of which the voter chose the model the others rate higher
    p: float  # P(agreed or fewer | a coin)

    @property
    def share(self) -> float:
        return self.agreed / self.decisive


def binomial_below(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def anomalous(data: Counted, minimum: int = ANOMALY_MIN, alpha: float = ANOMALY_P) -> list[Anomaly]:
    """Voters whose choices disagree with everyone else's ratings far more often than a coin would: each voter with
    `minimum` decisive votes is held against a fit of the others' votes (theirs left out), and listed when the
    binomial tail of their agreement is below `alpha`; the lowest p first. A reader of different taste agrees less
    than the crowd, but not below a coin; a voter pushing the worse report does."""
    voters = Counter(v.voter for v in data.votes if v.winner in ("a", "b"))
    out = []
    for voter, decisive in voters.items():
        if decisive < minimum:
            continue
        others = [(v, w) for v, w in zip(data.votes, data.weights) if v.voter != voter]
        if not others:
            continue
        fitted = battles([v for v, _ in others], [w for _, w in others])
        theta = dict(zip(fitted.models, fit(fitted.a, fitted.b, fitted.score, fitted.weight, len(fitted.models))))
        judged = agreed = 0
        for v in data.votes:
            if v.voter != voter or v.chosen is None or v.model_a not in theta or v.model_b not in theta:
                continue
            gap = theta[v.model_a] - theta[v.model_b]
            if np.isclose(gap, 0.0):
                continue
            judged += 1
            agreed += (gap > 0) == (v.winner == "a")
        if judged >= minimum and (p := binomial_below(agreed, judged)) < alpha:
            out.append(Anomaly(voter, judged, agreed, p))
    return sorted(out, key=lambda a: (a.p, a.voter))
