"""Reference construction for the two ReXrank tasks (docs/metrics.md §0).

ReXrank's `example_files/evaluation_script.md` builds the findings+impression ground truth as
``f"Findings: {findings} Impression: {impression}"`` where a missing section is Python ``None``, so the
literal word ``None`` appears in the text. We reproduce that exactly.

Ours (ReXrank does not say): a section is *missing* when it is None, NaN or blank; a study without
findings is not part of the findings task, and a study with neither section is not part of the
findings+impression task. Dropped studies are counted and reported, never silently lost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rexrank.errors import InputError

FINDINGS = "findings"
FINDINGS_IMPRESSION = "findings_impression"
TASKS = (FINDINGS, FINDINGS_IMPRESSION)


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


def findings_impression_text(findings: str | None, impression: str | None) -> str:
    """The ReXrank findings+impression ground truth; a missing section renders as ``None``."""
    return f"Findings: {findings} Impression: {impression}"


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
        if task == FINDINGS:
            if findings is None:
                dropped[study_id] = "no findings section"
            else:
                references[study_id] = findings
        elif findings is None and impression is None:
            dropped[study_id] = "neither findings nor impression"
        else:
            references[study_id] = findings_impression_text(findings, impression)
    return TaskReferences(task, references, dropped)
