"""RadRBench-CXR answers: one parser for every model, golden per task type and per failure. The questions follow the
benchmark's templates ("... Options:\\nA) Yes\\nB) No"); the outputs imitate what real models write (ChestX-Reasoner's
"<answer> B </answer>", Qwen2.5-VL's "<answer>\\nB) No\\n</answer>", prose answers). All text is synthetic."""

import math

import pytest
from fixtures.metric_contract import DIFFERS, AccuracyCase, MetricContract

from rexrank.errors import InputError
from rexrank.radrbench.answers import (
    AMBIGUOUS,
    BINARY,
    EMPTY_ANSWER,
    EMPTY_OUTPUT,
    MULTI,
    MULTI_NO_OPTION,
    NO_ANSWER_TAG,
    NOT_AN_OPTION,
    SINGLE,
    TEMPORAL,
    UNCLOSED_ANSWER_TAG,
    accuracy,
    answer_text,
    options_of,
    parse_answer,
    parse_reference,
    task_of,
)

BINARY_Q = "Does this chest X-ray show pleural effusion? Options:\nA) Yes\nB) No"
SINGLE_Q = "Which finding is in this chest X-ray? Options:\nA) edema\nB) pneumothorax\nC) no finding\nD) fracture"
MULTI_Q = ("Which findings are in this chest X-ray? Options:\nA) atelectasis, lung opacity\nB) edema, pneumonia\n"
           "C) cardiomegaly, edema, pleural effusion\nD) support devices")
TEMPORAL_Q = ("You are given two images: one reference image and one new image. Please identify the progression of "
              "edema. Options:\nA) stable\nB) worsening\nC) improving")
FREE_Q = "Which findings are in this chest X-ray?"


def tagged(answer: str) -> str:
    return f"<think>Synthetic reasoning about the image.</think><answer>{answer}</answer>"


@pytest.mark.parametrize(("name", "task"), [
    ("mimic_binary_test_option", BINARY), ("siim_binary_test_option", BINARY), ("rsna_binary_test_option", BINARY),
    ("chexpert_single_test_option", SINGLE), ("mimic_multi_test_option", MULTI),
    ("mimic_multi_test_no_option", MULTI_NO_OPTION), ("chexpert_multi_no_option", MULTI_NO_OPTION),
    ("temporal_cls_test_option", TEMPORAL)])
def test_task_of_reads_radrbench_file_names(name, task):
    assert task_of(name) == task


def test_task_of_refuses_an_unknown_name():
    with pytest.raises(InputError, match="cannot tell the task"):
        task_of("report_generation")


def test_options_of_reads_lettered_lines():
    assert options_of(BINARY_Q) == {"A": "Yes", "B": "No"}
    assert options_of(MULTI_Q)["C"] == "cardiomegaly, edema, pleural effusion"
    assert options_of("Q? Options:\n(A) stable\n(B) worsening") == {"A": "stable", "B": "worsening"}
    assert options_of(FREE_Q) == {} and options_of(None) == {}
    with pytest.raises(InputError, match="option A appears twice"):
        options_of("Q? Options:\nA) Yes\nA) No")


@pytest.mark.parametrize(("output", "expected"), [
    ("<think>x</think><answer> B </answer>", " B "),
    ("<think>I will write <answer>A</answer> at the end.</think><answer>B</answer>", "B"),  # the last one
    ("<answer>\nB) No\n</answer>\n</think>", "\nB) No\n"),
    ("<ANSWER>A</Answer>", "A"),  # tags in any case
    ("<answer>A</answer> trailing words", "A"),
])
def test_answer_text_takes_the_last_answer(output, expected):
    assert answer_text(output) == (expected, None)


@pytest.mark.parametrize(("output", "failure"), [
    (None, EMPTY_OUTPUT), ("", EMPTY_OUTPUT), ("  \n", EMPTY_OUTPUT),
    ("B) No", NO_ANSWER_TAG), ("<think>long reasoning</think>", NO_ANSWER_TAG), ("B</answer>", NO_ANSWER_TAG),
    ("<think>x</think><answer>\nThe findings include", UNCLOSED_ANSWER_TAG),  # cut at the length limit
    ("<answer>A</answer> then <answer>B", UNCLOSED_ANSWER_TAG),  # the last answer is cut: the earlier one is not used
    ("<answer></answer>", EMPTY_ANSWER), ("<answer> \n </answer>", EMPTY_ANSWER),
])
def test_answer_text_failures(output, failure):
    assert answer_text(output) == (None, failure)
    assert parse_answer(output, BINARY, options_of(BINARY_Q)).failure == failure


