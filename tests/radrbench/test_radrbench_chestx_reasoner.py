"""`--answer-rule chestx-reasoner`: each branch of the authors' eval/accuracy_eval.py on the cases where the readings
part (docs/reference-notes/radrscore.md lists them), beside rexrank's reading of the same output. Outputs are
synthetic, in the authors' layout (the echoed chat prompt, "<answer> B </answer>" references)."""

import pytest
from fixtures.chestx_reasoner import echoed

from rexrank.errors import InputError
from rexrank.radrbench import chestx_reasoner
from rexrank.radrbench.answers import BINARY, MULTI_NO_OPTION, SINGLE, accuracy, signature

YES_NO = "Does this chest X-ray show pleural effusion? Options:\nA) Yes\nB) No"
SINGLE_Q = "Which finding is in this chest X-ray? Options:\nA) edema\nB) pneumothorax\nC) no finding\nD) fracture"
RULES = ("rexrank", "chestx-reasoner:ours", "chestx-reasoner:qwenvl", "chestx-reasoner:chexagent3b")


def read(output: str, answer: str, question: str = YES_NO, task: str = BINARY) -> dict[str, str]:
    """What each reading makes of one output: right, wrong, or left out (and why)."""
    found = {}
    for rule in RULES:
        result = accuracy([output], [answer], [question], task, rule)
        found[rule] = ("right" if result.correct[0] else "wrong") if result.scored[0] else (
            f"left out: {result.answers[0].failure}")
    return found


@pytest.mark.parametrize(("output", "answer", "expected"), [
    # No answer tag. qwenvl reads the whole output, in which the capital A of "Answer" passes for A (a bug, not a
    # reading); ours finds no tag pair and leaves the item out; chexagent3b's substring test passes both letters.
    ("The effusion is clear. Answer: B) No", "A",
     ("wrong", "left out: no_answer_tag", "right", "right")),
    ("The effusion is clear. Answer: B) No", "B", ("wrong", "left out: no_answer_tag", "right", "right")),
    # The echoed chat prompt: its own "<answer></answer>" precedes the model's; cut at "assistant" it is gone.
    (echoed(YES_NO, "<think>Blunted angle.</think><answer>B</answer>"), "B", ("right", "right", "right", "right")),
    # An answer tag pair across lines: ours' pattern stops at a line break; qwenvl's does not.
    (echoed(YES_NO, "<think>Sharp angles.</think>\n<answer>\nB\n</answer>"), "B",
     ("right", "left out: no_answer_tag", "right", "right")),
    # An option with its text: ours tests the answer inside the reference ("a) yes" in "a": no).
    ("<think>x</think><answer>A) Yes</answer>", "A", ("right", "wrong", "right", "right")),
    # A partial letter inside the reference passes ours ("a" in "a"), case aside.
    ("<think>x</think><answer>a</answer>", "<answer> A </answer>", ("right", "right", "wrong", "wrong")),
    # A blank answer: wrong by rexrank, left out by the authors' branches that extract an answer.
    ("<think>x</think><answer> </answer>", "A",
     ("wrong", "left out: empty_answer", "left out: empty_answer", "wrong")),
    ("", "A", ("wrong", "left out: no_answer_tag", "left out: empty_output", "left out: empty_output")),
])
def test_each_reading_of_a_binary_answer(output, answer, expected):
    assert tuple(read(output, answer).values()) == expected


def test_an_option_named_by_its_text_is_read_by_rexrank_alone():
    """"<answer>Pneumothorax</answer>" names option B by its text: rexrank is right, the authors' substring tests are
    not ("pneumothorax" is not in "b", nor "B" in "Pneumothorax")."""
    output = "<think>A pleural line.</think><answer>Pneumothorax</answer>"
    assert tuple(read(output, "B", SINGLE_Q, SINGLE).values()) == ("right", "wrong", "wrong", "wrong")


def test_accuracy_leaves_the_unread_out_of_the_denominator_and_signs_the_rule():
    outputs = [echoed(YES_NO, "<answer>B</answer>"), echoed(YES_NO, "<answer>A</answer>"), echoed(YES_NO, "No tag.")]
    strict = accuracy(outputs, ["B", "B", "B"], [YES_NO] * 3, BINARY)
    authors = accuracy(outputs, ["B", "B", "B"], [YES_NO] * 3, BINARY, "chestx-reasoner:ours")
    assert (strict.accuracy, strict.scored) == (1 / 3, [True, True, True])
    assert (authors.accuracy, authors.scored) == (1 / 2, [True, True, False])
    assert authors.per_task()[BINARY] | {"failures": None} == {"items": 3, "scored": 2, "correct": 1, "accuracy": 0.5,
                                                               "failures": None}
    assert strict.signature.startswith("radrbench-accuracy:1|parser:answers-v1|unreadable:wrong|")
    assert authors.signature.startswith("radrbench-accuracy:1|parser:chestx-reasoner:ours@9a8a00d|unreadable:left-out|")
    assert str(signature("chestx-reasoner:qwenvl")).split("|")[1] == "parser:chestx-reasoner:qwenvl@9a8a00d"


@pytest.mark.parametrize(("model", "branch"), [
    ("ours_process_final_150", "ours"), ("qwenvl7b", "qwenvl"), ("qwenvl72b", "qwenvl"),
    ("chexagent3b", "chexagent3b")])
def test_a_bare_chestx_reasoner_takes_the_branch_the_authors_script_took_for_the_model(model, branch):
    assert chestx_reasoner.branch("chestx-reasoner", model) == branch
    assert chestx_reasoner.branch(f"chestx-reasoner:{branch}", "anything") == branch


def test_a_model_the_authors_judged_with_gpt4o_needs_a_branch_named():
    with pytest.raises(InputError, match="the authors judged model 'gpt4o''s answers with GPT-4o.*name the branch"):
        chestx_reasoner.branch("chestx-reasoner", "gpt4o")
    with pytest.raises(InputError, match="unknown answer rule 'chestx-reasoner:gpt4o'"):
        chestx_reasoner.branch("chestx-reasoner:gpt4o")


def test_the_free_text_task_has_no_accuracy_by_the_authors_rule():
    with pytest.raises(InputError, match="item 0: a free-text item has no accuracy by the chestx-reasoner:ours rule"):
        accuracy(["<answer>edema</answer>"], ["edema"], ["Which findings?"], MULTI_NO_OPTION, "chestx-reasoner:ours")
