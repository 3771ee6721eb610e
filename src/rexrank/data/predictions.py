"""Loading a model's predictions and lining them up with a task's references.

Formats: ReXrank's submission JSON (the split object with a `model_prediction` per study; bare NaN
tolerated), JSONL with `study_id` and `prediction` per line, or CSV with columns `study_id,prediction` (or
`study_id,report`, as ReXrank's own evaluation and model repositories write them); a UTF-8 byte order mark is read
past. A JSONL or CSV may give the report's sections instead (`study_id,findings,impression`, as CXRMate-2 publishes
its outputs): each task's prediction is then made from them as its reference is (`Sections.text`).

Rules (each problem names the study):
- errors, nothing is scored: a study id given twice, a prediction that is not text (number, list,
  null/NaN) or not valid Unicode (a lone surrogate), a prediction for a study the split does not have, a split study
  with no prediction;
- warnings, scored: an empty or whitespace-only prediction (it scores what each metric gives the
  empty string, see `rexrank metrics`); a prediction holding line breaks or tabs (scored as given, as the board
  scored predictions: BLEU-2 splits at single spaces only, so a line break joins the words beside it into one
  token; docs/metrics.md §0).
- counted: predictions for studies the task leaves out (a ReXrank submission covers the whole split,
  so the findings task always ignores the studies without findings).
- by choice: `ignore_extra` leaves predictions for studies outside the split aside (a model's whole test-set
  output scored on ReXrank's split), counted; `partial` scores the predicted studies of a split alone (a development
  subset), counted as `unpredicted`: such a result is partial, not comparable with the board's numbers.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank.data.split import jsonl_records, listing, read_json
from rexrank.errors import InputError
from rexrank.files import write_text
from rexrank.reports import FINDINGS, FINDINGS_IMPRESSION, TaskReferences, findings_impression_text

PREDICTION_KEYS = ("prediction", "model_prediction")
ROW_KEYS = (*PREDICTION_KEYS, "report")  # a JSONL or CSV row's text: `report` is CXR-Report-Metric's column
SECTION_KEYS = ("findings", "impression")  # or the report's sections, one column each
_MISSING = object()
IMPRESSION = re.compile(r"\bimpression\s*:", re.IGNORECASE)  # what a findings+impression text holds
BREAKS = re.compile(r"[^\S ]")  # whitespace other than the space: line breaks, tabs (a reference has none left)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair: JSON can spell it, UTF-8 cannot


@dataclass(frozen=True)
class Sections:
    """A prediction given as the report's sections (a missing one: None, NaN or blank): `align` makes each task's
    prediction of them as the task's reference is made of the split's sections."""

    findings: object
    impression: object

    def text(self, task: str) -> object:
        """The findings section alone for `findings`; `Findings: ... Impression: ...` for `findings_impression`,
        a missing section written `None` as in the reference (docs/metrics.md §0). A section that is not text is
        returned as it is, for `align` to refuse naming the study."""
        parts = []
        for value in (self.findings, self.impression):
            if isinstance(value, float) and math.isnan(value):
                value = None
            if value is not None and not isinstance(value, str):
                return value
            parts.append(value if value and value.strip() else None)
        findings, impression = parts
        if task == FINDINGS:
            return findings or ""
        return findings_impression_text(findings, impression)


def load_predictions(path: str | os.PathLike) -> dict[str, object]:
    """study_id -> the raw prediction value (checked later by `align`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such predictions file")
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl", ".csv"):
        raise InputError(f"{path}: unknown predictions format {suffix!r}: use .json (ReXrank), .jsonl or .csv")
    with path.open("rb") as handle:
        if not handle.read(1 << 16).lstrip(b"\xef\xbb\xbf \t\r\n") and path.stat().st_size < 1 << 16:
            raise InputError(f"{path}: an empty file: no predictions in it")
    if suffix == ".json":
        found = _from_json(path)
    else:
        found = _from_rows(path, jsonl_records(path) if suffix == ".jsonl" else _csv_rows(path))
    if not found:
        raise InputError(f"{path}: no predictions in it")
    return found


def _prediction(record: dict, where: str, keys: tuple[str, ...] = PREDICTION_KEYS) -> object:
    for key in keys:
        if key in record:
            return record[key]
    raise InputError(f"{where}: no {' or '.join(keys)} field")


def _from_json(path: Path) -> dict[str, object]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object {{study_id: record}} (ReXrank format); "
                         "for a list of records use .jsonl")
    return {
        str(study_id): _prediction(record, f"{path}: study {study_id}") if isinstance(record, dict) else record
        for study_id, record in data.items()
    }


