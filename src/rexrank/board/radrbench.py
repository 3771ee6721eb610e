"""The RadRBench-CXR tab: accuracy per task type or per source and task, RadRScore's reasoning view, and a model's
bars (`radrbench.parquet` in, DataFrames out)."""

from __future__ import annotations

import json

import pandas as pd

from rexrank.board.schema import RADRBENCH_COLUMNS
from rexrank.board.views import as_number, ci_column, model_cell
from rexrank.text import sanitize_text

# RadRBench-CXR's task types and sources, as the tab names them (others show under their own name).
RADRBENCH_TASKS = {"binary": "Binary", "single": "Single choice", "multi": "Multiple choice",
                   "multi_no_option": "Multi, no options", "temporal": "Temporal"}
RADRBENCH_SOURCES = {"mimic-cxr": "MIMIC-CXR", "chexpert": "CheXpert", "rsna": "RSNA", "siim": "SIIM",
                     "ms-cxr-t": "MS-CXR-T", "iu-xray": "IU-Xray"}
RADRBENCH_VIEWS = {"task": "Task type (all sources)", "source": "Source and task",
                   "radrscore": "Reasoning (RadRScore)"}
RADRSCORE_COLUMNS = {"radrscore": "RadRScore", "completeness": "Rc (completeness)",
                     "factuality": "Rf (factuality)", "effectiveness": "Re (effectiveness)"}


def _radrbench_column(source: str, task: str) -> str:
    name = RADRBENCH_TASKS.get(task, sanitize_text(task, 40))
    return name if source == "all" else f"{RADRBENCH_SOURCES.get(source, sanitize_text(source, 40))} · {name}"


FREE_TEXT = "Free text (RaTEScore)"
NONE = (None, None, None)  # a cell with no number: blank


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Each column of (value, low, high) cells as text, one CI notation a column (`views.ci_column`)."""
    for column in frame.columns:
        if any(isinstance(cell, tuple) for cell in frame[column]):
            frame[column] = ci_column(cell if isinstance(cell, tuple) else NONE for cell in frame[column])
    return frame


def radrbench_table(table: pd.DataFrame, view: str = "task", search: str = "") -> pd.DataFrame:
    """RadRBench-CXR accuracy (`radrbench.parquet`), one row per model ranked by overall accuracy: `Overall`, then a
    column per task type (view "task": over every source) or per source and task (view "source"), each
    `accuracy ± half-CI`; in the task view, the free-text task's RaTEScore where submissions carry it; `Items`,
    `Unreadable` (answers the parser could not read, counted wrong). Cells are text that sorts as numbers do (every
    accuracy is in [0, 1] with the same decimals)."""
    if view not in RADRBENCH_VIEWS:
        raise ValueError(f"view {view!r}: expected one of {', '.join(RADRBENCH_VIEWS)}")
    table = table.reindex(columns=list(RADRBENCH_COLUMNS))
    if search:
        needle = search.lower()
        table = table[table["model"].fillna("").str.lower().str.contains(needle, regex=False)
                      | table["institution"].fillna("").str.lower().str.contains(needle, regex=False)]
    overall = table[(table["source"] == "all") & (table["task"] == "all")].sort_values(
        ["accuracy", "model"], ascending=[False, True], kind="stable")
    if view == "radrscore":
        return _radrscore_table(overall)
    keep = (table["source"] == "all") if view == "task" else (table["source"] != "all")
    parts = table[keep & (table["task"] != "all")]
    task_order = {t: i for i, t in enumerate(RADRBENCH_TASKS)}
    source_order = {s: i for i, s in enumerate(RADRBENCH_SOURCES)}
    columns = sorted({(s, t) for s, t in zip(parts["source"], parts["task"])},
                     key=lambda st: (source_order.get(st[0], 99), st[0], task_order.get(st[1], 99), st[1]))
    free_text = view == "task" and pd.to_numeric(parts["ratescore"], errors="coerce").notna().any()
    out = []
    for position, (_, row) in enumerate(overall.iterrows(), 1):
        mine = parts[parts["submission"] == row["submission"]].set_index(["source", "task"])
        failures = json.loads(row["failures"]) if isinstance(row["failures"], str) else {}
        shown = {"Rank": position, "Model": model_cell(row["model"], row["url"]),
                 "Institution": sanitize_text(row["institution"] or "", 100),
                 "Overall": (row["accuracy"], row["low"], row["high"])}
        for source, task in columns:
            cell = mine.loc[(source, task)] if (source, task) in mine.index else None
            shown[_radrbench_column(source, task)] = NONE if cell is None else (
                cell["accuracy"], cell["low"], cell["high"])
        free = mine.loc[("all", "multi_no_option")] if ("all", "multi_no_option") in mine.index else None
        if free_text:  # the free-text task's RaTEScore over every source, beside its exact-match accuracy
            shown[FREE_TEXT] = NONE if free is None else (free["ratescore"], free["ratescore_low"],
                                                          free["ratescore_high"])
        shown["Items"] = int(row["items"])
        shown["Unreadable"] = int(sum(v for v in failures.values() if isinstance(v, int)))
        out.append(shown)
    names = ["Rank", "Model", "Institution", "Overall", *(_radrbench_column(s, t) for s, t in columns),
             *([FREE_TEXT] if free_text else []), "Items", "Unreadable"]
    return _as_text(pd.DataFrame(out, columns=names))


def _radrscore_table(overall: pd.DataFrame) -> pd.DataFrame:
    """The reasoning view: a row per model (its all-sources row), ranked by RadRScore (models not judged last, blank),
    RadRScore and its three components with 95% CIs, the items judged, and the overall accuracy beside them."""
    overall = overall.sort_values("radrscore", ascending=False, na_position="last", kind="stable",
                                  key=lambda v: pd.to_numeric(v, errors="coerce"))
    out = []
    for _, row in overall.iterrows():
        judged = as_number(row["radrscore"]) is not None
        shown = {"Rank": len(out) + 1 if judged else "", "Model": model_cell(row["model"], row["url"]),
                 "Institution": sanitize_text(row["institution"] or "", 100)}
        for name, title in RADRSCORE_COLUMNS.items():
            shown[title] = tuple(row[f"{name}{part}"] for part in ("", "_low", "_high"))
        shown["Judged items"] = "" if pd.isna(row["radrscore_items"]) else str(int(row["radrscore_items"]))
        shown["Accuracy"] = (row["accuracy"], row["low"], row["high"])
        out.append(shown)
    names = ["Rank", "Model", "Institution", *RADRSCORE_COLUMNS.values(), "Judged items", "Accuracy"]
    return _as_text(pd.DataFrame(out, columns=names)).astype({"Rank": str})


def radrbench_bars(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's accuracy per task type (over every source): task, accuracy, err_low, err_high (for CI whiskers)."""
    mine = table[(table["model"] == model) & (table["source"] == "all") & (table["task"] != "all")]
    order = {t: i for i, t in enumerate(RADRBENCH_TASKS)}
    mine = mine.sort_values("task", key=lambda t: t.map(lambda x: order.get(x, 99)))
    return pd.DataFrame({"task": [RADRBENCH_TASKS.get(t, t) for t in mine["task"]],
                         "accuracy": mine["accuracy"].astype(float).to_numpy(),
                         "err_low": (mine["accuracy"] - mine["low"]).astype(float).to_numpy(),
                         "err_high": (mine["high"] - mine["accuracy"]).astype(float).to_numpy()})
