"""A ReXVQA result in a submission's folder, `vqa/rexvqa.vqa.<split>.json`, and its per-question table: files the
maintainers' inference job wrote (rexrank.backend.vqa) by running the submitted model, accepted only as the bytes
the ledger records, and checked besides: the rows' arithmetic, a public split's accuracy recomputed from its
per-question table (named by sha256 in the result), a private split's aggregates at the board's precision without
the counts that would undo the rounding."""

from __future__ import annotations

import hashlib
import math

from rexrank.catalog import REXVQA, VQA_CATEGORIES, VQA_TASK
from rexrank.errors import InputError
from rexrank.results import BOARD_DECIMALS
from rexrank.rules.layout import VQA_JOB_ONLY, VQA_PRIVATE_SPLIT
from rexrank.rules.limits import MAX_PROBLEMS_PER_FILE, RESULT_JSON, parse_json
from rexrank.text import shown as _show
from rexrank.vqa.score import OVERALL

TABLE = "per_question.parquet"  # the result's `companions` key for its per-question table
_KEYS = {"dataset", "split", "task", "model", "metric", "signature", "rows"}
_OPTIONAL = {"missing_predictions", "per_question", "provenance", "checks", "companions", "institution", "url"}
_ROW = {"category", "questions", "accuracy", "low", "high", "failed_extractions"}
_ROW_OPTIONAL = {"correct", "failures"}
TOLERANCE = 1e-9  # a mean of 0/1 floats against the count's ratio: float64 summation, far below the board's 1e-3


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fraction(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def check_vqa_result(data: bytes, split: str, maintained: str | None) -> dict:
    """`vqa/rexvqa.vqa.<split>.json`: exactly the bytes the ledger records for it, then its fields and rows."""
    if maintained is None or hashlib.sha256(data).hexdigest() != maintained:
        raise InputError(VQA_JOB_ONLY + ("" if maintained is None else " (this file is not the one it wrote)"))
    value = parse_json(data, RESULT_JSON)
    if not isinstance(value, dict):
        raise InputError("expected an object")
    problems = [f"missing {k}" for k in sorted(_KEYS - set(value))]
    problems += [f"unknown field {_show(k, 40)!r}" for k in sorted(map(str, set(value) - _KEYS - _OPTIONAL))[:5]]
    if problems:
        raise InputError("; ".join(problems))
    if (value["dataset"], value["task"], value["split"]) != (REXVQA.name, VQA_TASK, split):
        problems.append(f"holds {_show(str(value['dataset']), 40)}.{_show(str(value['task']), 20)} "
                        f"{_show(str(value['split']), 20)}, but the file name says {REXVQA.name}.{VQA_TASK} {split}")
    if not isinstance(value["model"], str) or not 0 < len(value["model"]) <= 100:
        problems.append("model: expected a name of 1 to 100 characters")
    problems += rows_problems(value["rows"], private=split == VQA_PRIVATE_SPLIT)
    if split == VQA_PRIVATE_SPLIT and value.get("per_question") is not None:
        problems.append("per_question: a private split's per-question results are never published")
    if split != VQA_PRIVATE_SPLIT and not isinstance((value.get("companions") or {}).get(TABLE), str):
        problems.append(f"companions.{TABLE}: a public split's result names its per-question table by sha256")
    if problems:
        raise InputError("; ".join(problems[:MAX_PROBLEMS_PER_FILE]))
    return value


def rows_problems(rows: object, private: bool) -> list[str]:
    """The rows' arithmetic: one per category and the overall one, counts within their questions, accuracy inside
    its CI and, for a public split, the count's ratio; for the private one, values at the board's precision and no
    count of correct answers (which would give the accuracy unrounded)."""
    if not isinstance(rows, list) or not rows or len(rows) > len(VQA_CATEGORIES) + 1:
        return [f"rows: a list of at most {len(VQA_CATEGORIES) + 1} rows (the categories, then {OVERALL})"]
    problems, seen = [], set()
    for number, row in enumerate(rows):
        where = f"rows[{number}]"
        if not isinstance(row, dict) or not _ROW <= set(row) <= _ROW | _ROW_OPTIONAL:
            problems.append(f"{where}: expected the fields {', '.join(sorted(_ROW))} (and correct, failures)")
            continue
        category = row["category"]
        if category not in (*VQA_CATEGORIES, OVERALL) or category in seen:
            problems.append(f"{where}: category {_show(str(category), 60)!r} is not one of the five (or {OVERALL}), "
                            "once")
        seen.add(category)
        n = row["questions"]
        if not _count(n) or n == 0 or not _count(row["failed_extractions"]) or row["failed_extractions"] > n:
            problems.append(f"{where}: questions and failed_extractions must be whole numbers, 0 <= failed <= "
                            "questions, questions > 0")
            continue
        if not all(_fraction(row[k]) for k in ("accuracy", "low", "high")) or not \
                row["low"] - TOLERANCE <= row["accuracy"] <= row["high"] + TOLERANCE:
            problems.append(f"{where}: accuracy, low and high must be numbers from 0 to 1, low <= accuracy <= high")
            continue
        if private:
            if "correct" in row:
                problems.append(f"{where}: correct: a private split publishes its accuracy rounded, not its count")
            if any(round(row[k], BOARD_DECIMALS) != row[k] for k in ("accuracy", "low", "high")):
                problems.append(f"{where}: a private split's values are published at {BOARD_DECIMALS} decimals")
        elif not _count(row.get("correct")) or row["correct"] > n:
            problems.append(f"{where}: correct: a whole number from 0 to questions")
        elif not math.isclose(row["accuracy"], row["correct"] / n, rel_tol=0, abs_tol=TOLERANCE):
            problems.append(f"{where}: accuracy {row['accuracy']} is not correct / questions ({row['correct']}/{n})")
    by_category = {r["category"]: r for r in rows if isinstance(r, dict) and "category" in r}
    overall = by_category.get(OVERALL)
    if overall is None:
        problems.append(f"rows: no {OVERALL} row")
    elif _count(overall.get("questions")) and overall["questions"] != sum(
            r.get("questions", 0) for c, r in by_category.items() if c != OVERALL and _count(r.get("questions"))):
        problems.append(f"rows: {OVERALL} has {overall['questions']} questions, not the categories' sum")
    return problems


def table_problems(result: dict, data: bytes) -> list[str]:
    """A public split's per-question table against its result: the bytes the result names, and each row's counts
    and accuracy recomputed from the table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if hashlib.sha256(data).hexdigest() != (result.get("companions") or {}).get(TABLE):
        return ["not the per-question table its result names (sha256)"]
    try:
        columns = pq.read_table(pa.BufferReader(data), columns=["question_id", "category", "failure", "correct"],
                                arrow_extensions_enabled=False).to_pydict()
    except Exception as err:  # noqa: BLE001 -- a message, never a crash of the checker
        return [f"not a per-question table (question_id, category, failure, correct): {type(err).__name__}"]
    if len(set(columns["question_id"])) < len(columns["question_id"]):
        return ["a question appears twice"]
    problems = []
    rows = list(zip(columns["category"], columns["correct"], columns["failure"]))
    for row in result["rows"]:
        group = [r for r in rows if row["category"] in (OVERALL, r[0])]
        counted = (len(group), sum(bool(r[1]) for r in group), sum(r[2] is not None for r in group))
        said = (row["questions"], row["correct"], row["failed_extractions"])
        if counted != said:
            problems.append(f"{row['category']}: the table counts {counted[0]} questions, {counted[1]} correct, "
                            f"{counted[2]} failed extractions; the result says {said[0]}, {said[1]}, {said[2]}")
    return problems