def _csv_rows(path: Path):
    # A report may be any length, as in JSON: the csv module's own limit is 128 KiB a field.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    with path.open(encoding="utf-8-sig", newline="") as handle:  # -sig: a spreadsheet's "CSV UTF-8" starts with a BOM
        reader = csv.DictReader(handle)
        try:
            columns = reader.fieldnames or []
            if "study_id" not in columns or not any(k in columns for k in (*ROW_KEYS, *SECTION_KEYS)):
                raise InputError(f"{path}: expected a header with study_id and prediction (or report, or findings "
                                 f"and impression), got {', '.join(map(repr, columns))}")
            for record in reader:
                if None in record:
                    raise InputError(f"{path}:{reader.line_num}: more fields than the header has "
                                     "(quote predictions that contain commas)")
                yield reader.line_num, record
        except csv.Error as err:
            raise InputError(f"{path}:{reader.line_num}: not a readable CSV row ({err})") from None


def _from_rows(path: Path, rows) -> dict[str, object]:
    predictions: dict[str, object] = {}
    try:
        for number, record in rows:
            where = f"{path}:{number}"
            if "study_id" not in record or not any(key in record for key in (*ROW_KEYS, *SECTION_KEYS)):
                raise InputError(f"{where}: expected the keys study_id and prediction (or model_prediction, or "
                                 f"report, or findings and impression), found {_keys(record)}")
            study_id = record.get("study_id")
            if isinstance(study_id, bool) or not isinstance(study_id, str | int) or str(study_id).strip() == "":
                raise InputError(f"{where}: study_id must be a non-empty string or integer, got {study_id!r}")
            study_id = str(study_id)
            if study_id in predictions:
                raise InputError(f"{where}: study {study_id} is predicted more than once")
            predictions[study_id] = (_prediction(record, where, ROW_KEYS) if any(k in record for k in ROW_KEYS)
                                     else Sections(record.get("findings"), record.get("impression")))
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text: {err}") from None
    return predictions


def _keys(record: dict, shown: int = 8) -> str:
    """A row's keys as a user reads them: quoted, cut short, at most `shown` of them."""
    keys = [repr(str(k)[:40]) for k in list(record)[:shown]]
    more = f" and {len(record) - shown} more" if len(record) > shown else ""
    return ", ".join(keys) + more if keys else "none"


@dataclass(frozen=True)
class Aligned:
    """(study_id, reference, prediction) rows of one task, in split order, and what was noticed."""

    rows: pd.DataFrame
    counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    text: dict[str, str] = field(default_factory=dict)  # how the texts were made: `score(..., text=)` signs it


def align(references: TaskReferences, predictions: dict[str, object], source: str = "predictions",
          ignore_extra: bool = False, partial: bool = False) -> Aligned:
    """The task's studies lined up with their predictions; every problem at once, naming the study. `ignore_extra`:
    predictions for studies outside the split are left aside (counted); `partial`: split studies without a prediction
    are left out (counted as `unpredicted`), the rest scored."""
    predictions = {s: p.text(references.task) if isinstance(p, Sections) else p
                   for s, p in predictions.items()}
    known = references.references.keys() | references.dropped.keys()
    extra = [s for s in predictions if s not in known]
    errors = [] if ignore_extra else [f"study {s}: predicted but not in the split (wrong split or dataset?)"
                                      for s in extra]
    unpredicted = [s for s in references.references if s not in predictions]
    scored = [s for s in references.references if s in predictions]
    empty, broken = _values(predictions, list(references.references), errors, partial)
    if errors:
        hints = _hints(len(references.references), len(predictions), extra, unpredicted, ignore_extra, partial)
        raise InputError(f"{source}: {len(errors)} problem(s), nothing was scored:\n{listing(errors)}{hints}")
    if not scored:
        raise InputError(f"{source}: none of its {len(predictions):,} predictions is for a study of the split "
                         f"({len(references.references):,} studies in the task): wrong --dataset or --split?")
    warnings = _warnings(references.task, [predictions[s] for s in scored], empty, broken)
    if extra:
        warnings.append(f"{len(extra):,} prediction(s) for studies not in the split left aside (--ignore-extra), "
                        f"e.g. {', '.join(extra[:5])}")
    if unpredicted:
        warnings.append(f"PARTIAL: {len(scored):,} of the split's {len(references.references):,} studies scored "
                        f"(--partial; {len(unpredicted):,} have no prediction): not comparable with the board's "
                        "numbers, and rexrank submit refuses it")
    rows = pd.DataFrame({"study_id": scored, "reference": [references.references[s] for s in scored],
                         "prediction": [predictions[s] for s in scored]})
    counts = {
        "split_studies": len(known),
        "scored": len(rows),
        "dropped_by_task": len(references.dropped),
        "empty_predictions": len(empty),
        "ignored_predictions": sum(s in references.dropped for s in predictions),
    }
    counts |= {key: n for key, n in (("extra_predictions", len(extra)), ("unpredicted", len(unpredicted))) if n}
    return Aligned(rows, counts, warnings, references.text)


