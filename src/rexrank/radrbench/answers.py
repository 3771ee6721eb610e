"""RadRBench-CXR accuracy: one deterministic answer parser for every model (ours; docs/metrics.md §9).

The reference (MAGIC-AI4Med/ChestX-Reasoner `eval/accuracy_eval.py` and `eval/reasoning_eval.py` at 9a8a00d) reads
answers with a different rule per model: a substring test for some, a GPT-4o judge for others, RaTEScore for the
free-text task, and items it cannot read left out of the denominator for some models only. We read every model's
output with the rule below, and every item counts: one that cannot be read is wrong, and its reason is counted.

1. The answer is the text inside the last `<answer>` (tags matched without regard to case) and the first
   `</answer>` after it. Failures: an output that is None or blank is `empty_output`; one without `<answer>` is
   `no_answer_tag`; one whose last `<answer>` is never closed (a cut or malformed output) is `unclosed_answer_tag`,
   even when an earlier pair is complete; a blank answer is `empty_answer`. `<think>` is not needed.
2. The answer is cleaned: markdown `*` and backticks dropped, whitespace collapsed, quotes and `.,;:!?` stripped
   from both ends.
3. With options (`A) text` lines in the question), the answer must name options, read in this order:
   - letters only: `A`, `(A)`, `a`, `A, C`, `A and C`, `A C`, or `AC` (upper case, each an option);
   - one letter followed by its text or a comment: `A) Yes`, `(B) No`, `C. improving`, `D: ...`, `B - ...`,
     `Option B`, `option D – ...`; when what follows is exactly another option's text (or, for one-word
     options, begins with another option's word), the answer contradicts itself: `ambiguous`;
   - an option's text: `No`, `Worsening`, `edema, cardiomegaly` (finding lists compared as sets, split at
     commas, semicolons and "and");
   - binary and temporal only (one-word options): the answer's first word is an option's text: `Yes, there is
     an effusion.`, `Stable.`
   Anything else is `not_an_option` (a letter that is not an option, `The answer is B`, synonyms such as
   "unchanged" for "stable": the options were in the question, so a synonym is not a choice). Several options
   where the task has one answer (binary, single, temporal) are `ambiguous`.
4. Without options, binary answers are read against the choices Yes/No and temporal ones against
   stable/worsening/improving, by the text rules above; `multi_no_option` answers are the set of findings (split at
   commas, semicolons and "and", case-folded), correct when equal to the reference set.

The reference answer is read by the same rules (it may carry the tags, as some released files do); one that
cannot be read is an input error naming the item.

This is the answer rule `rexrank` (the board's). `accuracy(..., rule="chestx-reasoner:<branch>")` reads answers as
the authors' script did instead (`rexrank.radrbench.chestx_reasoner`), for comparing with their numbers; the rule is
in the signature (`parser`), and an item it cannot read is left out of the denominator, as theirs were.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rexrank.errors import InputError
from rexrank.radrbench import chestx_reasoner
from rexrank.signature import Signature

VERSION = "1"
PARSER_VERSION = "answers-v1"
REXRANK = "rexrank"  # the board's answer rule: this module's parser
ANSWER_RULES = (REXRANK, *chestx_reasoner.NAMES)

BINARY, SINGLE, MULTI, MULTI_NO_OPTION, TEMPORAL = "binary", "single", "multi", "multi_no_option", "temporal"
TASKS = (BINARY, SINGLE, MULTI, MULTI_NO_OPTION, TEMPORAL)
ONE_ANSWER = frozenset({BINARY, SINGLE, TEMPORAL})  # tasks whose reference is one option
ONE_WORD = frozenset({BINARY, TEMPORAL})  # tasks whose options are single words: the first word may answer

EMPTY_OUTPUT, NO_ANSWER_TAG, UNCLOSED_ANSWER_TAG = "empty_output", "no_answer_tag", "unclosed_answer_tag"
EMPTY_ANSWER, AMBIGUOUS, NOT_AN_OPTION = "empty_answer", "ambiguous", "not_an_option"
FAILURES = (EMPTY_OUTPUT, NO_ANSWER_TAG, UNCLOSED_ANSWER_TAG, EMPTY_ANSWER, AMBIGUOUS, NOT_AN_OPTION)

# The choices a question without options still has (RadRBench's binary options are "Yes"/"No" and its temporal
# ones "stable"/"worsening"/"improving").
IMPLICIT_CHOICES = {BINARY: ("Yes", "No"), TEMPORAL: ("stable", "worsening", "improving")}

_OPEN, _CLOSE = "<answer>", "</answer>"
_OPTION_LINE = re.compile(r"^[ \t]*\(?([A-Z])\)[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)  # "A) text" / "(A) text"
_LETTER_LIST = re.compile(r"\(?[A-Za-z]\)?(?:(?:\s*(?:[,;&/]|\band\b)\s*|\s+)\(?[A-Za-z]\)?)*")  # "A, (C)"
_LETTER = re.compile(r"[A-Za-z]")
_LEADING_LETTER = (re.compile(r"option\s+\(?([A-Za-z])\)?(?![A-Za-z])[\s.):\-–—]*(.*)", re.IGNORECASE | re.DOTALL),
                   re.compile(r"\(([A-Za-z])\)\s*(.*)", re.DOTALL),
                   re.compile(r"([A-Z])\s*[.):\-–—]\s*(.*)", re.DOTALL))
_ITEM_SPLIT = re.compile(r"\s*(?:[,;]|\band\b)\s*", re.IGNORECASE)
_EDGE = " \t\n\"'.,;:!?"


def task_of(name: str) -> str:
    """The task of a RadRBench file or config name ("mimic_multi_test_no_option" -> "multi_no_option")."""
    key = name.lower()
    for word, task in (("temporal", TEMPORAL), ("binary", BINARY), ("single", SINGLE)):
        if word in key:
            return task
    if "multi" in key:
        return MULTI_NO_OPTION if "no_option" in key else MULTI
    raise InputError(f"cannot tell the task of {name!r}: expected one of binary, single, multi, multi ... "
                     "no_option, temporal in the name")


def options_of(question: str | None) -> dict[str, str]:
    """The options `A) text` (or `(A) text`) written one per line in a question, by letter; {} when none."""
    options: dict[str, str] = {}
    for letter, text in _OPTION_LINE.findall(question or ""):
        if letter in options:
            raise InputError(f"option {letter} appears twice in the question {question!r:.120}")
        options[letter] = text
    return options


def answer_text(output: str | None) -> tuple[str | None, str | None]:
    """(the text of the last <answer>...</answer>, None) or (None, failure)."""
    if output is None or not output.strip():
        return None, EMPTY_OUTPUT
    lowered = output.lower()
    start = lowered.rfind(_OPEN)
    if start < 0:
        return None, NO_ANSWER_TAG
    end = lowered.find(_CLOSE, start + len(_OPEN))
    if end < 0:
        return None, UNCLOSED_ANSWER_TAG
    text = output[start + len(_OPEN):end]
    return (text, None) if text.strip() else (None, EMPTY_ANSWER)


def clean(text: str) -> str:
    return " ".join(text.replace("*", "").replace("`", "").split()).strip(_EDGE)


def _norm(text: str) -> str:
    return clean(text).casefold()


def findings(text: str) -> frozenset[str]:
    """A finding list as a set: split at commas, semicolons and "and", each item cleaned and case-folded."""
    return frozenset(item for part in _ITEM_SPLIT.split(clean(text)) if (item := _norm(part)))


@dataclass(frozen=True)
class Answer:
    """A parsed answer: option letters (or, without options, the choice words / findings), or why not."""
    value: frozenset[str] | None
    failure: str | None = None
    text: str | None = None  # what stood inside the tags (by the chestx-reasoner rule: what it compared)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def shown(self) -> str | None:
        """What was read, for the per-item table: the letters (or choices), else the text compared."""
        return self.text if self.value is None else ", ".join(sorted(self.value))


def _choices(task: str, options: dict[str, str]) -> dict[str, str]:
    """Key -> text of what may be chosen: the options by letter, else the task's implicit choices by word."""
    if options:
        return options
    return {text.casefold(): text for text in IMPLICIT_CHOICES.get(task, ())}


