"""ReXVQA accuracy (ReXrank Challenge V2.0, VQA): the option letter read from a model's free text, compared with the
question's correct letter (docs/metrics.md §12).

The authors publish no evaluation code (the ReXVQA paper, arXiv 2506.04353, and rajpurkarlab/ReXrank carry the data,
the figures and a "Failed Extractions" count per model, not the rule that made it). This is rexrank's rule, written
down and signed (`parser:letters-v1`); one reading for every model, and every question counts: an answer that cannot
be read is wrong, and counted as a failed extraction with its reason.

1. An output that is None or blank is `empty_output`. Where it holds a closed `<answer>...</answer>`, the text of
   the last one is read; otherwise the whole output. Markdown `*` and backticks are dropped, whitespace collapsed,
   quotes and `.,;:!?` stripped from both ends.
2. The answer is a letter, read in this order (the first step that reads one decides):
   a. the whole text is one letter: `B`, `b`, `B.`, `(B)`, `[B]`, `B)`;
   b. the whole text is several letters (`A, C`, `A and B`, `B or C`, `A/B`): `ambiguous` when they differ;
   c. a letter leads, then its text or a comment: `B. There is a small effusion`, `(B) ...`, `B: ...`, `B - ...`;
      `ambiguous` when what follows is exactly another option's text or marks another letter (the answer
      contradicts itself, or lists the options back);
   d. an answer phrase names it: `Answer: B`, `The answer is (B)`, `Final answer - B`, `Option B`, `choice C`;
      `ambiguous` when the phrases name different letters;
   e. the text is exactly one option's text (case-folded, end punctuation stripped): `No pleural effusion.`;
   f. letters marked as options anywhere (`(B)`, `B)`, `B.` or `B:` after a space): one letter is the answer,
      several different ones `ambiguous`.
   Nothing read is `no_letter`; a letter that is not one of the question's options (`E` of A-D) is
   `not_an_option`.

The published "Failed Extractions" column (LLaVA-1.5-7B 971 of 41,007, Phi-3.5-Vision 20, Qwen2VL 1, the five others
0) is what such a rule leaves: models that answer with a letter, a phrase or the option's text are read, a model that
writes prose without committing to one option is not. The figures, at 4 decimals over 41,007 questions, cannot tell
whether those questions were left in the denominator; the board's rule leaves them in, as wrong.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rexrank.errors import InputError
from rexrank.signature import Signature

NAME = "rexvqa_accuracy"
VERSION = "1"
PARSER_VERSION = "letters-v1"

EMPTY_OUTPUT, NO_LETTER, AMBIGUOUS, NOT_AN_OPTION = "empty_output", "no_letter", "ambiguous", "not_an_option"
FAILURES = (EMPTY_OUTPUT, NO_LETTER, AMBIGUOUS, NOT_AN_OPTION)

_OPTION = re.compile(r"^\s*\(?([A-Z])[.):]\s*(.*?)\s*$", re.DOTALL)  # "A. text", "A) text", "(A) text", "A: text"
_TAGGED = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_EDGE = " \t\n\"'.,;:!?"
_ONE = re.compile(r"[(\[]?([A-Za-z])[)\]]?")
_LIST = re.compile(r"\(?[A-Z]\)?(?:\s*(?:,|/|&|\band\b|\bor\b)\s*\(?[A-Z]\)?)+")
_LEAD = re.compile(r"[(\[]?([A-Z])(?:[)\]]|[.:)\-–—])\s*(.*)", re.DOTALL)
_PHRASE = re.compile(r"(?i:\b(?:answer|option|choice)\b)(?:\s*(?i:is|would be|will be|should be))?[\s:=\-–—]*"
                     r"(?i:option\s*)?[(\[]?([A-Z])(?![A-Za-z0-9])")
_MARKED = re.compile(r"(?:^|(?<=\s))(?:\(([A-Z])\)|([A-Z])[).:](?=\s|$))")


def options_of(options: Sequence[str] | Mapping[str, str] | None, where: str = "") -> dict[str, str]:
    """The question's options by letter: ReXVQA's list `["A. text", ...]` (or a letter -> text mapping)."""
    if isinstance(options, Mapping):
        return {str(k).strip().upper(): str(v) for k, v in options.items()}
    found: dict[str, str] = {}
    for option in options or ():
        match = _OPTION.match(option) if isinstance(option, str) else None
        if match is None:
            raise InputError(f"{where}option {option!r:.60} is not `<letter>. <text>`")
        if match.group(1) in found:
            raise InputError(f"{where}option {match.group(1)} appears twice")
        found[match.group(1)] = match.group(2)
    return found


def _clean(text: str) -> str:
    return " ".join(text.replace("*", "").replace("`", "").split()).strip(_EDGE)


def _norm(text: str) -> str:
    return _clean(text).casefold()


@dataclass(frozen=True)
class Reading:
    """What was read from one output: its letter, or why not."""
    letter: str | None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def _one(letters: Sequence[str]) -> Reading | None:
    distinct = sorted(set(letters))
    if not distinct:
        return None
    return Reading(distinct[0]) if len(distinct) == 1 else Reading(None, AMBIGUOUS)


def _read(text: str, options: dict[str, str]) -> Reading:
    """Rule 2 of the module docstring on the cleaned answer text."""
    texts = {letter: _norm(t) for letter, t in options.items()}
    if found := _ONE.fullmatch(text):
        return Reading(found.group(1).upper())
    if _LIST.fullmatch(text):
        return _one(re.findall(r"[A-Z]", re.sub(r"\b(?:and|or)\b", " ", text)))
    if found := _LEAD.fullmatch(text):
        letter, rest = found.group(1), _norm(found.group(2))
        others = {a or b for a, b in _MARKED.findall(found.group(2))} - {letter}
        if others or (rest and any(t == rest for other, t in texts.items() if other != letter)):
            return Reading(None, AMBIGUOUS)
        return Reading(letter)
    if phrased := _one(_PHRASE.findall(text)):
        return phrased
    if matching := [letter for letter, t in texts.items() if t and t == _norm(text)]:
        return _one(matching)
    marked = [a or b for a, b in _MARKED.findall(text)]
    return _one(marked) or Reading(None, NO_LETTER)


def extract(output: object, options: Mapping[str, str]) -> Reading:
    """A model's output read by the rule of the module docstring; never raises on what a model writes."""
    if not isinstance(output, str) or not output.strip():
        return Reading(None, EMPTY_OUTPUT)
    tagged = _TAGGED.findall(output)
    text = _clean(tagged[-1] if tagged else output)
    if not text:
        return Reading(None, EMPTY_OUTPUT)
    reading = _read(text, dict(options))
    if reading.letter is not None and reading.letter not in options:
        return Reading(None, NOT_AN_OPTION)
    return reading


