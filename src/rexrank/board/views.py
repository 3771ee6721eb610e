"""Shaping the board for display: pure DataFrame in, DataFrame out (the Space renders; nothing here needs Gradio).

Input is `leaderboard.parquet` as the aggregate job writes it (`rexrank.board.schema.COLUMNS`). Text that came from a
submission is sanitised here, once: the `Model` column is markdown (the name escaped, a link only to a safe http(s)
URL), so a name with HTML or markdown in it shows as text; every other column is plain text.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from rexrank.board.schema import METRICS, RADRBENCH_COLUMNS, RANK_BY
from rexrank.catalog import ACCESS, BOARD_METRICS, TASK_TITLES, TEST_SETS
from rexrank.results import BOARD_DECIMALS
from rexrank.text import safe_url, sanitize_text, to_markdown

DATASETS = {name: t.title for name, t in TEST_SETS.items()}
TASKS = TASK_TITLES
TITLES = {m.name: m.title for m in BOARD_METRICS}  # as ReXrank's tables name them


def value_with_ci(value: float | None, low: float | None, high: float | None,
                  decimals: int = BOARD_DECIMALS) -> str:
    """`0.919 ± 0.020` (half the CI's width; `[lo, hi]` when it is not symmetric to rounding); blank when missing,
    never 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = f"{value:.{decimals}f}"
    if low is None or high is None or any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return text
    below, above = value - low, high - value
    if abs(below - above) < 0.5 * 10 ** -decimals:
        return f"{text} ± {(below + above) / 2:.{decimals}f}"
    return f"{text} [{low:.{decimals}f}, {high:.{decimals}f}]"


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
                 "Overall": value_with_ci(_num(row["accuracy"]), _num(row["low"]), _num(row["high"]))}
        for source, task in columns:
            cell = mine.loc[(source, task)] if (source, task) in mine.index else None
            shown[_radrbench_column(source, task)] = "" if cell is None else value_with_ci(
                _num(cell["accuracy"]), _num(cell["low"]), _num(cell["high"]))
        free = mine.loc[("all", "multi_no_option")] if ("all", "multi_no_option") in mine.index else None
        if free_text:  # the free-text task's RaTEScore over every source, beside its exact-match accuracy
            shown[FREE_TEXT] = "" if free is None else value_with_ci(
                _num(free["ratescore"]), _num(free["ratescore_low"]), _num(free["ratescore_high"]))
        shown["Items"] = int(row["items"])
        shown["Unreadable"] = int(sum(v for v in failures.values() if isinstance(v, int)))
        out.append(shown)
    names = ["Rank", "Model", "Institution", "Overall", *(_radrbench_column(s, t) for s, t in columns),
             *([FREE_TEXT] if free_text else []), "Items", "Unreadable"]
    return pd.DataFrame(out, columns=names)


def _radrscore_table(overall: pd.DataFrame) -> pd.DataFrame:
    """The reasoning view: a row per model (its all-sources row), ranked by RadRScore (models not judged last, blank),
    RadRScore and its three components with 95% CIs, the items judged, and the overall accuracy beside them."""
    overall = overall.sort_values("radrscore", ascending=False, na_position="last", kind="stable",
                                  key=lambda v: pd.to_numeric(v, errors="coerce"))
    out = []
    for _, row in overall.iterrows():
        judged = _num(row["radrscore"]) is not None
        shown = {"Rank": len(out) + 1 if judged else "", "Model": model_cell(row["model"], row["url"]),
                 "Institution": sanitize_text(row["institution"] or "", 100)}
        for name, title in RADRSCORE_COLUMNS.items():
            shown[title] = value_with_ci(_num(row[name]), _num(row[f"{name}_low"]), _num(row[f"{name}_high"]))
        shown["Judged items"] = "" if pd.isna(row["radrscore_items"]) else str(int(row["radrscore_items"]))
        shown["Accuracy"] = value_with_ci(_num(row["accuracy"]), _num(row["low"]), _num(row["high"]))
        out.append(shown)
    names = ["Rank", "Model", "Institution", *RADRSCORE_COLUMNS.values(), "Judged items", "Accuracy"]
    return pd.DataFrame(out, columns=names).astype({"Rank": str})


