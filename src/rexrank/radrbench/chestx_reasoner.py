"""`--answer-rule chestx-reasoner`: answers read as ChestX-Reasoner's authors read them, to compare with their figures.

Reference: MAGIC-AI4Med/ChestX-Reasoner at 9a8a00d, `eval/accuracy_eval.py`, the option tasks' loop. The script
reads each model's outputs by a rule of its own, chosen by the model's folder name (`BRANCHES`, in the script's
order); what it does, re-written here from reading it:

- `chexagent3b`: correct when the reference answer occurs anywhere in the whole output (`"A" in output`: any
  capital A, "Answer" included, passes for A).
- `ours` (ChestX-Reasoner): the output after its last "assistant" (the decoded chat prompt is echoed before it); the
  first `<answer>...</answer>` on one line (the pattern's `.` stops at a line break), stripped and its whitespace
  squeezed; correct when that text, lower-cased, occurs in the lower-cased reference (a blank text never reaches the
  test: see below).
- `qwenvl` (Qwen2-VL-7B and -72B): with both tags, the first pair's text across lines, squeezed; with only `<answer>`,
  what follows its last occurrence; with neither, the whole output ("Answer: B) No" then holds the capital A of
  "Answer"). Correct when the reference occurs in it. The script as shipped does not cut the echoed prompt in this
  branch (its free-text branch does); the prompt's own "<answer></answer>" then leaves every Qwen2-VL-7B item out,
  while the authors' published figures are what the cut gives, so the cut is made here too.
- Any other model: a GPT-4o judge (`get_accuracy`), not replayed here: name a branch.

In every branch an item whose answer text (or output, for `chexagent3b`) is empty is left out of the denominator.
Tags are matched as written (lower case). The reference answer is the text of a one-line tag pair where it has tags
(the authors' files store `<answer> B </answer>`) and as it is otherwise (the published test files store `B`; the
`ours` branch would read nothing in it and leave every item out, so this is the one departure).

Accuracy of the free-text task is not defined there (it is RaTEScore); docs/reference-notes/radrscore.md compares
the readings case by case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rexrank.errors import InputError

RULE = "chestx-reasoner"
REFERENCE = "9a8a00d"  # the commit whose eval/accuracy_eval.py this reads as
OURS, QWENVL, CHEXAGENT = "ours", "qwenvl", "chexagent3b"
BRANCHES = (CHEXAGENT, OURS, QWENVL)
NAMES = (RULE, *(f"{RULE}:{b}" for b in BRANCHES))  # what --answer-rule takes for this reading

# Why an item is left out of the denominator (the `failures` of a result read by this rule).
NO_ANSWER_TAG, EMPTY_ANSWER, EMPTY_OUTPUT = "no_answer_tag", "empty_answer", "empty_output"

_ONE_LINE = re.compile(r"<answer>(.*?)</answer>")
_ACROSS_LINES = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_CUT = "assistant"


def branch(rule: str, model: str | None = None) -> str:
    """The branch `rule` names ("chestx-reasoner:qwenvl"), or for a bare "chestx-reasoner" the one the script takes
    for a model of that folder name: `chexagent3b`, a name holding "ours", a name holding "qwenvl"."""
    if rule not in NAMES:
        raise InputError(f"unknown answer rule {rule!r}: use rexrank or one of {', '.join(NAMES)}")
    if rule != RULE:
        return rule.split(":", 1)[1]
    name = model or ""
    found = CHEXAGENT if name == CHEXAGENT else OURS if OURS in name else QWENVL if QWENVL in name else None
    if found is None:
        raise InputError(f"the authors judged model {name!r}'s answers with GPT-4o, which rexrank does not replay: "
                         f"name the branch to read them by ({', '.join(NAMES[1:])})")
    return found


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def reference(answer: str) -> str:
    """The reference answer: a one-line tag pair's text, squeezed; an answer without tags as it is."""
    if "<answer>" not in answer:
        return answer
    found = _ONE_LINE.search(answer)
    return _squeeze(found.group(1).strip()) if found else ""


@dataclass(frozen=True)
class Reading:
    correct: bool
    scored: bool  # False: left out of the denominator
    text: str | None  # what was compared with the reference
    failure: str | None  # why it was left out


def read(output: str | None, answer: str, which: str) -> Reading:
    """One item by the branch `which`: whether it is correct, and whether it counts at all."""
    output = output or ""
    if which == CHEXAGENT:
        if not output or not answer:
            return Reading(False, False, None, EMPTY_OUTPUT)
        return Reading(answer in output, True, output, None)
    gold = reference(answer)
    tail = output.split(_CUT)[-1]
    if which == OURS:
        found = _ONE_LINE.search(tail)
        text = _squeeze(found.group(1).strip()) if found else ""
        if not text or not gold:
            return Reading(False, False, None, NO_ANSWER_TAG if found is None else EMPTY_ANSWER)
        return Reading(text.lower() in gold.lower(), True, text, None)
    if which != QWENVL:
        raise InputError(f"unknown branch {which!r} of the chestx-reasoner answer rule: use one of {BRANCHES}")
    if "<answer>" in tail and "</answer>" in tail:
        found = _ACROSS_LINES.search(tail)
        text = _squeeze(found.group(1).strip()) if found else ""
    elif "<answer>" in tail:
        text = tail.split("<answer>")[-1].strip()
    else:
        text = tail
    if not text or not gold:
        return Reading(False, False, None, EMPTY_OUTPUT if not output else EMPTY_ANSWER)
    return Reading(gold in text, True, text, None)
