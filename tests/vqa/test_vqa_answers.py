"""ReXVQA accuracy's answer rule (rexrank.scorers.rexvqa_accuracy): every form a model writes, and the arithmetic.
Options and answers are synthetic, written for this file."""

import pytest
from fixtures.metric_contract import DIFFERS, MetricContract, VQACase

from rexrank.errors import InputError
from rexrank.hf_metric import compute
from rexrank.scorers import METRICS, REGISTRY, Kind, spec
from rexrank.scorers.rexvqa_accuracy import (
    AMBIGUOUS,
    EMPTY_OUTPUT,
    FAILURES,
    NAME,
    NO_LETTER,
    NOT_AN_OPTION,
    accuracy,
    extract,
    options_of,
)

OPTIONS = ["A. No pleural effusion", "B. Small left pleural effusion", "C. Right pneumothorax", "D. Cardiomegaly"]
LETTERS = options_of(OPTIONS)

READ = [  # (what the model wrote, the letter read)
    ("B", "B"), ("b", "B"), ("B.", "B"), ("(B)", "B"), ("[B]", "B"), ("B)", "B"), ("**B**", "B"), (" B \n", "B"),
    ("Answer: B", "B"), ("The answer is B", "B"), ("The answer is (C).", "C"), ("Final answer - D", "D"),
    ("The correct answer is: C. Right pneumothorax", "C"), ("Option B", "B"), ("choice D", "D"),
    ("B. Small left pleural effusion", "B"), ("(B) small left pleural effusion", "B"), ("B: it is small", "B"),
    ("Small left pleural effusion.", "B"), ("cardiomegaly", "D"),
    ("<think>The angle is blunted.</think><answer>B</answer>", "B"),
    ("I think (C) fits best", "C"), ("B or B", "B"),
]
FAILED = [  # (what the model wrote, why no letter is read)
    (None, EMPTY_OUTPUT), ("", EMPTY_OUTPUT), ("   \n", EMPTY_OUTPUT), ("<answer> </answer>", EMPTY_OUTPUT),
    ("A, C", AMBIGUOUS), ("A and B", AMBIGUOUS), ("B or C", AMBIGUOUS), ("A/B", AMBIGUOUS),
    ("Answer: A. Answer: B.", AMBIGUOUS), ("B. Right pneumothorax", AMBIGUOUS),
    ("A. No pleural effusion\nB. Small left pleural effusion", AMBIGUOUS), ("Both (A) and (C) are possible", AMBIGUOUS),
    ("There is a pleural effusion", NO_LETTER), ("A small effusion is present", NO_LETTER),
    ("effusion", NO_LETTER), ("E", NOT_AN_OPTION), ("The answer is E", NOT_AN_OPTION),
]


@pytest.mark.parametrize(("output", "letter"), READ)
def test_every_answer_form_is_read(output, letter):
    reading = extract(output, LETTERS)
    assert (reading.letter, reading.failure) == (letter, None)


@pytest.mark.parametrize(("output", "failure"), FAILED)
def test_no_letter_two_letters_and_no_option_are_failed_extractions(output, failure):
    assert failure in FAILURES
    reading = extract(output, LETTERS)
    assert (reading.letter, reading.failure) == (None, failure) and not reading.ok


def test_accuracy_against_hand_counts():
    outputs = ["B", "The answer is A", "A or B", None, "Right pneumothorax", "D."]
    answers = ["B", "A", "A", "C", "C", "A"]
    result = accuracy(outputs, answers, [OPTIONS] * 6, names=[f"q{i}" for i in range(6)])
    assert result.correct == [True, True, False, False, True, False]  # the failed ones count, as wrong
    assert result.value == 3 / 6
    assert dict(result.failures) == {AMBIGUOUS: 1, EMPTY_OUTPUT: 1}


def test_a_reference_that_is_no_option_and_a_prediction_that_is_no_text_name_the_question():
    with pytest.raises(InputError, match=r"question q7: the correct answer 'E' is not one of its options"):
        accuracy(["A"], ["E"], [OPTIONS], names=["q7"])
    with pytest.raises(InputError, match=r"question q1: the prediction is int"):
        accuracy([3], ["A"], [OPTIONS], names=["q1"])
    with pytest.raises(InputError, match=r"question q2: option 'B - x' is not `<letter>. <text>`"):
        accuracy(["A"], ["A"], [["A. x", "B - x"]], names=["q2"])
    with pytest.raises(InputError, match="2 outputs but 1 answers"):
        accuracy(["A", "B"], ["A"], [OPTIONS, OPTIONS])


def test_it_is_a_metric_of_the_registry_but_no_report_metric():
    made = spec(NAME)
    assert REGISTRY[NAME] is made and made.kind == Kind.VQA and NAME not in METRICS
    assert made.bounds == (0.0, 1.0) and made.statistic == "mean" and made.section == "§12"
    out = compute(NAME, ["(A)", "Answer: C"], ["A", "B"], options=[OPTIONS, OPTIONS])
    assert out[NAME] == 0.5 and out[f"{NAME}_per_sample"] == [1.0, 0.0] and out["answers"] == ["A", "C"]
    assert out["signature"].startswith("rexvqa_accuracy:1|parser:letters-v1|unreadable:wrong|")
    with pytest.raises(InputError, match="needs options="):
        compute(NAME, ["A"], ["A"])


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


class TestReXVQAAccuracyContract(MetricContract):
    case = VQACase(
        name=NAME, tolerance=0.0, why="exact reading of letters and option texts", bounds=(0.0, 1.0),
        empty_words=REGISTRY[NAME].empty_prediction,
        nfd=DIFFERS, nfd_why="an option's text is matched case-folded, not normalised: an NFD answer is other text",
        skips={"cache": "nothing to cache: it reads letters from text", "variant": "no setting: one rule",
               "oracle": "no scoring code of the authors is public: the rule is written down (docs/metrics.md §12) "
                         "and held to hand counts (test_accuracy_against_hand_counts)"})