def radrbench_bars(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's accuracy per task type (over every source): task, accuracy, err_low, err_high (for CI whiskers)."""
    mine = table[(table["model"] == model) & (table["source"] == "all") & (table["task"] != "all")]
    order = {t: i for i, t in enumerate(RADRBENCH_TASKS)}
    mine = mine.sort_values("task", key=lambda t: t.map(lambda x: order.get(x, 99)))
    return pd.DataFrame({"task": [RADRBENCH_TASKS.get(t, t) for t in mine["task"]],
                         "accuracy": mine["accuracy"].astype(float).to_numpy(),
                         "err_low": (mine["accuracy"] - mine["low"]).astype(float).to_numpy(),
                         "err_high": (mine["high"] - mine["accuracy"]).astype(float).to_numpy()})


def model_cell(name: str, url: str | None) -> str:
    """The model's name as markdown text, a link only to a safe http(s) URL."""
    text = to_markdown(name or "", 100)
    link = safe_url(url) if url else None
    return f"[{text}]({link})" if link else text


VERIFIED, PUBLISHED = "verified", "as published, no CI"
DETAILS = ("Institution", "Access", "Date", "Trained on", "Links", "Source", "Note")  # behind the Details toggle

ANY, UNKNOWN = "any", "unknown"
ACCESS_FILTER = {ANY: "any", **ACCESS, UNKNOWN: "unknown"}  # how the model can be had, as its card says
MIMIC_FILTER = {ANY: "any", "yes": "yes", "no": "no", UNKNOWN: "unknown"}  # trained on MIMIC-CXR, as its card says
SOURCE_FILTER = {ANY: "any", "verified": VERIFIED, "imported": PUBLISHED}


@dataclass(frozen=True)
class Filters:
    """Which rows a view keeps: by `access` (ACCESS_FILTER), by whether the card says the model was trained on
    MIMIC-CXR (`mimic`: a card that names no training data is unknown, as every imported row is) and by where the
    numbers come from (`source`: verified by rexrank or imported as published). A value it does not know is refused:
    it comes from a link or the API."""

    access: str = ANY
    mimic: str = ANY
    source: str = ANY

    def __post_init__(self):
        for name, allowed in (("access", ACCESS_FILTER), ("mimic", MIMIC_FILTER), ("source", SOURCE_FILTER)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} {getattr(self, name)!r}: expected one of {', '.join(allowed)}")

    def keep(self, rows: pd.DataFrame) -> pd.Series:
        keep = pd.Series(True, index=rows.index)
        if self.access != ANY:
            access = rows["access"].map(_text).replace("", UNKNOWN)
            keep &= access == self.access
        if self.mimic != ANY:
            keep &= rows["trained_on"].map(trained_on_mimic) == self.mimic
        if self.source != ANY:
            keep &= (rows["provenance"] == "imported") == (self.source == "imported")
        return keep


def trained_on_mimic(trained_on) -> str:
    """yes, no or unknown: whether a card's training data (comma-separated names) includes MIMIC-CXR."""
    names = [t.strip().casefold() for t in _text(trained_on).split(",") if t.strip()]
    return UNKNOWN if not names else "yes" if any("mimic" in t for t in names) else "no"


def _view(board: pd.DataFrame, dataset: str, task: str, search: str = "", sort_by: str | None = None,
          filters: Filters = Filters()) -> pd.DataFrame:
    """The board's rows of one dataset and task that the search and filters keep, in the order the table shows."""
    if sort_by not in (None, "", "rank", *METRICS):
        raise ValueError(f"sort_by {sort_by!r}: expected rank or one of {', '.join(METRICS)}")
    rows = board[(board["dataset"] == dataset) & (board["task"] == task)]
    rows = rows[filters.keep(rows)]
    if search.strip():
        needle = search.strip().casefold()
        hay = (rows["model"].fillna("") + " " + rows["institution"].fillna("")).str.casefold()
        rows = rows[hay.str.contains(needle, regex=False)]
    rows = rows.sort_values(["rank", RANK_BY], ascending=[True, False], na_position="last")
    if sort_by in METRICS:
        rows = rows.sort_values(sort_by, ascending=False, na_position="last", kind="stable",
                                key=lambda v: pd.to_numeric(v, errors="coerce"))
    return rows


def export(board: pd.DataFrame, dataset: str, task: str, search: str = "", metrics: tuple[str, ...] = METRICS,
           sort_by: str | None = None, filters: Filters = Filters()) -> pd.DataFrame:
    """The table's view as numbers, for a CSV: the rows `table` shows, in its order, with the dataset, task, rank,
    model and its facts, then per chosen metric its value and 95% CI bounds (blank where there are none, as for an
    imported row). Text is plain (no markdown), sanitised; a cell that a spreadsheet would run as a formula (=, +, -,
    @ first) is quoted with a leading apostrophe."""
    rows = _view(board, dataset, task, search, sort_by, filters)
    out = pd.DataFrame({
        "dataset": dataset, "task": task,
        "rank": pd.array([None if pd.isna(r) else int(r) for r in rows["rank"]], dtype="Int64"),
        **{column: [_cell(sanitize_text(_text(x), 300)) for x in rows[column]]
           for column in ("model", "institution", "url", "paper", "code", "access", "date", "trained_on")},
        "source": [source(p) for p in rows["provenance"]],
        "note": [_cell(note) for note in _notes(rows)],
    })
    for m in sorted(metrics, key=lambda m: m != RANK_BY):
        for part in ("", "_low", "_high"):
            out[f"{m}{part or '_value'}"] = [_num(x) for x in rows[f"{m}{part}"]]
    return out.reset_index(drop=True)


DEPARTS = " ≠"  # a verified number made otherwise than the published figures (`rexrank.official.departures`)


def _notes(rows: pd.DataFrame) -> list[str]:
    """Each row's Note: why it is unranked, what its imported file says of it, then how its numbers were made
    otherwise than the published figures; sanitised."""
    departs = ["; ".join(filter(None, map(_text, cells))) for cells in zip(*(rows[f"{m}_departs"] for m in METRICS))]
    return ["; ".join(_note_part(t) for t in (_text(u), _text(n), d and f"≠ published: {d}") if t)
            for u, n, d in zip(rows["unranked"], rows["note"], departs)]


@lru_cache(maxsize=4096)  # notes repeat from row to row (the same reason, the same judge): cleaned once each
def _note_part(text: str) -> str:
    return sanitize_text(text, 300)


def _cell(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def table(board: pd.DataFrame, dataset: str, task: str, search: str = "", metrics: tuple[str, ...] = METRICS,
          sort_by: str | None = None, details: bool = True, filters: Filters = Filters()) -> pd.DataFrame:
    """One dataset and task, ranked by 1/RadCliQ-v1 (unranked rows last, with the reason), filtered by a search
    over model and institution and by `filters`: Rank, Rank range, Model, the ranking metric, the other chosen
    metrics as
    `value ± CI`, then (with `details`) the DETAILS columns. `sort_by` a metric orders the rows by its number
    instead, best first (every column is higher-is-better), blanks last, ties by rank; `Rank` stays the
    1/RadCliQ-v1 rank. The cells are text; `attrs["numbers"]` holds the same rows with each metric cell and the
    rank as a number (None when blank), for a display that sorts them as numbers."""
    rows = _view(board, dataset, task, search, sort_by, filters)
    ranges = rank_ranges(board, dataset, task)  # over every ranked row of the dataset and task, not the search's
    out = pd.DataFrame({
        "Rank": [("" if pd.isna(r) else str(int(r))) for r in rows["rank"]],
        "Rank range": [ranges["Rank range"].get(i, "") for i in rows.index],
        "Model": [model_cell(_text(m), _text(u)) for m, u in zip(rows["model"], rows["url"])],
    })
    numbers = out.copy()
    numbers["Rank"] = [None if pd.isna(r) else int(r) for r in rows["rank"]]
    for m in sorted(metrics, key=lambda m: m != RANK_BY):  # the ranking column first, in sight; then ReXrank's order
        out[TITLES[m]] = [value_with_ci(_num(v), _num(lo), _num(hi)) + (DEPARTS if _text(d) and _num(v) is not None
                                                                        else "")
                          for v, lo, hi, d in zip(rows[m], rows[f"{m}_low"], rows[f"{m}_high"], rows[f"{m}_departs"])]
        numbers[TITLES[m]] = [None if (x := _num(v)) is None else round(x, BOARD_DECIMALS) for v in rows[m]]
    if details:
        more = {"Institution": [sanitize_text(_text(i), 200) for i in rows["institution"]],
                "Access": [ACCESS.get(_text(a), UNKNOWN) for a in rows["access"]],
                "Date": [sanitize_text(_text(d), 40) for d in rows["date"]],
                "Trained on": [sanitize_text(_text(t), 200) for t in rows["trained_on"]],
                "Links": [links(p, c) for p, c in zip(rows["paper"], rows["code"])],
                "Source": [source(p) for p in rows["provenance"]],
                "Note": _notes(rows)}
        for column, cells in more.items():
            out[column] = numbers[column] = cells
    out = out.reset_index(drop=True)
    out.attrs["numbers"] = numbers.to_numpy(dtype=object).tolist()  # plain rows: attrs travel with copies
    return out


def links(paper, code) -> str:
    """A row's paper and code as markdown links (only safe http(s) URLs are links; nothing else is shown)."""
    return " · ".join(f"[{label}]({url})" for label, url in (("paper", safe_url(_text(paper))),
                                                              ("code", safe_url(_text(code)))) if url)


def overview(board: pd.DataFrame, task: str) -> pd.DataFrame:
    """Models across datasets for one task: each dataset's rank, and the mean rank over the datasets a model is
    ranked on (fewer datasets rank lower on ties)."""
    rows = board[(board["task"] == task) & board["rank"].notna()]
    wide = rows.pivot_table(index="model", columns="dataset", values="rank", aggfunc="min")
    wide = wide.reindex(columns=[d for d in DATASETS if d in wide.columns])
    summary = pd.DataFrame({"Model": [to_markdown(m, 100) for m in wide.index],
                            "Mean rank": wide.mean(axis=1).round(2).to_numpy(),
                            "Datasets": wide.notna().sum(axis=1).to_numpy()})
    for d in wide.columns:
        summary[DATASETS[d]] = ["" if pd.isna(r) else str(int(r)) for r in wide[d]]
    return summary.sort_values(["Mean rank", "Datasets", "Model"], ascending=[True, False, True]).reset_index(drop=True)


def model_scores(board: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's numbers in long form (dataset, task, metric, value, low, high) for its bars and CI whiskers."""
    rows = board[board["model"] == model]
    records = [{"dataset": DATASETS.get(r["dataset"], r["dataset"]), "task": TASKS.get(r["task"], r["task"]),
                "metric": TITLES[m], "value": _num(r[m]), "low": _num(r[f"{m}_low"]), "high": _num(r[f"{m}_high"])}
               for _, r in rows.iterrows() for m in METRICS if _num(r[m]) is not None]
    return pd.DataFrame(records, columns=["dataset", "task", "metric", "value", "low", "high"])


def model_names(board: pd.DataFrame, radrbench: pd.DataFrame | None = None) -> list[str]:
    """The models on the board, best mean rank first (unranked-only models last, then by name), then those only on
    the RadRBench-CXR table, by name: the Model tab's choices."""
    models = board["model"].dropna().astype(str)
    ranks = pd.to_numeric(board.loc[models.index, "rank"], errors="coerce").astype(float)
    mean_rank = ranks.groupby(models).mean().fillna(math.inf)
    names = sorted(models.unique(), key=lambda m: (mean_rank[m], m))
    reasoning = [] if radrbench is None else radrbench["model"].dropna().astype(str).unique()
    return names + sorted(set(reasoning) - set(names))


def compare_choices(board: pd.DataFrame, dataset: str, task: str) -> list[str]:
    """The Compare tab's models on one dataset and task: those it can compare (verified, with a per-study table)
    best rank first, then the rest by name (choosing one says why it cannot be compared)."""
    rows = board[(board["dataset"] == dataset) & (board["task"] == task) & board["model"].notna()]
    comparable = rows["per_study_sha256"].notna()
    first = rows[comparable].sort_values(["rank", "model"], na_position="last")["model"].astype(str)
    names = list(dict.fromkeys(first))
    return names + sorted(set(rows["model"].astype(str)) - set(names))


def model_bars(board: pd.DataFrame, model: str) -> pd.DataFrame:
    """`model_scores` ready to plot: ordered by metric (ReXrank's order), dataset and task, with `group` (the bar's
    label, dataset and task) and the whiskers' lengths `err_low`/`err_high` (NaN where the number has no CI)."""
    bars = model_scores(board, model)
    order = {"metric": list(TITLES.values()), "dataset": list(DATASETS.values()), "task": list(TASKS.values())}
    for column, labels in order.items():
        bars[column] = pd.Categorical(bars[column], [*labels, *sorted(set(bars[column]) - set(labels))], ordered=True)
    bars = bars.sort_values(["metric", "dataset", "task"]).reset_index(drop=True)
    for column in ("metric", "dataset", "task"):
        bars[column] = bars[column].astype(str)
    bars["group"] = bars["dataset"] + " · " + bars["task"]
    bars["err_low"] = (bars["value"] - bars["low"]).astype(float)
    bars["err_high"] = (bars["high"] - bars["value"]).astype(float)
    return bars


def model_numbers(bars: pd.DataFrame) -> pd.DataFrame:
    """A model's bars as a table to read: a row per dataset and task, a `value ± CI` column per metric."""
    if bars.empty:
        return pd.DataFrame(columns=["Dataset", "Task"])
    text = bars.assign(text=[value_with_ci(v, lo, hi) for v, lo, hi in zip(bars["value"], bars["low"], bars["high"])])
    wide = text.pivot_table(index=["dataset", "task"], columns="metric", values="text", aggfunc="first", sort=False)
    wide = wide.reindex(columns=[t for t in TITLES.values() if t in wide.columns]).fillna("")
    return wide.reset_index().rename(columns={"dataset": "Dataset", "task": "Task"}).rename_axis(columns=None)


def model_card(board: pd.DataFrame, model: str, radrbench: pd.DataFrame | None = None) -> str:
    """A model's card facts as safe markdown: name, institution, link (a safe http(s) URL only), date, trained-on,
    and where its numbers come from (verified, imported; or the RadRBench-CXR table alone)."""
    rows = board[board["model"] == model]
    reasoning = None if radrbench is None else radrbench[radrbench["model"] == model]
    if rows.empty and (reasoning is None or reasoning.empty):
        return "No model chosen." if not model else f"No numbers for **{to_markdown(model, 100)}** on this board."
    if rows.empty:  # the RadRBench-CXR table carries the card's name, institution, link and date
        rows = reasoning.assign(trained_on=None)
        numbers = "RadRBench-CXR only"
    else:
        sources = sorted({source(p) for p in rows["provenance"]}, key=lambda s: s != VERIFIED)
        numbers = f"{', '.join(sources)}, on {len(rows)} dataset and task pair{'s' * (len(rows) != 1)}"

    def facts(column: str) -> list[str]:
        return list(dict.fromkeys(t for t in (sanitize_text(_text(x), 200) for x in rows[column]) if t))

    url = next((u for u in (safe_url(_text(x)) for x in rows["url"]) if u), None)
    paper = next((u for u in (safe_url(_text(x)) for x in rows.get("paper", [])) if u), None)  # `--paper`
    code = next((u for u in (safe_url(_text(x)) for x in rows.get("code", [])) if u), None)  # `--code`
    access = next((ACCESS[a] for a in map(_text, rows.get("access", [])) if a in ACCESS), UNKNOWN)
    lines = [f"### {to_markdown(model, 100)}",
             f"- **Institution:** {', '.join(to_markdown(t) for t in facts('institution')) or '—'}",
             f"- **URL:** {f'[{to_markdown(url, 300)}]({url})' if url else '—'}",
             f"- **Paper:** {f'[{to_markdown(paper, 300)}]({paper})' if paper else '—'}",
             f"- **Code:** {f'[{to_markdown(code, 300)}]({code})' if code else '—'}",
             f"- **Access:** {access}",
             f"- **Date:** {', '.join(to_markdown(t) for t in facts('date')) or '—'}",
             f"- **Trained on:** {', '.join(to_markdown(t) for t in facts('trained_on')) or '—'}",
             f"- **Numbers:** {numbers}"]
    return "\n".join(lines)


def rank_ranges(board: pd.DataFrame, dataset: str, task: str) -> pd.DataFrame:
    """How stable each ranked row's rank is, from the 95% CIs of 1/RadCliQ-v1 (higher is better) on one dataset and
    task: `best` = 1 + the rows whose low bound is above its high bound (certainly better), `worst` = the rows whose
    high bound is at or above its low bound (itself included: those it cannot be told apart from, and the better).
    A number without a CI (an imported row) is its own interval, and `ci` is False. Indexed like `board`; `Rank
    range` is `2` or `1–3`."""
    rows = board[(board["dataset"] == dataset) & (board["task"] == task) & board["rank"].notna()]
    value = pd.to_numeric(rows[RANK_BY], errors="coerce").astype(float)
    low = pd.to_numeric(rows[f"{RANK_BY}_low"], errors="coerce").astype(float).fillna(value)
    high = pd.to_numeric(rows[f"{RANK_BY}_high"], errors="coerce").astype(float).fillna(value)
    lows, highs = np.sort(low.to_numpy()), np.sort(high.to_numpy())
    best = 1 + len(lows) - np.searchsorted(lows, high.to_numpy(), side="right")  # lows strictly above my high
    worst = len(highs) - np.searchsorted(highs, low.to_numpy(), side="left")  # highs at or above my low
    out = pd.DataFrame({"model": rows["model"], "rank": pd.to_numeric(rows["rank"]).astype("Int64"),
                        "value": value, "low": low, "high": high, "best": best, "worst": worst}, index=rows.index)
    out["Rank range"] = [str(b) if b == w else f"{b}–{w}" for b, w in zip(out["best"], out["worst"])]
    out["ci"] = rows[f"{RANK_BY}_low"].notna() & rows[f"{RANK_BY}_high"].notna()  # False: as published, no CI
    return out.sort_values(["rank", "value"], ascending=[True, False])


def source(provenance: str) -> str:
    """A row's Source: scored by rexrank (verified), or ReXrank's published figure, imported."""
    return PUBLISHED if provenance == "imported" else VERIFIED


def _text(x) -> str:
    return "" if x is None or (not isinstance(x, str) and pd.isna(x)) else str(x)


def _num(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def metric_tooltips() -> dict[str, str]:
    """Each board metric's column title -> its hover text, from the metric registry: what it measures, that higher
    is better, and where docs/metrics.md defines it."""
    from rexrank.scorers import metric_class

    tips = {}
    for metric in BOARD_METRICS:
        cls = metric_class(metric.name)
        inverse = " Shown as 1/mean, so that higher is better too." if metric.title.startswith("1/") else ""
        tips[metric.title] = (f"{cls.summary} Higher is better.{inverse} Definition: docs/metrics.md {cls.section}; "
                              "the About tab has the metric table.")
    return tips


def header_tooltips_script() -> str:
    """A `<script>` for the page's head that gives each metric column header its `metric_tooltips` text on hover
    (Gradio's tables have no header tooltips of their own). The text is the registry's, JSON-encoded with `<`
    escaped, so nothing in it can close the script."""
    tips = json.dumps(metric_tooltips()).replace("<", "\\u003c")
    return ("<script>(() => { const tips = " + tips + ";\n"
            "const mark = () => document.querySelectorAll('.board th').forEach(th => {\n"
            "  const name = Object.keys(tips).find(k => th.textContent.trim().startsWith(k));\n"
            "  if (name && th.title !== tips[name]) th.title = tips[name]; });\n"
            "new MutationObserver(mark).observe(document.documentElement, {childList: true, subtree: true});\n"
            "})();</script>")


def about() -> str:
    """The About tab: how rows are ranked, then a row per board metric from the metric registry (what it measures,
    what an empty prediction scores, where docs/metrics.md defines it), then what a signature is, with a real one."""
    from rexrank.scorers import metric_class
    from rexrank.scorers.bleu import Bleu2

    rows = []
    for metric in BOARD_METRICS:
        cls = metric_class(metric.name)
        rows.append(f"| {metric.title} | {cls.summary} | {cls.empty_prediction} | docs/metrics.md {cls.section} |")
    example = Bleu2(progress=False).signature().with_bootstrap(1000, 0)
    return "\n".join([
        "### Ranking",
        "Rows are ranked within each dataset and task by **1/RadCliQ-v1** (higher is better); **Sort by** orders them "
        "by another metric's number, best first, blanks last (the rank stays the 1/RadCliQ-v1 rank). Numbers are "
        "means over the test split's studies with a 95% bootstrap CI (`value ± half-width`, or `[low, high]` when "
        "not symmetric); a blank cell is a metric that was not reported, never 0. **verified** rows were scored by "
        "rexrank (each number carries a signature); rows **as published, no CI** are ReXrank's official figures "
        "(rexrank.ai, 2025-09, Zhang et al.), imported unchanged: no CIs, no signatures, no per-study scores. Where a "
        "published 1/RadCliQ-v1 lies outside what its own rounded components imply, **Note** says so.",
        "",
        "**Rank range** is how far a rank could move given the 1/RadCliQ-v1 CIs: the best is 1 + the models whose CI "
        "lies wholly above this one's, the worst the number of models whose CI reaches this one's low bound (itself "
        "included). A range like `1–2` means the neighbours are statistically indistinguishable (an imported "
        "number, without a CI, counts as its own interval).",
        "",
        "### Metrics",
        "| Metric | What it measures | An empty prediction scores | Defined in |",
        "|---|---|---|---|",
        *rows,
        "",
        "### Signatures",
        "Every verified number carries a signature in the manner of sacrebleu: the metric and its version, the model "
        "weights at their commit, the settings that change the number, the bootstrap and the package version, e.g. "
        f"BLEU-2's `{example}`. RadCliQ-v1's names each of its components'. Two numbers made with different "
        "RadCliQ-v1 settings are never ranked together: such a row is listed unranked with the reason in **Note**. "
        "A verified number made otherwise than the published figures were (in another precision than fp32, with "
        "weights other than the pinned ones, GREEN by another model than GREEN-RadLlama2-7b, FineRadScore without "
        "the reference's few-shot examples or by a judge that is not a GPT-4 model) is marked **≠**, and **Note** "
        "says how: beside an imported row it is not the same measure.",
    ])
