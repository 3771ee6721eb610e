"""Loading a model's predictions and lining them up with a task's references.

Formats: ReXrank's submission JSON (the split object with a `model_prediction` per study; bare NaN
tolerated), JSONL with `study_id` and `prediction` per line, or CSV with columns `study_id,prediction`.

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
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank.data.split import jsonl_records, listing, read_json
from rexrank.errors import InputError
from rexrank.reports import TaskReferences

PREDICTION_KEYS = ("prediction", "model_prediction")
BREAKS = re.compile(r"[^\S ]")  # whitespace other than the space: line breaks, tabs (a reference has none left)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair: JSON can spell it, UTF-8 cannot


def load_predictions(path: str | os.PathLike) -> dict[str, object]:
    """study_id -> the raw prediction value (checked later by `align`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such predictions file")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _from_json(path)
    if suffix == ".jsonl":
        return _from_rows(path, jsonl_records(path))
    if suffix == ".csv":
        return _from_rows(path, _csv_rows(path))
    raise InputError(f"{path}: unknown predictions format {suffix!r}: use .json (ReXrank), .jsonl or .csv")


def _prediction(record: dict, where: str) -> object:
    for key in PREDICTION_KEYS:
        if key in record:
            return record[key]
    raise InputError(f"{where}: no {' or '.join(PREDICTION_KEYS)} field")


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
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            columns = reader.fieldnames or []
            if "study_id" not in columns or not any(k in columns for k in PREDICTION_KEYS):
                raise InputError(f"{path}: expected a header with study_id and prediction, got {','.join(columns)}")
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
            if "study_id" not in record or not any(key in record for key in PREDICTION_KEYS):
                raise InputError(f"{where}: expected the keys study_id and prediction (or model_prediction), found "
                                 f"{_keys(record)}")
            study_id = record.get("study_id")
            if isinstance(study_id, bool) or not isinstance(study_id, str | int) or str(study_id).strip() == "":
                raise InputError(f"{where}: study_id must be a non-empty string or integer, got {study_id!r}")
            study_id = str(study_id)
            if study_id in predictions:
                raise InputError(f"{where}: study {study_id} is predicted more than once")
            predictions[study_id] = _prediction(record, where)
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


def align(references: TaskReferences, predictions: dict[str, object], source: str = "predictions") -> Aligned:
    known = references.references.keys() | references.dropped.keys()
    errors: list[str] = []
    for study_id in predictions:
        if study_id not in known:
            errors.append(f"study {study_id}: predicted but not in the split (wrong split or dataset?)")
    empty: list[str] = []
    broken: list[str] = []
    for study_id in references.references:
        if study_id not in predictions:
            errors.append(f"study {study_id}: in the split but has no prediction")
            continue
        value = predictions[study_id]
        if value is None or (isinstance(value, float) and math.isnan(value)):
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
    if errors:
        raise InputError(f"{source}: {len(errors)} problem(s), nothing was scored:\n{listing(errors)}")

    ignored = [s for s in predictions if s in references.dropped]
    warnings = []
    if empty:
        warnings.append(f"{len(empty)} empty prediction(s), scored as the empty report: "
                        f"{', '.join(empty[:10])}{' ...' if len(empty) > 10 else ''}")
    if broken:
        warnings.append(f"{len(broken)} prediction(s) hold line breaks or tabs, scored as given (the references' "
                        "whitespace is collapsed, the predictions' is not, as on the board; BLEU-2 reads a line "
                        f"break as part of a word): {', '.join(broken[:10])}{' ...' if len(broken) > 10 else ''}")
    rows = pd.DataFrame(
        {
            "study_id": list(references.references),
            "reference": list(references.references.values()),
            "prediction": [predictions[s] for s in references.references],
        }
    )
    counts = {
        "split_studies": len(known),
        "scored": len(rows),
        "dropped_by_task": len(references.dropped),
        "empty_predictions": len(empty),
        "ignored_predictions": len(ignored),
    }
    return Aligned(rows, counts, warnings, references.text)
