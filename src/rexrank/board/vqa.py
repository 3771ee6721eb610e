"""The VQA tab's data (ReXVQA, ReXrank Challenge V2.0's VQA track), testable without Gradio: ReXrank's published table
as rexrank ships it (`rexrank.vqa.official.shipped()`: 4 decimals, no CI, "as published") beside the rows the
maintainers' job generated (`submissions/<id>/vqa/rexvqa.vqa.<split>.json` in a results repo, as
`rexrank.backend.vqa` commits them: `rexrank.vqa.score`'s result record with the card's institution, URL and
provenance), one row per model and question set; and the tab's table, a model's section of the Model tab."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pandas as pd

from rexrank.board.views import SOURCES, _cell, as_text, ci_column, model_cell, source_title
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.results import BOARD_DECIMALS
from rexrank.rules.layout import CARD, SUBMISSIONS
from rexrank.text import sanitize_text
from rexrank.vqa import TASK
from rexrank.vqa.dataset import NAME as DATASET

FOLDER = "vqa"  # a submission's VQA results in the results repo (rexrank.rules.layout on the VQA job's branch)
OVERALL = "overall"  # a result's row over every question (rexrank.vqa.score.OVERALL)
PUBLISHED_DECIMALS = 4  # ReXrank's VQA table's figures
MAX_BYTES = 1 << 20
COLUMNS = ("submission", "model", "institution", "url", "split", "provenance", "questions", "failed_extractions",
           "signature", "note", *(f"{c}{end}" for c in (OVERALL, *VQA_CATEGORIES) for end in ("", "_low", "_high")))
# The tab's columns: each category as ReXrank's table heads it; sorting keys as the address and the API name them.
SORTS = {"overall": "Overall", **{c.split()[0].lower(): c for c in VQA_CATEGORIES},
         "failed": "Failed extractions (fewest first)"}
SORT_COLUMN = {"overall": OVERALL, **{c.split()[0].lower(): c for c in VQA_CATEGORIES}}
SOURCE_FILTER = {"any": "any", "generated": SOURCES["generated"], "published": SOURCES["imported"]}
KEPT = {"generated": ("generated",), "published": ("imported",)}
SPLIT_TITLES = {VQA_PRIVATE["split"]: f"private (ReXrank Challenge V2.0, {VQA_PRIVATE['questions']:,} questions)"}


def _number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def official_rows() -> list[dict]:
    """ReXrank's published figures as rows: 4 decimals, no CI, imported as published."""
    from rexrank.vqa.official import shipped

    table = shipped()
    return [{"submission": None, "model": r["model"], "institution": r["institution"], "url": r["url"],
             "split": table["split"], "provenance": "imported", "questions": table["questions"],
             "failed_extractions": r["failed_extractions"], "signature": None,
             "note": f"{table['attribution']} Published {table.get('published', '')}".strip(),
             OVERALL: r["overall"], **{c: r["categories"].get(c) for c in VQA_CATEGORIES}} for r in table["rows"]]


def _result_row(path: Path, card: dict, submission: str) -> dict:
    """A result file's row, or ValueError saying why it is left out."""
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES >> 10} KiB")
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or record.get("dataset") != DATASET or record.get("task") != TASK:
        raise ValueError(f"not a {DATASET} {TASK} result")
    rows = {r.get("category"): r for r in record.get("rows") or [] if isinstance(r, dict)}
    if OVERALL not in rows or set(rows) - {OVERALL, *VQA_CATEGORIES}:
        raise ValueError(f"expected rows for {OVERALL} and the categories {', '.join(VQA_CATEGORIES)}")
    provenance = record.get("provenance", "generated")  # in a results repo only the job writes vqa/ (its rules)
    if provenance not in ("generated", "scored"):
        raise ValueError(f"provenance {sanitize_text(str(provenance), 40)!r} is not the job's")
    out = {"submission": submission, "model": card.get("name") or record.get("model"),
           "institution": card.get("institution") or record.get("institution", ""),
           "url": card.get("url") or record.get("url", ""), "split": str(record.get("split", "")),
           "provenance": provenance, "questions": rows[OVERALL].get("questions"),
           "failed_extractions": rows[OVERALL].get("failed_extractions"), "signature": record.get("signature"),
           "note": ""}
    for name, row in rows.items():
        value, low, high = (_number(row.get(k)) for k in ("accuracy", "low", "high"))
        if value is None or not 0 <= value <= 1 or low is None or high is None or not low <= value <= high:
            raise ValueError(f"{name}: accuracy and its CI are not numbers with low <= accuracy <= high in [0, 1]")
        out |= {name: value, f"{name}_low": low, f"{name}_high": high}
    if not isinstance(out["model"], str) or not out["model"].strip() or not out["split"].isidentifier():
        raise ValueError("no model name or split")
    return out