def _matching(text: str, choices: dict[str, str]) -> list[str]:
    """The choices whose text equals `text` (finding lists as sets)."""
    wanted = findings(text)
    return [key for key, option in choices.items() if wanted and findings(option) == wanted]


def _leading_word_match(text: str, choices: dict[str, str]) -> list[str]:
    words = _norm(text).split(maxsplit=1)
    first = words[0].strip(_EDGE) if words else ""
    return [key for key, option in choices.items() if " " not in option.strip() and first == _norm(option)]


def _letters(text: str, options: dict[str, str]) -> frozenset[str] | None:
    """The letters of a letters-only answer ("A", "(a)", "A, C", "a and c", "A C", "CA"), or None when the text is
    not one. Upper-case letters run together count only when each is an option ("NO" is a word)."""
    if re.fullmatch(r"[A-Z]{2,}", text):
        return frozenset(text) if set(text) <= options.keys() else None
    if not _LETTER_LIST.fullmatch(text):
        return None
    letters = _LETTER.findall(re.sub(r"\band\b", " ", text, flags=re.IGNORECASE))
    if all(c.isupper() for c in letters):
        return frozenset(letters)  # "E" when the options end at D: a letter, but not an option
    separated = len(letters) == 1 or re.search(r"[,;&/]|\band\b", text, re.IGNORECASE)
    if separated and all(c.upper() in options for c in letters):
        return frozenset(c.upper() for c in letters)
    return None  # "no", "ok": words