@pytest.mark.parametrize(("answer", "expected"), [
    (" A ", "A"), ("B", "B"), ("b", "B"), ("(B)", "B"), ("B)", "B"), ("B.", "B"), ("**B**", "B"),
    ("B) No", "B"), ("(B) No", "B"), ("\nB) No\n", "B"), ("A) Yes, the chest X-ray shows an effusion.", "A"),
    ("Option B", "B"), ("option a: yes", "A"),
    ("No", "B"), ("yes.", "A"), ("YES", "A"), ("NO", "B"), ("'No'", "B"),
    ("Yes, there is a small effusion.", "A"), ("No, the chest X-ray does not show pleural effusion.", "B"),
    ("No acute findings", "B"),
])
def test_binary_answers(answer, expected):
    parsed = parse_answer(tagged(answer), BINARY, options_of(BINARY_Q))
    assert parsed.failure is None and parsed.value == {expected}


@pytest.mark.parametrize(("answer", "failure"), [
    ("B) Yes", AMBIGUOUS),  # the letter and its text disagree
    ("A, B", AMBIGUOUS), ("AB", AMBIGUOUS),  # two options where there is one answer
    ("C", NOT_AN_OPTION), ("Not present", NOT_AN_OPTION), ("The answer is B", NOT_AN_OPTION),
    ("Probably", NOT_AN_OPTION),
])
def test_binary_failures(answer, failure):
    parsed = parse_answer(tagged(answer), BINARY, options_of(BINARY_Q))
    assert parsed.value is None and parsed.failure == failure


def test_binary_without_options_reads_yes_and_no():
    assert parse_answer(tagged("Yes, there is."), BINARY).value == {"yes"}
    assert parse_answer(tagged("no"), BINARY).value == {"no"}
    assert parse_answer(tagged("B"), BINARY).failure == NOT_AN_OPTION  # no letters without options


@pytest.mark.parametrize(("answer", "expected"), [
    ("A", {"A"}), ("(c)", {"C"}), ("D) fracture", {"D"}), ("pneumothorax", {"B"}), ("No finding.", {"C"}),
    ("Option D", {"D"}),
])
def test_single_choice_answers(answer, expected):
    assert parse_answer(tagged(answer), SINGLE, options_of(SINGLE_Q)).value == expected


@pytest.mark.parametrize(("answer", "failure"), [
    ("A, C", AMBIGUOUS), ("E", NOT_AN_OPTION), ("pleural effusion", NOT_AN_OPTION), ("B) edema", AMBIGUOUS),
    ("edema or pneumothorax", NOT_AN_OPTION),
])
def test_single_choice_failures(answer, failure):
    assert parse_answer(tagged(answer), SINGLE, options_of(SINGLE_Q)).failure == failure


@pytest.mark.parametrize(("answer", "expected"), [
    ("A", {"A"}), ("C) cardiomegaly, edema, pleural effusion", {"C"}),
    ("pleural effusion, cardiomegaly and edema", {"C"}),  # an option's text, in any order
    ("Option D – support devices are seen", {"D"}),
    ("A, C", {"A", "C"}), ("CA", {"A", "C"}), ("C, A", {"A", "C"}), ("A and C", {"A", "C"}), ("A C", {"A", "C"}),
    ("a, c", {"A", "C"}),
])
def test_multi_choice_answers(answer, expected):
    assert parse_answer(tagged(answer), MULTI, options_of(MULTI_Q)).value == expected


def test_multi_choice_letters_in_any_order_are_one_answer():
    options = options_of(MULTI_Q)
    assert parse_answer(tagged("A, C"), MULTI, options).value == parse_answer(tagged("CA"), MULTI, options).value


@pytest.mark.parametrize(("answer", "failure"), [
    ("A, E", NOT_AN_OPTION), ("edema", NOT_AN_OPTION), ("Option A – edema, pneumonia", AMBIGUOUS),
])
def test_multi_choice_failures(answer, failure):
    assert parse_answer(tagged(answer), MULTI, options_of(MULTI_Q)).failure == failure


@pytest.mark.parametrize(("answer", "expected"), [
    ("B", {"B"}), ("C) improving", {"C"}), ("B) Worsening", {"B"}), ("Worsening.", {"B"}), ("stable", {"A"}),
    ("Improving, the opacity is smaller.", {"C"}),
])
def test_temporal_answers(answer, expected):
    assert parse_answer(tagged(answer), TEMPORAL, options_of(TEMPORAL_Q)).value == expected


@pytest.mark.parametrize(("answer", "failure"), [
    ("unchanged", NOT_AN_OPTION), ("worse", NOT_AN_OPTION), ("resolving", NOT_AN_OPTION),  # no synonyms
    ("A) worsening", AMBIGUOUS), ("A or B", NOT_AN_OPTION),
])
def test_temporal_failures(answer, failure):
    assert parse_answer(tagged(answer), TEMPORAL, options_of(TEMPORAL_Q)).failure == failure


def test_temporal_without_options_reads_the_three_words():
    assert parse_answer(tagged("Stable"), TEMPORAL).value == {"stable"}
    assert parse_answer(tagged("unchanged"), TEMPORAL).failure == NOT_AN_OPTION


