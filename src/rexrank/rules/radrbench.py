"""`radrbench/radrbench-cxr.accuracy.json`, as `rexrank score-radrbench` writes it: accuracy rows, and where the
submission carries them, RadRScore and the free-text task's RaTEScore."""

from __future__ import annotations

import math
import re

from rexrank.errors import InputError
from rexrank.radrbench import RADRSCORE_PARTS
from rexrank.rules.contents import MEAN_SLACK
from rexrank.rules.layout import KiB
from rexrank.rules.limits import MAX_PROBLEMS_PER_FILE, MAX_RADRBENCH_ROWS, RADRBENCH_JSON, JsonLimits, parse_json
from rexrank.scorers import spec
from rexrank.text import shown as _show

_RADRBENCH_KEYS = {"dataset", "model", "signature", "missing_outputs", "rows", "radrscore", "ratescore"}
_OPTIONAL_BLOCKS = {"radrscore", "ratescore"}  # absent in files of earlier rexranks, null when not computed
_RADRBENCH_ROW = ("source", "task", "items", "scored", "correct", "accuracy", "low", "high", "failures")
_OPTIONAL_ROW = {"scored"}  # absent in files of earlier rexranks: every item scored
_RADRBENCH_TASKS = ("binary", "single", "multi", "multi_no_option", "temporal")
_RADRBENCH_SOURCE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_FAILURE_NAME = re.compile(r"[a-z_]{1,40}")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fraction(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def _radrbench_row(number: int, row: object) -> list[str]:
    where = f"rows[{number}]"
    if not isinstance(row, dict):
        return [f"{where}: expected an object, got {type(row).__name__}"]
    if not set(_RADRBENCH_ROW) - _OPTIONAL_ROW <= set(row) <= set(_RADRBENCH_ROW):
        extra, missing = sorted(set(row) - set(_RADRBENCH_ROW)), sorted(set(_RADRBENCH_ROW) - set(row) - _OPTIONAL_ROW)
        said = (f"unknown field(s) {_show(', '.join(extra), 80)}" if extra else "",
                f"missing {', '.join(missing)}" if missing else "")
        return [f"{where}: " + "; ".join(p for p in said if p)]
    problems = []
    source, task = row["source"], row["task"]
    if not isinstance(source, str) or not _RADRBENCH_SOURCE.fullmatch(source):
        problems.append(f"{where}: source {_show(source, 40)!r} is not a lower-case name")
    if task not in (*_RADRBENCH_TASKS, "all") or (task == "all" and source != "all"):
        problems.append(f"{where}: task {_show(task, 40)!r} is not one of {', '.join(_RADRBENCH_TASKS)} (or all "
                        "with source all)")
    if not _count(row["items"]) or row["items"] == 0:
        problems.append(f"{where}: items is not a positive whole number")
    elif row.get("scored", row["items"]) != row["items"]:  # the board scores every item (an unread one wrong)
        problems.append(f"{where}: scored {_show(row['scored'], 20)} of {row['items']} items: the board's answer rule "
                        "scores every item")
    elif not _count(row["correct"]) or row["correct"] > row["items"]:
        problems.append(f"{where}: correct is not a whole number from 0 to items")
    elif not all(_fraction(row[k]) for k in ("accuracy", "low", "high")):
        problems.append(f"{where}: accuracy, low and high must be numbers from 0 to 1")
    elif not row["low"] - 1e-9 <= row["accuracy"] <= row["high"] + 1e-9:
        problems.append(f"{where}: accuracy {row['accuracy']} is outside its CI [{row['low']}, {row['high']}]")
    elif abs(row["accuracy"] - row["correct"] / row["items"]) > 1e-9:
        problems.append(f"{where}: accuracy {row['accuracy']} is not correct / items")
    failures = row["failures"]
    try:
        counts = parse_json(failures.encode("utf-8"), JsonLimits(4 * KiB, 1, 16)) if isinstance(failures, str) \
            else None
    except (InputError, UnicodeEncodeError):
        counts = None
    if not isinstance(counts, dict) or not all(isinstance(k, str) and _FAILURE_NAME.fullmatch(k) and _count(v)
                                               for k, v in counts.items()):
        problems.append(f"{where}: failures is not a JSON object of answer failure -> count")
    return problems


_RADRSCORE_KEYS = {"signature", "judged", "judged_mean", "refused", "unparseable", "cut", "addressed", "rows",
                   "judged_signature", "judged_rows"}
_RADRSCORE_OPTIONAL = {"judged_signature", "judged_rows", "addressed"}  # absent in earlier files
_RADRSCORE_ROW = {"source", "task", "items", *(f"{p}{e}" for p in RADRSCORE_PARTS for e in ("", "_low", "_high", "_n"))}


def _radrscore_row(where: str, row: object) -> list[str]:
    if not isinstance(row, dict) or set(row) != _RADRSCORE_ROW:
        fields = sorted(set(row) ^ _RADRSCORE_ROW) if isinstance(row, dict) else []
        return [f"{where}: expected an object with the fields `rexrank score-radrbench` writes"
                + (f" (differs in {_show(', '.join(fields), 120)})" if fields else "")]
    problems = []
    if not isinstance(row["source"], str) or not (row["source"] == "all" or _RADRBENCH_SOURCE.fullmatch(row["source"])):
        problems.append(f"{where}: source {_show(row['source'], 40)!r} is not a lower-case name")
    if row["task"] not in (*_RADRBENCH_TASKS, "all"):
        problems.append(f"{where}: task {_show(row['task'], 40)!r} is not a RadRBench-CXR task")
    if not _count(row["items"]) or row["items"] == 0:
        return [*problems, f"{where}: items is not a positive whole number"]
    for part in RADRSCORE_PARTS:  # every item counts (an unread one at 0); `_n`: the items whose replies were read
        value, low, high, n = (row[f"{part}{e}"] for e in ("", "_low", "_high", "_n"))
        if not _count(n) or n > row["items"]:
            problems.append(f"{where}: {part}_n is not a whole number from 0 to items")
        elif not all(_fraction(x) for x in (value, low, high)):
            problems.append(f"{where}: {part}, {part}_low and {part}_high must be numbers from 0 to 1")
        elif not low - 1e-9 <= value <= high + 1e-9:
            problems.append(f"{where}: {part} {value} is outside its CI [{low}, {high}]")
    return problems


def _radrscore_problems(block: object) -> list[str]:
    """The `radrscore` part of the RadRBench-CXR file (RadRScore per source and task, where a judge scored it)."""
    if not isinstance(block, dict):
        return ["radrscore: expected null or an object"]
    if not _RADRSCORE_KEYS - _RADRSCORE_OPTIONAL <= set(block) <= _RADRSCORE_KEYS:
        return [f"radrscore: expected the fields {', '.join(sorted(_RADRSCORE_KEYS))}"]
    problems = []
    for key in ("signature", "judged_signature"):
        if key in block and (not isinstance(block[key], str) or not block[key].startswith("radrscore:")
                             or len(block[key]) > 300):
            problems.append(f"radrscore.{key}: expected a radrscore signature")
    if not all(_count(block.get(k, 0)) for k in ("judged", "refused", "unparseable", "cut", "addressed")):
        problems.append("radrscore: judged, refused, unparseable, cut and addressed must be whole numbers")
    if block["judged_mean"] is not None and not _fraction(block["judged_mean"]):
        problems.append("radrscore: judged_mean must be null or a number from 0 to 1")
    problems += _radrscore_rows("rows", block["rows"], 1)
    if "judged_rows" in block:  # a group none of whose items was read has no row here
        problems += _radrscore_rows("judged_rows", block["judged_rows"], 0)
    return problems


def _radrscore_rows(name: str, rows: object, least: int) -> list[str]:
    if not isinstance(rows, list) or not least <= len(rows) <= MAX_RADRBENCH_ROWS:
        return [f"radrscore.{name}: expected a list of {least} to {MAX_RADRBENCH_ROWS} rows"]
    problems = []
    for number, row in enumerate(rows):
        problems += _radrscore_row(f"radrscore.{name}[{number}]", row)
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            return problems
    keys = [(r["source"], r["task"]) for r in rows] if not problems else []
    if keys and (len(set(keys)) != len(keys) or keys.count(("all", "all")) > 1
                 or (name == "rows" and ("all", "all") not in keys)):
        problems.append(f"radrscore.{name}: each (source, task) once, and one row with source and task all")
    return problems


_RATESCORE_ROW = {"source", "task", "items", "ratescore", "low", "high"}


def _ratescore_problems(block: object, rows: list) -> list[str]:
    """The `ratescore` part of the RadRBench-CXR file: RaTEScore of the free-text task per source and over all."""
    if not isinstance(block, dict) or set(block) != {"signature", "rows"}:
        return ["ratescore: expected null or an object with signature and rows"]
    problems = []
    current = f"ratescore:{spec('ratescore').version}|"
    if not isinstance(block["signature"], str) or not block["signature"].startswith(current) \
            or len(block["signature"]) > 300:
        problems.append(f"ratescore.signature: expected a signature of this rexrank's RaTEScore ({current}...)")
    found = block["rows"]
    if not isinstance(found, list) or not 1 <= len(found) <= MAX_RADRBENCH_ROWS:
        return [*problems, f"ratescore.rows: expected a list of 1 to {MAX_RADRBENCH_ROWS} rows"]
    items = {(r["source"], r["task"]): r["items"] for r in rows}
    for number, row in enumerate(found):
        where = f"ratescore.rows[{number}]"
        if not isinstance(row, dict) or set(row) != _RATESCORE_ROW:
            problems.append(f"{where}: expected the fields {', '.join(sorted(_RATESCORE_ROW))}")
            continue
        numbers = [row[k] for k in ("ratescore", "low", "high")]
        if row["task"] != "multi_no_option":
            problems.append(f"{where}: task {_show(row['task'], 40)!r}: RaTEScore is for the free-text task only")
        elif items and items.get((row["source"], row["task"])) != row["items"]:
            problems.append(f"{where}: {_show(row['source'], 40)} has no accuracy row of {row['items']!r} items")
        elif not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in numbers):
            problems.append(f"{where}: ratescore, low and high must be numbers")
        elif not row["low"] - MEAN_SLACK <= row["ratescore"] <= row["high"] + MEAN_SLACK:
            problems.append(f"{where}: ratescore {row['ratescore']} is outside its CI [{row['low']}, {row['high']}]")
    return problems