def signature() -> Signature:
    return Signature(NAME, VERSION, settings={"parser": PARSER_VERSION, "unreadable": "wrong"})


@dataclass
class Accuracy:
    correct: list[bool]  # per question; an unreadable answer is wrong
    readings: list[Reading]

    @property
    def value(self) -> float:
        return sum(self.correct) / len(self.correct) if self.correct else float("nan")

    @property
    def failures(self) -> Counter:
        return Counter(r.failure for r in self.readings if r.failure is not None)


def accuracy(outputs: Sequence[object], answers: Sequence[str], options: Sequence[Sequence[str] | Mapping[str, str]],
             names: Sequence[str] | None = None) -> Accuracy:
    """Each output read against its question's options and compared with the correct letter. `names`: how an error
    names each question (default its position). A correct answer that is not one of the options is an input error."""
    n = len(outputs)
    names = [str(i) for i in range(n)] if names is None else [str(x) for x in names]
    for what, column in (("answers", answers), ("options", options), ("names", names)):
        if len(column) != n:
            raise InputError(f"{n} outputs but {len(column)} {what}")
    correct, readings = [], []
    for output, gold, choices, name in zip(outputs, answers, options, names):
        where = f"question {name}: "
        if output is not None and not isinstance(output, str):
            raise InputError(f"{where}the prediction is {type(output).__name__} {output!r:.40}, not text")
        letters = options_of(choices, where)
        key = gold.strip().upper() if isinstance(gold, str) else None
        if key not in letters:
            raise InputError(f"{where}the correct answer {gold!r:.40} is not one of its options "
                             f"({', '.join(letters) or 'none'})")
        reading = extract(output, letters)
        readings.append(reading)
        correct.append(reading.letter == key)
    return Accuracy(correct, readings)


def compute(predictions: Sequence[object], references: Sequence[str], options=None, **_) -> dict:
    """What `evaluate.load("rexrank/rexvqa_accuracy").compute(predictions=..., references=..., options=...)` returns:
    the accuracy, each question's 0/1, the failed extractions by reason and the signature."""
    if options is None:
        raise InputError("rexvqa_accuracy needs options=[[\"A. ...\", \"B. ...\"], ...]: each question's options")
    result = accuracy(list(predictions), list(references), list(options))
    return {NAME: result.value, f"{NAME}_per_sample": [float(c) for c in result.correct],
            "answers": [r.letter for r in result.readings], "failed_extractions": sum(result.failures.values()),
            "failures": dict(sorted(result.failures.items())), "signature": str(signature())}
