"""RaTEScore math on hand-made entity embeddings: weights, negation penalty, directions, special cases."""

import numpy as np
import pytest

from rexrank.scorers.ratescore import (
    LONG,
    NEAR_TIE,
    NEGATION_PAIRS,
    SHORT,
    TYPES,
    WEIGHTS,
    direction,
    near_tie,
    ratescore_pair,
)

W = WEIGHTS["0.6.0"]


def test_constants():
    assert len(NEGATION_PAIRS) == 8 and ("ANATOMY", "NON-DISEASE") not in NEGATION_PAIRS
    assert ("NON-DISEASE", "ABNORMALITY") in NEGATION_PAIRS and ("ABNORMALITY", "DISEASE") not in NEGATION_PAIRS
    assert all(len(row) == 5 for row in LONG + SHORT) and W.neg_weight == 0.8716553966489615
    assert WEIGHTS["pre-2025-05"].matrix == LONG and WEIGHTS["pre-2025-05"].neg_weight == 0.3612
    assert W.weight("ABNORMALITY", "DISEASE") == LONG[0][2] != W.weight("DISEASE", "ABNORMALITY")  # not symmetric


def test_identical_reports_score_one():
    emb = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    report = (emb, ["ABNORMALITY", "ANATOMY"])
    assert ratescore_pair(report, report) == pytest.approx(1.0)


def test_a_side_without_entities_scores_one_half():
    report = (np.eye(2), ["DISEASE", "ANATOMY"])
    empty = (np.zeros((0, 2)), [])
    assert ratescore_pair(report, empty) == ratescore_pair(empty, report) == ratescore_pair(empty, empty) == 0.5


def test_direction_by_hand_with_the_negation_penalty():
    # query: an abnormality and an anatomy; keys: a negated abnormality (cos 0.6 with the first) and anatomy
    query = np.array([[1.0, 0.0], [0.0, 1.0]])
    keys = np.array([[0.6, 0.8], [0.0, 1.0]])
    q_types, k_types = ["ABNORMALITY", "ANATOMY"], ["NON-ABNORMALITY", "ANATOMY"]
    w1, w2 = W.weight("ABNORMALITY", "NON-ABNORMALITY"), W.weight("ANATOMY", "ANATOMY")
    expected = (np.float32(0.6) * w1 * W.neg_weight + 1.0 * w2) / (w1 + w2)  # the penalty is not in the denominator
    assert direction(query, q_types, keys, k_types, W) == pytest.approx(expected, rel=1e-7)
    old = WEIGHTS["pre-2025-05"]
    assert direction(query, q_types, keys, k_types, old) < direction(query, q_types, keys, k_types, W)


def test_harmonic_mean_of_both_directions():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(3, 8)), ["DISEASE", "ANATOMY", "NON-DISEASE"])
    b = (rng.normal(size=(2, 8)), ["ABNORMALITY", "ANATOMY"])
    p = direction(b[0], b[1], a[0], a[1], W)  # reference -> candidate
    r = direction(a[0], a[1], b[0], b[1], W)
    assert ratescore_pair(a, b) == pytest.approx(2 * p * r / (p + r))
    assert ratescore_pair(a, b) == pytest.approx(ratescore_pair(b, a))


def test_types_are_known():
    assert TYPES == ("ABNORMALITY", "NON-ABNORMALITY", "DISEASE", "NON-DISEASE", "ANATOMY")
    with pytest.raises(ValueError):
        W.weight("FINDING", "ANATOMY")


def test_near_ties_between_key_types_are_found_either_way():
    effusion, other = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    query = (np.array([effusion]), ["ABNORMALITY"])
    twice = (np.array([effusion, effusion, other]), ["ABNORMALITY", "NON-ABNORMALITY", "ANATOMY"])
    assert near_tie(query, twice) and near_tie(twice, query)  # the same text found twice, once negated
    same_type = (twice[0], ["ABNORMALITY", "ABNORMALITY", "ANATOMY"])
    assert not near_tie(query, same_type)  # either copy gives the same weight
    close = np.array([effusion, [1.0, 0.001, 0.0], other])  # cosine 1 - 5e-7
    apart = np.array([effusion, [1.0, 0.01, 0.0], other])  # cosine 1 - 5e-5
    assert 1 - 1 / np.sqrt(1 + 0.01**2) > NEAR_TIE > 1 - 1 / np.sqrt(1 + 0.001**2)
    assert near_tie(query, (close, twice[1])) and not near_tie(query, (apart, twice[1]))
    assert not near_tie(query, (np.zeros((0, 3)), []))