def read_results(repo: Path, keys: dict[str, bytes] | None = None) -> tuple[list[dict], list[str]]:
    """Every submission's VQA rows in a results repo folder, and the files left out, each with why. A file is shown
    only as the bytes a ledger entry signed by one of `keys` (the configured ones by default) names: the job's
    (docs/security.md rule 20), whoever merged it."""
    from rexrank.rules import ledger

    verified = ledger.read_folder(repo, keys)
    rows, left_out = [], []
    for path in sorted(repo.glob(f"{SUBMISSIONS}/*/{FOLDER}/{DATASET}.{TASK}.*.json")):
        folder = path.parent.parent
        if why := verified.unverified(folder.name, path.name.removesuffix(".json"), path.read_bytes()):
            left_out.append(f"{path.relative_to(repo)}: not shown: {why}")
            continue
        try:
            card = json.loads((folder / CARD).read_text(encoding="utf-8")) if (folder / CARD).is_file() else {}
            rows.append(_result_row(path, card if isinstance(card, dict) else {}, folder.name))
        except (ValueError, OSError, UnicodeDecodeError) as err:
            left_out.append(f"{path.relative_to(repo)}: {sanitize_text(str(err), 200)}")
    return rows, left_out


def read_vqa(results) -> pd.DataFrame:
    """The VQA rows of a board (`rexrank.board.sources.Results`): ReXrank's published figures always (they ship with
    rexrank); a results repo's generated rows beside them (a local folder, the demo's, or a Hub dataset's
    `submissions/*/vqa/` files). Files left out are named in `attrs["unreadable"]`."""
    from rexrank.board.sources import DEMO, OFFICIAL, Builtin, demo_repo
    from rexrank.rules.ledger import LEDGER

    rows, left_out = official_rows(), []
    if results is DEMO:
        from rexrank.demo.board import demo_keys

        generated, left_out = read_results(demo_repo(), demo_keys())
        rows += generated
    elif results and not isinstance(results, Builtin) and results is not OFFICIAL:
        folder = Path(results).expanduser()
        if folder.is_dir():
            generated, left_out = read_results(folder)
        else:  # files of their own, not the Hub cache's links into its blobs: the ledger reads no link (a rule)
            from huggingface_hub import snapshot_download

            with tempfile.TemporaryDirectory(prefix="rexrank-vqa-") as tmp:
                snapshot_download(str(results), repo_type="dataset", local_dir=tmp, allow_patterns=[
                    f"{SUBMISSIONS}/*/{FOLDER}/*.json", f"{SUBMISSIONS}/*/{CARD}", f"{LEDGER}/**"])
                generated, left_out = read_results(Path(tmp))
        rows += generated
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["unreadable"] = left_out
    return frame


