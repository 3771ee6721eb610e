"""Shaping the board for display: pure DataFrame in, DataFrame out (the Space renders; nothing here needs Gradio).
This module shapes the leaderboard's tables (ranked, filtered, exported, the overview and rank ranges); the Model
tab's are `model_page`, the RadRBench-CXR tab's `radrbench`, the About tab's `about`.

Input is `leaderboard.parquet` as the aggregate job writes it (`rexrank.board.schema.COLUMNS`). Text that came from a
submission is sanitised here, once: the `Model` column is markdown (the name escaped, a link only to a safe http(s)
URL), so a name with HTML or markdown in it shows as text; every other column is plain text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from rexrank.board.schema import METRICS, RANK_BY
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
            access = rows["access"].map(as_text).replace("", UNKNOWN)
            keep &= access == self.access
        if self.mimic != ANY:
            keep &= rows["trained_on"].map(trained_on_mimic) == self.mimic
        if self.source != ANY:
            keep &= (rows["provenance"] == "imported") == (self.source == "imported")
        return keep


def trained_on_mimic(trained_on) -> str:
    """yes, no or unknown: whether a card's training data (comma-separated names) includes MIMIC-CXR."""
    names = [t.strip().casefold() for t in as_text(trained_on).split(",") if t.strip()]
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
        **{column: [_cell(sanitize_text(as_text(x), 300)) for x in rows[column]]
           for column in ("model", "institution", "url", "paper", "code", "access", "date", "trained_on")},
        "source": [source(p) for p in rows["provenance"]],
        "note": [_cell(note) for note in _notes(rows)],
    })
    for m in sorted(metrics, key=lambda m: m != RANK_BY):
        for part in ("", "_low", "_high"):
            out[f"{m}{part or '_value'}"] = [as_number(x) for x in rows[f"{m}{part}"]]
    return out.reset_index(drop=True)


DEPARTS = " ≠"  # a verified number made otherwise than the published figures (`rexrank.official.departures`)


def _notes(rows: pd.DataFrame) -> list[str]:
    """Each row's Note: why it is unranked, what its imported file says of it, then how its numbers were made
    otherwise than the published figures; sanitised."""
    departs = ["; ".join(filter(None, map(as_text, cells))) for cells in zip(*(rows[f"{m}_departs"] for m in METRICS))]
    return ["; ".join(_note_part(t) for t in (as_text(u), as_text(n), d and f"≠ published: {d}") if t)
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
        "Model": [model_cell(as_text(m), as_text(u)) for m, u in zip(rows["model"], rows["url"])],
    })
    numbers = out.copy()
    numbers["Rank"] = [None if pd.isna(r) else int(r) for r in rows["rank"]]
    for m in sorted(metrics, key=lambda m: m != RANK_BY):  # the ranking column first, in sight; then ReXrank's order
        out[TITLES[m]] = [value_with_ci(as_number(v), as_number(lo), as_number(hi))
                          + (DEPARTS if as_text(d) and as_number(v) is not None else "")
                          for v, lo, hi, d in zip(rows[m], rows[f"{m}_low"], rows[f"{m}_high"], rows[f"{m}_departs"])]
        numbers[TITLES[m]] = [None if (x := as_number(v)) is None else round(x, BOARD_DECIMALS) for v in rows[m]]
    if details:
        more = {"Institution": [sanitize_text(as_text(i), 200) for i in rows["institution"]],
                "Access": [ACCESS.get(as_text(a), UNKNOWN) for a in rows["access"]],
                "Date": [sanitize_text(as_text(d), 40) for d in rows["date"]],
                "Trained on": [sanitize_text(as_text(t), 200) for t in rows["trained_on"]],
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
    return " · ".join(f"[{label}]({url})" for label, url in (("paper", safe_url(as_text(paper))),
                                                              ("code", safe_url(as_text(code)))) if url)


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


def compare_choices(board: pd.DataFrame, dataset: str, task: str) -> list[str]:
    """The Compare tab's models on one dataset and task: those it can compare (verified, with a per-study table)
    best rank first, then the rest by name (choosing one says why it cannot be compared)."""
    rows = board[(board["dataset"] == dataset) & (board["task"] == task) & board["model"].notna()]
    comparable = rows["per_study_sha256"].notna()
    first = rows[comparable].sort_values(["rank", "model"], na_position="last")["model"].astype(str)
    names = list(dict.fromkeys(first))
    return names + sorted(set(rows["model"].astype(str)) - set(names))


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


def as_text(x) -> str:
    return "" if x is None or (not isinstance(x, str) and pd.isna(x)) else str(x)


def as_number(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)