def _read(text: str, task: str, options: dict[str, str]) -> tuple[frozenset[str] | None, str | None]:
    """Rules 2-4 of the module docstring on the text inside the tags."""
    text = clean(text)
    if not text:
        return None, EMPTY_ANSWER
    if task == MULTI_NO_OPTION and not options:
        items = findings(text)
        return (items, None) if items else (None, EMPTY_ANSWER)
    choices = _choices(task, options)
    value = _letters(text, options) if options else None
    if value is None and options:
        for pattern in _LEADING_LETTER:
            if found := pattern.fullmatch(text):
                letter, rest = found.group(1).upper(), found.group(2)
                others = set(_matching(rest, choices))
                if task in ONE_WORD:
                    others |= set(_leading_word_match(rest, choices))
                if others - {letter}:  # "B) Yes" when A is Yes
                    return None, AMBIGUOUS
                value = frozenset(letter)
                break
    if value is None:
        keys = _matching(text, choices) or (_leading_word_match(text, choices) if task in ONE_WORD else [])
        if len(keys) > 1:
            return None, AMBIGUOUS
        value = frozenset(keys) if keys else None
    if value is None or (options and not value <= options.keys()):
        return None, NOT_AN_OPTION
    if task in ONE_ANSWER and len(value) > 1:
        return None, AMBIGUOUS
    return value, None


def parse_answer(output: str | None, task: str, options: dict[str, str] | None = None) -> Answer:
    """A model's output read by the rules of the module docstring; never raises on what a model writes."""
    _check_task(task)
    text, failure = answer_text(output)
    if failure is not None:
        return Answer(None, failure)
    value, failure = _read(text, task, options or {})
    return Answer(value, failure, text)


def parse_reference(answer: str, task: str, options: dict[str, str] | None = None,
                    item: str | int | None = None) -> frozenset[str]:
    """The reference answer ("B", "Yes", "<answer> B </answer>", "edema, cardiomegaly") by the same rules."""
    _check_task(task)
    where = "" if item is None else f"item {item}: "
    if not isinstance(answer, str):
        raise InputError(f"{where}the reference answer is {type(answer).__name__} {answer!r:.40}, not text")
    text = answer_text(answer)[0] if _OPEN in answer.lower() else answer
    value, failure = _read(text or "", task, options or {})
    if value is None:
        raise InputError(f"{where}the reference answer {answer!r:.80} cannot be read as a {task} answer ({failure}"
                         f"{'; options ' + ', '.join(options) if options else ''})")
    return value


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise InputError(f"unknown RadRBench task {task!r}: use one of {', '.join(TASKS)}")


