"""Bradley–Terry ratings: a known order recovered from votes drawn from known strengths, the bootstrap intervals
covering the true strengths at their stated rate over seeds, ties and 'both bad' as documented, hand-computed values,
rank ranges, the vote minimum and position bias."""

import math

import numpy as np
import pytest

from rexrank.arena.ranking import CENTRE, SCALE, Battles, battles, fit, position_bias, rate
from rexrank.arena.votes import Vote

TRUE = np.array([-0.6, -0.2, 0.2, 0.6])  # log-odds strengths, mean 0


def drawn(seed: int, n: int = 800, strengths: np.ndarray = TRUE) -> Battles:
    """n decisive votes between random pairs, A winning with the Bradley–Terry probability of the true strengths."""
    rng = np.random.default_rng(seed)
    k = len(strengths)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = 1 / (1 + np.exp(-(strengths[a] - strengths[b])))
    return Battles([f"m{i}" for i in range(k)], a, b, (rng.random(n) < p).astype(float), np.ones(n))


def votes(*rows: tuple[str, str, str]) -> list[Vote]:
    return [Vote("0" * 64, f"s{n}", "d", "findings", a, b, w, "2026-01-01T00:00:00Z") for n, (a, b, w) in
            enumerate(rows)]


def test_a_known_order_is_recovered_from_votes_drawn_from_known_strengths():
    rows = rate(drawn(seed=1, n=3000), min_votes=1, resamples=200)
    assert [r.model for r in rows] == ["m3", "m2", "m1", "m0"]
    truth = CENTRE + SCALE * TRUE
    fitted = {r.model: r.rating for r in rows}
    # 3,000 votes: a rating's standard error is about 12 points; 40 is beyond 3 of them
    assert max(abs(fitted[f"m{i}"] - truth[i]) for i in range(4)) < 40
    assert [(r.best_rank, r.worst_rank) for r in rows] == [(1, 1), (2, 2), (3, 3), (4, 4)]


@pytest.mark.slow
def test_the_intervals_cover_the_true_strengths_at_about_the_stated_rate():
    """200 seeds, each an independent trial of one model's 95% interval (model seed % 4): if the intervals cover at
    95%, the count covered is Binomial(200, 0.95), and falls outside [179, 198] with probability below 0.001 (exact
    tails below: 0.00048 under, 0.00040 over). A percentile bootstrap of 200 resamples is measured, not tuned."""
    seeds = 200
    covered = 0
    truth = CENTRE + SCALE * TRUE
    for seed in range(seeds):
        rows = {r.model: r for r in rate(drawn(seed), min_votes=1, resamples=200, seed=seed)}
        checked = rows[f"m{seed % 4}"]
        covered += checked.low <= truth[seed % 4] <= checked.high

    def below(k: int) -> float:  # P(X <= k), X ~ Binomial(seeds, 0.95)
        return sum(math.comb(seeds, i) * 0.95 ** i * 0.05 ** (seeds - i) for i in range(k + 1))

    assert below(178) < 0.0005 and 1 - below(198) < 0.0005  # the bounds are the claim's
    assert 179 <= covered <= 198, f"{covered} of {seeds} intervals covered the true rating"


def test_a_tie_is_half_a_win_by_hand():
    # A beat B 3 times, lost once, tied twice: B's share of A is (3 + 1) / 6, so A - B = ln 2 in log-odds
    data = battles(votes(*[("A", "B", "a")] * 3, ("A", "B", "b"), ("B", "A", "tie"), ("A", "B", "both_bad")))
    theta = fit(data.a, data.b, data.score, data.weight, 2)
    assert SCALE * (theta[0] - theta[1]) == pytest.approx(400 * math.log10(2), abs=0.5)  # the ridge: < 0.5 point
    dropped = battles(votes(*[("A", "B", "a")] * 3, ("A", "B", "b"), ("B", "A", "tie"), ("A", "B", "both_bad")),
                      both_bad="drop")
    theta = fit(dropped.a, dropped.b, dropped.score, dropped.weight, 2)
    assert SCALE * (theta[0] - theta[1]) == pytest.approx(400 * math.log10(3.5 / 1.5), abs=0.5)


def test_weights_count_as_repeated_votes():
    once = battles(votes(("A", "B", "a"), ("A", "B", "b")), weights=[3.0, 1.0])
    thrice = battles(votes(*[("A", "B", "a")] * 3, ("A", "B", "b")))
    assert fit(once.a, once.b, once.score, once.weight, 2) == pytest.approx(
        fit(thrice.a, thrice.b, thrice.score, thrice.weight, 2), abs=1e-9)


def test_a_model_that_never_lost_has_a_finite_rating():
    data = battles(votes(*[("A", "B", "a")] * 20, *[("B", "C", "a"), ("C", "B", "a")] * 5))
    rows = rate(data, min_votes=1, resamples=50)
    assert all(math.isfinite(r.rating) and math.isfinite(r.low) and math.isfinite(r.high) for r in rows)
    assert rows[0].model == "A"


def test_a_model_below_the_minimum_is_fitted_but_not_ranked():
    data = drawn(seed=3, n=600)
    few = Battles(data.models + ["new"], np.append(data.a, [4, 4]), np.append(data.b, [0, 1]),
                  np.append(data.score, [1.0, 0.0]), np.append(data.weight, [1.0, 1.0]))
    rows = rate(few, min_votes=30, resamples=50)
    unranked = [r for r in rows if not r.ranked]
    assert [r.model for r in unranked] == ["new"] and unranked[0].votes == 2 and unranked[0].best_rank is None
    assert rows[-1].model == "new" and max(r.worst_rank for r in rows if r.ranked) == 4


def test_rank_ranges_span_the_models_whose_intervals_overlap():
    close = drawn(seed=4, n=300, strengths=np.array([0.0, 0.02, 1.5]))  # m0 and m1 indistinguishable
    rows = {r.model: r for r in rate(close, min_votes=1, resamples=200)}
    assert (rows["m2"].best_rank, rows["m2"].worst_rank) == (1, 1)
    assert (rows["m0"].best_rank, rows["m0"].worst_rank) == (2, 3) == (rows["m1"].best_rank, rows["m1"].worst_rank)


def test_position_bias_is_the_share_of_decisive_votes_for_a():
    bias = position_bias(["a"] * 60 + ["b"] * 40 + ["tie"] * 50 + ["both_bad"] * 7, resamples=2000)
    assert bias.share == 0.6 and bias.decisive == 100
    # binomial standard error sqrt(.6 * .4 / 100) = 0.049: the percentile interval is about +-1.96 of them
    assert bias.low == pytest.approx(0.6 - 0.096, abs=0.02) and bias.high == pytest.approx(0.6 + 0.096, abs=0.02)
    assert position_bias(["tie", "both_bad"]) is None