def splits(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The question sets the board holds, the challenge's private set first: (title, split)."""
    names = sorted(set(frame["split"].dropna()), key=lambda s: (s != VQA_PRIVATE["split"], s))
    return [(SPLIT_TITLES.get(s, f"{s} (public)"), s) for s in names]


def _cells(rows: pd.DataFrame, column: str) -> tuple[list[str], list]:
    """A figure column as text and numbers: a published figure at its 4 decimals alone, the maintainers' at the
    board's decimals with their CI, one notation for the column (`views.ci_column`)."""
    made = rows["provenance"] != "imported"
    text = pd.Series("", index=rows.index, dtype=object)
    if made.any():
        text[made] = ci_column(zip(rows.loc[made, column], rows.loc[made, f"{column}_low"],
                                   rows.loc[made, f"{column}_high"]))
    for i in rows.index[~made]:
        value = _number(rows.at[i, column])
        text[i] = "" if value is None else f"{value:.{PUBLISHED_DECIMALS}f}"
    numbers = [_number(x) for x in rows[column]]
    return text.tolist(), numbers


def _view(frame: pd.DataFrame, split: str | None, search: str, sort_by: str, source: str) -> pd.DataFrame:
    """The rows `vqa_table` shows, in its order, with their `rank` (what the table and its CSV share)."""
    if sort_by not in SORTS:
        raise ValueError(f"sort {sort_by!r}: expected one of {', '.join(SORTS)}")
    if source not in SOURCE_FILTER:
        raise ValueError(f"source {source!r}: expected one of {', '.join(SOURCE_FILTER)}")
    split = split or next((s for _, s in splits(frame)), VQA_PRIVATE["split"])
    rows = frame[frame["split"] == split].copy()
    overall = pd.to_numeric(rows[OVERALL], errors="coerce")
    rows["rank"] = overall.rank(method="min", ascending=False).astype("Int64")
    if source != "any":
        rows = rows[rows["provenance"].isin(KEPT[source])]
    if search:
        needle = search.lower()
        rows = rows[rows["model"].fillna("").str.lower().str.contains(needle, regex=False)
                    | rows["institution"].fillna("").str.lower().str.contains(needle, regex=False)]
    if sort_by == "failed":
        return rows.sort_values(["failed_extractions", "rank"], kind="stable", na_position="last")
    key = pd.to_numeric(rows[SORT_COLUMN[sort_by]], errors="coerce")
    return rows.assign(_key=key).sort_values(["_key", "rank"], ascending=[False, True], kind="stable",
                                             na_position="last").drop(columns="_key")


def vqa_table(frame: pd.DataFrame, split: str | None = None, search: str = "", sort_by: str = "overall",
              source: str = "any") -> pd.DataFrame:
    """One question set's rows, ranked by overall accuracy (ties share a rank; the maintainers' rows and ReXrank's
    published ones together, as the report tabs rank them), ordered by `sort_by` (best first; failed extractions
    fewest first), kept by `source` and a search of model or institution. Text cells; `attrs["numbers"]` holds the
    same table as numbers (what a header's sort orders)."""
    rows = _view(frame, split, search, sort_by, source)
    shown = {"Rank": [str(r) if pd.notna(r) else "" for r in rows["rank"]],
             "Model": [model_cell(m, u) for m, u in zip(rows["model"], rows["url"])]}
    numbers = {"Rank": [int(r) if pd.notna(r) else None for r in rows["rank"]], "Model": list(shown["Model"])}
    for column, title in ((OVERALL, "Overall"), *((c, c) for c in VQA_CATEGORIES)):
        shown[title], numbers[title] = _cells(rows, column)
        if column == OVERALL:  # where the numbers come from, beside the first of them
            shown["Source"] = [SOURCES.get(p, sanitize_text(str(p), 40)) for p in rows["provenance"]]
    failed = [None if pd.isna(x) else int(x) for x in rows["failed_extractions"]]
    shown["Failed extractions"] = ["" if x is None else f"{x:,}" for x in failed]
    numbers["Failed extractions"] = failed
    shown["Institution"] = [sanitize_text(x or "", 100) for x in rows["institution"]]
    shown["Questions"] = ["" if pd.isna(x) else f"{int(x):,}" for x in rows["questions"]]
    numbers |= {k: shown[k] for k in ("Source", "Institution")}  # text: the table's columns keep their order
    numbers["Questions"] = [None if pd.isna(x) else int(x) for x in rows["questions"]]
    table = pd.DataFrame(shown)
    table.attrs["numbers"] = [list(row) for row in zip(*(numbers[c] for c in table.columns))]
    return table


def column_key(category: str) -> str:
    """A figure's column name in the CSV: `overall`, `presence_assessment`, ..."""
    return category.lower().replace(" ", "_")


def export(frame: pd.DataFrame, split: str | None = None, search: str = "", sort_by: str = "overall",
           source: str = "any") -> pd.DataFrame:
    """The tab's view as numbers, for a CSV (as `views.export` makes a report tab's): the rows `vqa_table` shows, in
    its order, with the question set, rank, model and its facts, where its numbers come from, then overall and per
    category the accuracy and its 95% CI bounds (blank for a published figure, which has none). Text is plain and
    sanitised; a cell a spreadsheet would run as a formula is quoted with a leading apostrophe."""
    rows = _view(frame, split, search, sort_by, source)
    out = pd.DataFrame({
        "split": [sanitize_text(as_text(x), 40) for x in rows["split"]],
        "rank": pd.array([None if pd.isna(r) else int(r) for r in rows["rank"]], dtype="Int64"),
        **{c: [_cell(sanitize_text(as_text(x), 300)) for x in rows[c]] for c in ("model", "institution", "url")},
        "source": [source_title(p) for p in rows["provenance"]],
        "provenance": [sanitize_text(as_text(p), 40) for p in rows["provenance"]],
        "questions": pd.array([None if pd.isna(x) else int(x) for x in rows["questions"]], dtype="Int64"),
        "failed_extractions": pd.array([None if pd.isna(x) else int(x) for x in rows["failed_extractions"]],
                                       dtype="Int64"),
        "note": [_cell(sanitize_text(as_text(x), 300)) for x in rows["note"]]})
    for column in (OVERALL, *VQA_CATEGORIES):
        for end, title in (("", "value"), ("_low", "low"), ("_high", "high")):
            out[f"{column_key(column)}_{title}"] = [_number(x) for x in rows[f"{column}{end}"]]
    return out


# On a phone, the first screen holds rank, model and overall accuracy whole: each a fixed width (over Gradio's), the
# model's name on its words' lines, the CI on a line under its number (`answers.unbroken_ci` breaks only there).
CSS = """
@media (max-width: 640px) {
  .vqa [role=gridcell], .vqa [role=gridcell] * { white-space: normal !important; overflow-wrap: normal !important; }
  .vqa th:nth-child(-n+3), .vqa td:nth-child(-n+3), .vqa [role=gridcell]:nth-child(-n+3) {
    width: var(--w) !important; min-width: var(--w) !important; max-width: var(--w) !important;
    flex: 0 0 var(--w) !important; padding-left: 0 !important; padding-right: 0 !important; }
  .vqa th > .cell-wrap, .vqa [role=gridcell] > .cell-wrap { padding-left: 6px !important;
    padding-right: 6px !important; }
  .vqa th:nth-child(1), .vqa td:nth-child(1), .vqa [role=gridcell]:nth-child(1) { --w: 48px; }
  .vqa th:nth-child(2), .vqa td:nth-child(2), .vqa [role=gridcell]:nth-child(2) { --w: 120px; }
  .vqa th:nth-child(3), .vqa td:nth-child(3), .vqa [role=gridcell]:nth-child(3) { --w: 116px; }
  .vqa [role=gridcell]:nth-child(2) * { overflow-wrap: anywhere !important; }
  .vqa .header-table { width: auto !important; }
}
"""
NUMERIC = ("Rank", "Overall", *VQA_CATEGORIES, "Failed extractions", "Questions")  # the table's columns of numbers


def model_vqa(frame: pd.DataFrame, model: str) -> pd.DataFrame:
    """A model's VQA numbers for its Model page: a row per question set, overall and per category with CIs (a
    published figure alone, at its 4 decimals), its failed extractions and where the numbers come from."""
    rows = frame[frame["model"] == model]
    # the set and its size, short: a phone shows the cell on one line
    out = {"Questions": [f"{s} ({int(n):,} questions)" if pd.notna(n) else str(s)
                         for s, n in zip(rows["split"], rows["questions"])]}
    for column, title in ((OVERALL, "Overall"), *((c, c) for c in VQA_CATEGORIES)):
        out[title] = _cells(rows, column)[0]
    out["Failed extractions"] = ["" if pd.isna(x) else f"{int(x):,}" for x in rows["failed_extractions"]]
    out["Source"] = [SOURCES.get(p, sanitize_text(str(p), 40)) for p in rows["provenance"]]
    return pd.DataFrame(out, columns=["Questions", "Overall", *VQA_CATEGORIES, "Failed extractions", "Source"])


ABOUT = f"""
**ReXVQA** (ReXrank Challenge V2.0's VQA track): multiple-choice questions on chest X-rays, four options each, in
five categories. **Overall** is the accuracy over every question, each category's over its own; a model's answer
that gives no single option (no letter read, two letters, a letter that is no option) is a **failed extraction**,
counted wrong (`rexrank score-vqa`; the same rule for every model). Rows *{SOURCES['imported']}* are ReXrank's own
table (rexrank.ai; github.com/rajpurkarlab/ReXrank, branch gh-pages, `vqa_results/`), shown as published: its figures
at {PUBLISHED_DECIMALS} decimals and its model names, unchanged, with no CI. Rows *{SOURCES['generated']}* are the
maintainers' job's: it ran the submitted model on the questions (`serves: VQA` in its `model.yaml`,
docs/submitting.md), each figure with its 95% bootstrap CI over the questions (the private set's at
{BOARD_DECIMALS} decimals). Rows are ranked by overall accuracy within one question set; **Sort by** orders them by a
category (the rank stays the overall one).
"""