def _values(predictions: dict[str, object], studies: list[str], errors: list[str],
            partial: bool) -> tuple[list[str], list[str]]:
    """Each study's prediction checked, in split order: a problem (a missing prediction, unless `partial`) appended to
    `errors`; the empty ones and those holding line breaks returned."""
    empty: list[str] = []
    broken: list[str] = []
    for study_id in studies:
        value = predictions.get(study_id, _MISSING)
        if value is _MISSING:
            if not partial:
                errors.append(f"study {study_id}: in the split but has no prediction")
        elif value is None or (isinstance(value, float) and math.isnan(value)):
            errors.append(f"study {study_id}: prediction is null/NaN (write \"\" for a deliberately empty report)")
        elif not isinstance(value, str):
            errors.append(f"study {study_id}: prediction must be text, got {type(value).__name__} {value!r:.40}")
        elif LONE_SURROGATE.search(value):  # valid JSON (\ud800), not Unicode text: nothing can write it
            errors.append(f"study {study_id}: prediction is not valid Unicode (a lone surrogate, "
                          f"\\u{ord(LONE_SURROGATE.search(value).group()):04x})")
        elif not value.strip():
            empty.append(study_id)
        elif BREAKS.search(value):
            broken.append(study_id)
    return empty, broken


def _hints(studies: int, given: int, extra: list[str], unpredicted: list[str], ignore_extra: bool,
           partial: bool) -> str:
    """What to do about predictions and split that do not cover each other, when they overlap at all."""
    if given == len(extra):
        return "\nnone of the predictions' study ids is the split's: wrong --dataset or --split?"
    hints = []
    if extra and not ignore_extra:
        hints.append(f"{len(extra):,} of the {given:,} predictions are for studies the split does not have: "
                     f"--ignore-extra scores the split's studies and leaves those aside")
    if unpredicted and not partial:
        hints.append(f"{len(unpredicted):,} of the split's {studies:,} studies have no prediction: --partial scores "
                     "the predicted ones alone (a partial result: not comparable with the board, never submittable)")
    return "".join(f"\n{hint}" for hint in hints)


def _warnings(task: str, texts: list, empty: list[str], broken: list[str]) -> list[str]:
    warnings = []
    if empty:
        warnings.append(f"{len(empty)} empty prediction(s), scored as the empty report: "
                        f"{', '.join(empty[:10])}{' ...' if len(empty) > 10 else ''}")
    if broken:
        warnings.append(f"{len(broken)} prediction(s) hold line breaks or tabs, scored as given (the references' "
                        "whitespace is collapsed, the predictions' is not, as on the board; BLEU-2 reads a line "
                        f"break as part of a word): {', '.join(broken[:10])}{' ...' if len(broken) > 10 else ''}")
    marked = sum(bool(IMPRESSION.search(t)) for t in texts if isinstance(t, str))
    if task == FINDINGS and marked * 2 > len(texts):
        warnings.append(f"{marked:,} of {len(texts):,} predictions hold 'Impression:', as findings_impression's "
                        "references do ('Findings: ... Impression: ...'), but the findings task's reference is the "
                        "findings section alone: are these for --task findings_impression?")
    elif task == FINDINGS_IMPRESSION and marked * 10 < len(texts):
        warnings.append(f"only {marked:,} of {len(texts):,} predictions hold 'Impression:', but the "
                        "findings_impression task's references are 'Findings: ... Impression: ...' (README, \"Score "
                        "your model\"): findings alone score low here; are these for --task findings?")
    return warnings


def write_predictions(path: Path, study_ids: Sequence[str], predictions: Sequence[str], key: str = "study_id") -> None:
    """A predictions file as `load_predictions` reads it back: one JSON line per study, in the given order (`key`
    "question_id": as `rexrank score-vqa` reads a VQA model's answers)."""
    write_text(path, "".join(json.dumps({key: s, "prediction": p}, ensure_ascii=False) + "\n"
                             for s, p in zip(study_ids, predictions)))
