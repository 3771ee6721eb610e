"""Which two reports a reader sees next, and whether a vote may be cast: pure functions over the votes so far, so
the Space's Arena tab only draws what they return.

Informative pairs: the pair of models with the fewest votes first (counted in bands of `BAND`, so that within a band
the pair whose ratings are closest comes first: a vote between near equals says the most about the order), then a
study of theirs this reader has not voted on for that pair, the least voted first; ties drawn at random, and the
sides too (which model is A). An account may vote once per (study, pair), at most `PER_HOUR` votes in an hour and
`limits.DAILY` in a UTC day; the ranking's rules (`rexrank.arena.limits`) hold again on the file.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations

from rexrank.arena.limits import DAILY
from rexrank.arena.votes import TIME, Vote

BAND = 10
PER_HOUR = 60


@dataclass(frozen=True)
class Matchup:
    dataset: str
    task: str
    study_id: str
    model_a: str  # shown as A
    model_b: str

    def vote(self, voter: str, winner: str, time: str) -> Vote:
        return Vote(voter, self.study_id, self.dataset, self.task, self.model_a, self.model_b, winner, time)


def refusal(voter: str, votes: Sequence[Vote], at: str, study: tuple[str, str, str] | None = None,
            pair: tuple[str, str] | None = None) -> str | None:
    """Why `voter` may not vote at time `at` (UTC, votes.TIME), on `study` (dataset, task, study_id) and `pair` when
    given; None when the vote may be cast."""
    mine = [v for v in votes if v.voter == voter]
    if study is not None and pair is not None:
        key = (*study, tuple(sorted(pair)))
        if any((v.dataset, v.task, v.study_id, v.pair) == key for v in mine):
            return "you have already voted on this study and pair"
    when = datetime.strptime(at, TIME)
    hour = (when - timedelta(hours=1)).strftime(TIME)
    if sum(hour < v.time <= at for v in mine) >= PER_HOUR:
        return f"at most {PER_HOUR} votes an hour: come back later"
    if sum(v.day == at[:10] for v in mine) >= DAILY:
        return f"at most {DAILY} votes a day: come back tomorrow"
    return None


def next_matchup(voter: str, votes: Sequence[Vote], studies: Mapping[str, Sequence[str]], dataset: str, task: str,
                 ratings: Mapping[str, float] | None = None, rng: random.Random | None = None) -> Matchup | None:
    """The next pair for `voter` on `dataset`/`task`: `studies` maps each model with stored predictions to the study
    ids it has; `ratings` (model -> rating, missing ones taken as equal) orders pairs within a band. None when this
    voter has voted on every study of every pair."""
    rng = rng or random.Random()
    ratings = ratings or {}
    here = [v for v in votes if (v.dataset, v.task) == (dataset, task)]
    per_pair = Counter(v.pair for v in here)
    per_study = Counter((v.pair, v.study_id) for v in here)
    done = {(v.pair, v.study_id) for v in here if v.voter == voter}
    models = sorted(studies)
    order = []
    for pair in combinations(models, 2):
        gap = abs(ratings.get(pair[0], 0.0) - ratings.get(pair[1], 0.0))
        order.append((per_pair[pair] // BAND, gap, rng.random(), pair))
    for *_, pair in sorted(order):
        shared = sorted(set(studies[pair[0]]) & set(studies[pair[1]]) - {s for p, s in done if p == pair})
        if not shared:
            continue
        fewest = min(per_study[pair, s] for s in shared)
        study = rng.choice([s for s in shared if per_study[pair, s] == fewest])
        a, b = pair if rng.random() < 0.5 else pair[::-1]
        return Matchup(dataset, task, study, a, b)
    return None
