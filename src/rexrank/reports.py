"""Reference construction for the two ReXrank tasks (docs/metrics.md §0).

ReXrank's `example_files/evaluation_script.md` builds the findings+impression ground truth as
``f"Findings: {findings} Impression: {impression}"`` where a missing section is Python ``None``, so the
literal word ``None`` appears in the text. We reproduce that exactly.

The board's references had their whitespace collapsed (every run of spaces, tabs and line breaks to one space,
the ends stripped) before any metric saw them: on ReXrank's own MIMIC-CXR file, whose findings hold line breaks in
2,331 of 2,347 studies, a published model's BLEU-2 is 0.118 on the text as stored and 0.161 collapsed, beside the
board's 0.163 (docs/metrics.md §0). Both tasks' references are built that way, for every metric. Predictions are
scored as given: ReXrank's script passes `model_prediction` through untouched and CXR-Report-Metric strips nothing.

A study without a findings section is left out of the findings task: the board's CheXpert Plus findings rows are
means over the 62 studies that have one, not over 200 with the word ``None`` as the other 138 references (a report
scores BLEU-2 0 against ``None`` unless it holds the word, so their BLEU-2 would be about 62/200 of the 62 studies'
mean; docs/metrics.md §0). Ours (ReXrank does not say, and no public set has one): a section is *missing* when it
is None, NaN or blank, and a study with neither section is left out of the findings+impression task.
Left-out studies are counted and reported, never silently lost.

How the texts were made is part of every score's signature (`text_settings`): a number made on references built
otherwise (rexrank before the collapse signed nothing) has another point key and is never ranked beside these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rexrank.errors import InputError

FINDINGS = "findings"
FINDINGS_IMPRESSION = "findings_impression"
TASKS = (FINDINGS, FINDINGS_IMPRESSION)

# The reference-text version, as the signature setting `refs`: every whitespace run collapsed to one space, the ends
# stripped. A signature without `refs` was made on references as the split file stores them (line breaks kept).
REFERENCE_TEXT = "collapsed-ws"
# The predictions, as the setting `preds`: as given (ReXrank's script and CXR-Report-Metric change nothing).
PREDICTION_TEXT = "as-given"
# What each task does with a missing section, as the setting `missing`: the findings task leaves the study out (as
# the board's CheXpert Plus findings rows show), the findings+impression task writes the missing section `None`.
MISSING = {FINDINGS: "left-out", FINDINGS_IMPRESSION: "None"}


class MalformedReference(InputError):
    """A reference that is not text. The message names the study and the field, never the value: references can be
    private (the ReXGradient job passes this message on, and withholds every other)."""


def section(value: object, name: str = "a report section") -> str | None:
    """A report section as text, or None when missing (None, NaN, blank)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, str):
        raise MalformedReference(f"{name} must be text, got {type(value).__name__}")
    return value if value.strip() else None


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace (spaces, tabs, line breaks: what `str.split` splits at) to one space, the ends
    stripped: `' '.join(text.split())`, as the board's references were."""
    return " ".join(text.split())


def findings_impression_text(findings: str | None, impression: str | None) -> str:
    """The ReXrank findings+impression ground truth as the source writes it; a missing section renders as ``None``.
    (`reference_text` is what the task scores: this, whitespace collapsed.)"""
    return f"Findings: {findings} Impression: {impression}"


def reference_text(findings: str | None, impression: str | None, task: str) -> str | None:
    """The reference `task` scores for a study with these sections (each a text, or None when missing), whitespace
    collapsed; None when the task leaves the study out. Pass references made this way to a metric's `compute` to
    reproduce the board's numbers."""
    check_task(task)
    if task == FINDINGS:
        return None if findings is None else collapse_whitespace(findings)
    if findings is None and impression is None:
        return None
    return collapse_whitespace(findings_impression_text(findings, impression))


def text_settings(task: str) -> dict[str, str]:
    """How `task`'s texts were made, as signature settings: the reference-text version, what the task does with a
    missing section, and what is done to predictions."""
    return {"refs": REFERENCE_TEXT, "missing": MISSING[check_task(task)], "preds": PREDICTION_TEXT}


def check_pairs(predictions: Sequence[object], references: Sequence[object]) -> None:
    """As many predictions as references, each a text; InputError naming the first that is not. A bare string is
    refused: as a sequence it is its characters, and each would be scored as a report."""
    for kind, texts in (("predictions", predictions), ("references", references)):
        if isinstance(texts, str | bytes):
            raise InputError(f"{kind} must be a list of reports, not one string (it would be scored character by "
                             f"character): pass [{kind[:-1]}]")
    if len(predictions) != len(references):
        raise InputError(f"{len(predictions)} predictions but {len(references)} references")
    for kind, texts in (("prediction", predictions), ("reference", references)):
        for i, text in enumerate(texts):
            if not isinstance(text, str):  # the value is never quoted: a reference may be private
                raise InputError(f"{kind} {i} is {type(text).__name__}, not text")


def check_task(task: str) -> str:
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}: expected one of {', '.join(TASKS)}")
    return task


@dataclass(frozen=True)
class TaskReferences:
    """The references of one task over a split, in split order, and what the task had to drop."""

    task: str
    references: dict[str, str]
    dropped: dict[str, str] = field(default_factory=dict)  # study_id -> reason

    @property
    def text(self) -> dict[str, str]:
        """How these references (and the predictions scored against them) were made, for the scores' signatures."""
        return text_settings(self.task)


def build_references(studies: Iterable[tuple[str, object, object]], task: str) -> TaskReferences:
    """References for `task` from (study_id, findings, impression) rows."""
    check_task(task)
    references: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for study_id, raw_findings, raw_impression in studies:
        try:
            findings, impression = section(raw_findings, "findings"), section(raw_impression, "impression")
        except MalformedReference as err:
            raise MalformedReference(f"study {study_id}: {err}") from None
        text = reference_text(findings, impression, task)
        if text is not None:
            references[study_id] = text
        else:
            dropped[study_id] = "no findings section" if task == FINDINGS else "neither findings nor impression"
    return TaskReferences(task, references, dropped)