def check_radrbench(data: bytes) -> dict:
    """`radrbench/radrbench-cxr.accuracy.json` (what `rexrank score-radrbench` writes): parsed with limits, known
    fields only, each row's numbers consistent, one `all` row; its model text bounded. Returns the parsed object."""
    value = parse_json(data, RADRBENCH_JSON)
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}")
    extra = sorted(set(value) - _RADRBENCH_KEYS)
    missing = sorted(_RADRBENCH_KEYS - set(value) - _OPTIONAL_BLOCKS)
    if extra or missing:
        raise InputError("; ".join(p for p in (f"unknown field(s) {_show(', '.join(extra), 80)}" if extra else "",
                                               f"missing {', '.join(missing)}" if missing else "") if p))
    problems = []
    if value["dataset"] != "radrbench-cxr":
        problems.append(f"dataset {_show(value['dataset'], 40)!r}, expected radrbench-cxr")
    model = value["model"]
    if not isinstance(model, str) or not model.strip() or len(model) > 100:
        problems.append("model: expected text of 1 to 100 characters")
    sig = value["signature"]
    if not isinstance(sig, str) or not sig.startswith("radrbench-accuracy:") or len(sig) > 300:
        problems.append("signature: expected a radrbench-accuracy signature")
    elif "|unreadable:wrong" not in sig:
        problems.append(f"signature: answers read by another rule than the board's ({_show(sig, 120)}): score with "
                        "rexrank score-radrbench's default --answer-rule rexrank")
    if not _count(value["missing_outputs"]):
        problems.append("missing_outputs: expected a whole number")
    rows = value["rows"]
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_RADRBENCH_ROWS:
        problems.append(f"rows: expected a list of 1 to {MAX_RADRBENCH_ROWS} rows")
        rows = []
    for number, row in enumerate(rows):
        problems += _radrbench_row(number, row)
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            break
    if not problems:
        keys = [(r["source"], r["task"]) for r in rows]
        if len(set(keys)) != len(keys):
            problems.append("rows: a (source, task) appears more than once")
        if keys.count(("all", "all")) != 1:
            problems.append("rows: expected one row with source and task all")
        elif sum(r["items"] for r in rows if r["source"] != "all" and r["task"] != "multi_no_option") != rows[
                keys.index(("all", "all"))]["items"]:  # the overall row is over the option tasks (issue 46)
            problems.append("rows: the all row's items is not the sum of the per-source rows of the option tasks "
                            "(the free-text task is beside it, not in it)")
    if value.get("radrscore") is not None:
        problems += _radrscore_problems(value["radrscore"])
    if value.get("ratescore") is not None:
        problems += _ratescore_problems(value["ratescore"], rows if not problems else [])
    if problems:
        raise InputError("; ".join(problems[:MAX_PROBLEMS_PER_FILE]))
    return value


