"""The pair chooser and the vote gate the Space's tab calls: fewest votes first, close ratings within a band, never
the same study and pair twice for a reader, sides at random; one vote per (study, pair), an hour's and a day's cap."""

import random

from rexrank.arena.limits import DAILY
from rexrank.arena.pairs import BAND, PER_HOUR, next_matchup, refusal
from rexrank.arena.votes import Vote

STUDIES = {m: [f"s{n}" for n in range(4)] for m in ("M1", "M2", "M3")}


def v(voter: str, study: str, a: str, b: str, time: str = "2026-01-01T10:00:00Z") -> Vote:
    return Vote(voter, study, "d", "findings", a, b, "a", time)


def test_the_pair_with_fewest_votes_comes_first():
    votes = [v("x", f"s{n % 4}", "M1", "M2") for n in range(BAND)] + [v("x", "s0", "M1", "M3")] * BAND
    match = next_matchup("me", votes, STUDIES, "d", "findings", rng=random.Random(0))
    assert {match.model_a, match.model_b} == {"M2", "M3"}


def test_within_a_band_the_closest_ratings_come_first():
    ratings = {"M1": 1100.0, "M2": 1000.0, "M3": 990.0}
    pairs = {frozenset((m.model_a, m.model_b)) for seed in range(20)
             if (m := next_matchup("me", [], STUDIES, "d", "findings", ratings, random.Random(seed)))}
    assert pairs == {frozenset(("M2", "M3"))}


def test_a_reader_never_sees_a_study_and_pair_twice_and_sides_are_drawn():
    votes, sides = [], set()
    rng = random.Random(1)
    while (m := next_matchup("me", votes, STUDIES, "d", "findings", rng=rng)) is not None:
        sides.add((m.model_a, m.model_b))
        votes.append(m.vote("me", "tie", "2026-01-01T10:00:00Z"))
    assert len(votes) == 3 * 4 == len({(x.study_id, x.pair) for x in votes})  # every study of every pair, once
    assert len(sides) == 6  # each pair shown both ways round
    assert next_matchup("other", votes, STUDIES, "d", "findings") is not None


def test_the_least_voted_study_of_a_pair_comes_first():
    votes = [v("x", s, "M1", "M2") for s in ("s0", "s1", "s2")]
    only = {m: ["s0", "s1", "s2", "s3"] for m in ("M1", "M2")}
    assert next_matchup("me", votes, only, "d", "findings").study_id == "s3"


def test_the_vote_gate():
    mine = [v("me", "s0", "M1", "M2", "2026-01-01T10:00:00Z")]
    assert refusal("me", mine, "2026-01-01T10:01:00Z", ("d", "findings", "s0"), ("M2", "M1")).startswith(
        "you have already voted")
    assert refusal("me", mine, "2026-01-01T10:01:00Z", ("d", "findings", "s1"), ("M2", "M1")) is None
    hour = [v("me", f"h{n}", "M1", "M2", f"2026-01-01T10:{n % 60:02d}:00Z") for n in range(PER_HOUR)]
    assert "an hour" in refusal("me", hour, "2026-01-01T10:59:30Z")
    assert refusal("me", hour, "2026-01-01T11:00:30Z") is None  # the first left the hour
    assert refusal("other", hour, "2026-01-01T10:59:30Z") is None
    day = [v("me", f"d{n}", "M1", "M2", f"2026-01-01T{n // 5:02d}:{n % 5:02d}:00Z") for n in range(DAILY)]
    assert "a day" in refusal("me", day, "2026-01-01T23:30:00Z")
    assert refusal("me", day, "2026-01-02T00:00:01Z") is None
