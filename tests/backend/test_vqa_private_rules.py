"""The private VQA set's degenerate-set rules (rexrank.backend.vqa), the report sets' rules where they make sense:
unread answers, one letter for most questions, a near copy of a set scored before (by digests keyed by the private
answers), and the aggregates as published."""

import math

import pandas as pd
import pytest

from rexrank.backend import vqa
from rexrank.backend.private import CHANGED_SHARE
from rexrank.results import BOARD_DECIMALS

N = 100
QUESTIONS = pd.DataFrame({"question_id": [f"q{i}" for i in range(N)],
                          "correct_answer": ["ABCD"[i % 4] for i in range(N)]})
KEY = vqa.salt(QUESTIONS)


def answers(letters) -> pd.DataFrame:
    return pd.DataFrame({"question_id": QUESTIONS["question_id"], "answer": list(letters)})


HONEST = ["ABCD"[(i * 7) % 4] for i in range(N)]


def test_an_honest_spread_of_answers_is_scored():
    assert vqa.degenerate(answers(HONEST), [], KEY) is None


def test_too_many_unread_answers_are_refused():
    limit = int(vqa.UNREAD_SHARE * N)
    assert vqa.degenerate(answers([None] * limit + HONEST[limit:]), [], KEY) is None
    said = vqa.degenerate(answers([None] * (limit + 1) + HONEST[limit + 1:]), [], KEY)
    assert said == f"{limit + 1} of {N} answers give no option (at most {vqa.UNREAD_SHARE:.0%} may)"


def test_one_letter_for_most_questions_is_refused():
    most = int(vqa.ONE_LETTER_SHARE * N)
    assert vqa.degenerate(answers(["A"] * most + ["B", "C"] * ((N - most) // 2)), [], KEY) is None
    said = vqa.degenerate(answers(["A"] * (most + 1) + ["B"] * (N - most - 1)), [], KEY)
    assert said.startswith(f"{most + 1} of {N} answers are the same letter")


def test_a_near_copy_of_a_set_scored_before_is_refused_by_its_keyed_digests():
    before = {"pr": 3, "at": "2026-01-01T00:00:00Z", "digests": vqa.digests(answers(HONEST), KEY)}
    needed = math.ceil(CHANGED_SHARE * N)
    moved = ["ABCD"[("ABCD".index(a) + 1) % 4] for a in HONEST]
    near = moved[:needed - 1] + HONEST[needed - 1:]
    assert "differs from the set scored for pull request #3" in vqa.degenerate(answers(near), [before], KEY)
    assert vqa.degenerate(answers(moved[:needed] + HONEST[needed:]), [before], KEY) is None
    # the digest of a letter is keyed by the private answers: without them, the four letters cannot be tried
    other = vqa.salt(QUESTIONS.assign(correct_answer=list(reversed(QUESTIONS["correct_answer"]))))
    assert vqa.digests(answers(HONEST), other) != before["digests"]
    assert set(before["digests"].values()).isdisjoint(set("ABCD"))


def test_the_aggregates_are_published_rounded_without_the_count_of_correct_answers():
    rows = [{"category": "overall", "questions": 41007, "correct": 33701, "accuracy": 33701 / 41007, "low": 0.8181,
             "high": 0.8254, "failed_extractions": 3, "failures": {"none": 3}}]
    [row] = vqa.published(rows)
    assert "correct" not in row and row["accuracy"] == round(33701 / 41007, BOARD_DECIMALS)
    assert (row["low"], row["high"], row["questions"], row["failed_extractions"]) == (0.818, 0.825, 41007, 3)
    assert vqa.published([{**rows[0], "accuracy": 33702 / 41007}]) == [row]  # one answer more does not show


@pytest.mark.parametrize("name", ["UNREAD_SHARE", "ONE_LETTER_SHARE"])
def test_the_thresholds_are_written_down_in_the_module(name):
    assert name in vqa.__doc__