@dataclass
class AccuracyResult:
    correct: list[bool]  # per item; an unreadable answer is wrong (rexrank) or left out (chestx-reasoner)
    answers: list[Answer]
    tasks: list[str]
    signature: str = ""
    scored: list[bool] = field(default_factory=list)  # per item: in the denominator (every item, by default)
    failures: Counter = field(init=False)

    def __post_init__(self):
        self.scored = self.scored or [True] * len(self.correct)
        self.failures = Counter(a.failure for a in self.answers if a.failure is not None)

    @property
    def accuracy(self) -> float:
        """Over the items scored (NaN when there are none)."""
        n = sum(self.scored)
        return sum(self.correct) / n if n else float("nan")

    def per_task(self) -> dict[str, dict]:
        """For each task present: items, scored, correct, accuracy (over the scored) and the failures by reason."""
        table: dict[str, dict] = {}
        for task, right, scored, answer in zip(self.tasks, self.correct, self.scored, self.answers):
            row = table.setdefault(task, {"items": 0, "scored": 0, "correct": 0, "failures": Counter()})
            row["items"] += 1
            row["scored"] += scored
            row["correct"] += right
            if answer.failure is not None:
                row["failures"][answer.failure] += 1
        for row in table.values():
            row["accuracy"] = row["correct"] / row["scored"] if row["scored"] else float("nan")
            row["failures"] = dict(row["failures"])
        return table


# The overall rows' items (`score.score_outputs`): the option tasks; the free-text task is beside them, as the authors
# score it (RaTEScore), its exact match only in its own rows. Before issue 46 the board's counted it in (unsigned).
OVERALL = "option-tasks"


def signature(rule: str = REXRANK) -> Signature:
    """The accuracy's signature under an answer rule (a resolved one: "chestx-reasoner:<branch>")."""
    if rule == REXRANK:
        return Signature("radrbench-accuracy", VERSION, settings={"parser": PARSER_VERSION, "unreadable": "wrong",
                                                                  "overall": OVERALL})
    which = chestx_reasoner.branch(rule)
    return Signature("radrbench-accuracy", VERSION, settings={
        "parser": f"{chestx_reasoner.RULE}:{which}@{chestx_reasoner.REFERENCE}", "unreadable": "left-out",
        "overall": OVERALL})


def accuracy(outputs: Sequence[str | None], answers: Sequence[str], questions: Sequence[str | None],
             tasks: Sequence[str] | str, rule: str = REXRANK, names: Sequence[str] | None = None) -> AccuracyResult:
    """Accuracy of model `outputs` against reference `answers`; options come from `questions`. `tasks` is one
    task for all items or one per item (`task_of` maps RadRBench file names). `rule`: `REXRANK` or a resolved
    "chestx-reasoner:<branch>". `names`: how an error names each item after "item " (default: its position)."""
    n = len(outputs)
    tasks = [tasks] * n if isinstance(tasks, str) else list(tasks)
    names = [str(i) for i in range(n)] if names is None else list(names)
    for name, column in (("answers", answers), ("questions", questions), ("tasks", tasks), ("names", names)):
        if len(column) != n:
            raise InputError(f"{n} outputs but {len(column)} {name}")
    which = None if rule == REXRANK else chestx_reasoner.branch(rule)
    correct, parsed, scored = [], [], []
    for output, gold, question, task, name in zip(outputs, answers, questions, tasks, names):
        if output is not None and not isinstance(output, str):
            raise InputError(f"item {name}: the output is {type(output).__name__} {output!r:.40}, not text")
        options = options_of(question)
        reference = parse_reference(gold, task, options, item=name)
        if which is None:
            answer = parse_answer(output, task, options)
            right, counted = answer.value == reference, True
        elif task == MULTI_NO_OPTION:
            raise InputError(f"item {name}: a free-text item has no accuracy by the {rule} rule (the authors "
                             "score it by RaTEScore)")
        else:
            reading = chestx_reasoner.read(output, gold, which)
            answer = Answer(None, reading.failure, reading.text)
            right, counted = reading.correct, reading.scored
        parsed.append(answer)
        correct.append(right)
        scored.append(counted)
    return AccuracyResult(correct, parsed, tasks, str(signature(rule if which is None else f"chestx-reasoner:{which}")),
                          scored)
