"""The per-account rules the ranking applies (docs/security.md rule 23): duplicates, a day's cap, new accounts, each
account's bounded weight; a flood from one account, or from many new ones, cannot move the order past what they
allow; voters far below chance are listed."""

import random

import pytest

from rexrank.arena.limits import Limits, anomalous, binomial_below, counted
from rexrank.arena.ranking import battles, rate
from rexrank.arena.votes import Vote, voter_id

KEY = b"a maintainers' key of 32 bytes.."
STRENGTH = {"Good": 0.8, "Fair": 0.0, "Poor": -0.8}


def v(who: str, study: str, a: str, b: str, winner: str, time: str = "2026-01-01T10:00:00Z") -> Vote:
    return Vote(voter_id(who, KEY), study, "iu_xray", "findings", a, b, winner, time)


def honest(readers: int = 20, each: int = 30, seed: int = 0) -> list[Vote]:
    rng = random.Random(seed)
    out = []
    for r in range(readers):
        for n in range(each):
            a, b = rng.sample(sorted(STRENGTH), 2)
            p = 1 / (1 + pow(2.718281828, -(STRENGTH[a] - STRENGTH[b])))
            out.append(v(f"reader{r}", f"s{n}", a, b, "a" if rng.random() < p else "b",
                         f"2026-01-0{1 + n % 3}T10:{n:02d}:00Z"))
    return out


def order(votes, weights=None) -> list[str]:
    return [r.model for r in rate(battles(votes, weights), min_votes=1, resamples=20)]


def test_one_vote_per_account_study_and_pair_whichever_side():
    first = v("x", "s1", "Good", "Poor", "a", "2026-01-01T10:00:00Z")
    again = v("x", "s1", "Poor", "Good", "a", "2026-01-01T10:05:00Z")  # the same pair, sides swapped
    other_study = v("x", "s2", "Good", "Poor", "b", "2026-01-01T10:06:00Z")
    someone = v("y", "s1", "Good", "Poor", "b", "2026-01-01T10:07:00Z")
    out = counted([again, first, other_study, someone], Limits(newcomer=1))  # time order, not file order
    assert out.votes == [first, other_study, someone]
    assert out.dropped == {"a second vote on the same study and pair": 1}


def test_a_days_cap_new_accounts_and_the_weight_bound():
    day = [v("busy", f"s{n}", "Good", "Poor", "a", f"2026-01-01T10:{n // 60:02d}:{n % 60:02d}Z") for n in range(150)]
    late = [v("busy", f"t{n}", "Good", "Poor", "a", "2026-01-02T09:00:00Z") for n in range(5)]
    new = [v("new", f"s{n}", "Good", "Poor", "b") for n in range(3)]
    out = counted(day + late + new, Limits(daily=100, newcomer=10, weight=50))
    assert len(out.votes) == 105 and {x.voter for x in out.votes} == {voter_id("busy", KEY)}
    assert out.dropped == {"past 100 votes in a day": 50, "an account with fewer than 10 votes": 3}
    assert sum(out.weights) == pytest.approx(50)  # 105 votes, weighing 50 together


def test_a_flood_from_one_account_cannot_move_the_order_past_its_weight():
    fair = honest()
    assert order(fair) == ["Good", "Fair", "Poor"]
    flood = [v("flooder", f"f{n}", "Poor", "Good", "a", f"2026-01-{1 + n // 100:02d}T11:{(n % 100) // 60:02d}:"
               f"{n % 60:02d}Z") for n in range(1000)]
    assert order(fair + flood)[0] == "Poor"  # counted as cast, 1,000 votes would put the worst model first
    out = counted(fair + flood)
    assert order(out.votes, out.weights) == ["Good", "Fair", "Poor"]
    weight = sum(w for x, w in zip(out.votes, out.weights) if x.voter == voter_id("flooder", KEY))
    assert weight == pytest.approx(Limits().weight)


def test_many_new_accounts_voting_one_way_count_for_nothing():
    fair = honest()
    crowd = [v(f"sock{n}", f"s{k}", "Poor", "Good", "a") for n in range(500) for k in range(Limits().newcomer - 1)]
    assert order(fair + crowd)[0] == "Poor"
    out = counted(fair + crowd)
    assert out.votes == counted(fair).votes and order(out.votes, out.weights)[0] == "Good"


def test_a_voter_far_below_chance_is_listed_and_honest_ones_are_not():
    fair = honest()
    contrary = [v("contrarian", f"c{n}", a, b, "b" if STRENGTH[a] > STRENGTH[b] else "a")
                for n, (a, b) in enumerate([("Good", "Poor"), ("Fair", "Good"), ("Poor", "Fair")] * 10)]
    flagged = anomalous(counted(fair + contrary))
    assert [a.voter for a in flagged] == [voter_id("contrarian", KEY)]
    assert flagged[0].agreed == 0 and flagged[0].decisive == 30 and flagged[0].p == pytest.approx(2 ** -30)


def test_the_binomial_tail_by_hand():
    assert binomial_below(0, 3) == 1 / 8 and binomial_below(1, 3) == 4 / 8 and binomial_below(3, 3) == 1