@pytest.mark.parametrize(("answer", "expected"), [
    ("edema, pleural effusion, support devices", {"edema", "pleural effusion", "support devices"}),
    ("Support Devices, Edema and pleural effusion.", {"edema", "pleural effusion", "support devices"}),
    ("cardiomegaly; edema", {"cardiomegaly", "edema"}),
    ("No finding", {"no finding"}),
])
def test_free_text_findings_are_sets(answer, expected):
    assert parse_answer(tagged(answer), MULTI_NO_OPTION, options_of(FREE_Q)).value == expected


def test_free_text_empty_list_is_an_empty_answer():
    assert parse_answer(tagged(" , ; "), MULTI_NO_OPTION).failure == EMPTY_ANSWER


@pytest.mark.parametrize(("reference", "task", "question", "expected"), [
    ("B", BINARY, BINARY_Q, {"B"}), ("<answer> B </answer>", BINARY, BINARY_Q, {"B"}),
    ("Yes", BINARY, BINARY_Q, {"A"}), ("No", BINARY, "Does it show edema?", {"no"}),
    ("C", TEMPORAL, TEMPORAL_Q, {"C"}), ("worsening", TEMPORAL, TEMPORAL_Q, {"B"}),
    ("cardiomegaly, edema", MULTI_NO_OPTION, FREE_Q, {"cardiomegaly", "edema"}),
])
def test_reference_answers_in_the_benchmark_formats(reference, task, question, expected):
    assert parse_reference(reference, task, options_of(question)) == expected


def test_an_unreadable_reference_is_an_input_error_naming_the_item():
    with pytest.raises(InputError, match=r"item 7: the reference answer 'E' cannot be read as a single answer"):
        parse_reference("E", SINGLE, options_of(SINGLE_Q), item=7)
    with pytest.raises(InputError, match="unknown RadRBench task 'open'"):
        parse_reference("A", "open")


def test_accuracy_counts_failures_as_wrong_and_per_task():
    outputs = [tagged("B"), "(B) No", tagged("A) Yes"), tagged("A, C"), tagged("C"), "<answer>worsening",
               tagged("edema, cardiomegaly"), tagged("unchanged")]
    answers = ["B", "B", "B", "<answer> C </answer>", "C", "B", "cardiomegaly, edema", "A"]
    questions = [BINARY_Q, BINARY_Q, BINARY_Q, MULTI_Q, MULTI_Q, TEMPORAL_Q, FREE_Q, TEMPORAL_Q]
    tasks = [BINARY, BINARY, BINARY, MULTI, MULTI, TEMPORAL, MULTI_NO_OPTION, TEMPORAL]
    result = accuracy(outputs, answers, questions, tasks)
    assert result.correct == [True, False, False, False, True, False, True, False]
    assert result.accuracy == 3 / 8
    assert dict(result.failures) == {NO_ANSWER_TAG: 1, UNCLOSED_ANSWER_TAG: 1, NOT_AN_OPTION: 1}
    table = result.per_task()
    assert table[BINARY] == {"items": 3, "scored": 3, "correct": 1, "failures": {NO_ANSWER_TAG: 1}, "accuracy": 1 / 3}
    assert table[MULTI]["accuracy"] == 0.5 and table[MULTI]["failures"] == {}  # "A, C" is read, and wrong
    assert table[TEMPORAL] == {"items": 2, "scored": 2, "correct": 0, "accuracy": 0.0,
                               "failures": {UNCLOSED_ANSWER_TAG: 1, NOT_AN_OPTION: 1}}
    assert result.signature.startswith("radrbench-accuracy:1|parser:answers-v1|unreadable:wrong|")


def test_accuracy_takes_one_task_for_all_and_checks_lengths():
    assert accuracy([tagged("A")], ["A"], [BINARY_Q], "binary").correct == [True]
    assert math.isnan(accuracy([], [], [], BINARY).accuracy)
    with pytest.raises(InputError, match="2 outputs but 1 answers"):
        accuracy([tagged("A"), tagged("B")], ["A"], [BINARY_Q, BINARY_Q], BINARY)
    with pytest.raises(InputError, match="item 0: the output is int"):
        accuracy([3], ["A"], [BINARY_Q], BINARY)


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


class TestAccuracyContract(MetricContract):
    case = AccuracyCase(
        name="radrbench-accuracy", tolerance=0.0, why="exact parsing and set comparison", bounds=(0.0, 1.0),
        empty_words="(none declared: accuracy has no class; its docstring: an empty output is `empty_output`, wrong)",
        nfd=DIFFERS, nfd_why="answers are compared case-folded, not normalised: an NFD finding is another finding",
        skips={"cache": "nothing to cache: it parses text", "variant": "no setting: one parser",
               "chunk": "not a `rexrank score` metric: radrbench scores every item in one call (score_outputs "
                        "checked)",
               "oracle": "the authors' eval/accuracy_eval.py is a script over their own files: each of its branches "
                         "is held in tests/radrbench/test_radrbench_chestx_reasoner.py, and its figures on their "
                         "shipped outputs in tests/radrbench/test_radrbench_outputs.py"})
