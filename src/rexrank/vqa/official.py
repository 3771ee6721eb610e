"""ReXrank's published VQA table (ReXrank Challenge V2.0 Leaderboard (VQA), site branch gh-pages, `vqa_results/`),
imported: `vqa_results.csv` (the ranked table the site shows: rank, model name, institution, URL, overall accuracy and
the five categories at 4 decimals) joined with `model_comparison.csv` (the same figures under the authors' short
names, with "Failed Extractions"). The two are joined on the six figures themselves (the site made the first from the
second), so a row whose figures differ between the files is refused, naming it.

`rexrank import-rexvqa-csv vqa_results.csv model_comparison.csv --out DIR --as-of 2025-09` writes
`DIR/rexvqa.vqa.official.json`: the rows as published (values, no CI, no signature), with the attribution. The
figures shipped with rexrank (`SHIPPED`) are that command's output; a test holds them to it.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from rexrank import __version__
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.errors import InputError
from rexrank.files import write_text
from rexrank.vqa import TASK
from rexrank.vqa.dataset import NAME as DATASET

RESULTS_HEADER = ("Rank", "Model Name", "Institution", "Model URL", "Overall Accuracy", *VQA_CATEGORIES)
COMPARISON_HEADER = ("Model", "Overall Accuracy", *VQA_CATEGORIES, "Failed Extractions")
FIGURES = ("Overall Accuracy", *VQA_CATEGORIES)
SOURCE = "rexrank.ai official table (ReXrank Challenge V2.0 Leaderboard (VQA))"
ATTRIBUTION = ("Figures and model names as ReXrank published them (https://rexrank.ai; github.com/rajpurkarlab/"
               "ReXrank, branch gh-pages, vqa_results/); the numbers are ReXrank's, unchanged: no CI, no signature.")
SHIPPED = Path(__file__).resolve().parents[1] / "resources" / "official" / "vqa"
SHIPPED_AS_OF = "2025-09"
FILE = f"{DATASET}.{TASK}.official.json"


def _table(path: Path, header: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows or tuple(c.strip() for c in rows[0]) != header:
        raise InputError(f"{path}: header is not the official one:\n  {','.join(header)}")
    body = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{path}:{number}: {len(row)} fields, not {len(header)}")
        body.append({"line": str(number), **dict(zip(header, (c.strip() for c in row)))})
    return body


def _number(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a number") from None


def read_official(results: str | os.PathLike, comparison: str | os.PathLike) -> list[dict]:
    """The ranked rows, each with its short name and failed extractions from the comparison table."""
    results, comparison = Path(results), Path(comparison)
    ranked, compared = _table(results, RESULTS_HEADER), _table(comparison, COMPARISON_HEADER)
    by_figures: dict[tuple, dict] = {}
    for row in compared:
        where = f"{comparison}:{row['line']}: {row['Model']}"
        key = tuple(_number(row[f], where) for f in FIGURES)
        if key in by_figures:
            raise InputError(f"{where}: the same figures as {by_figures[key]['Model']}: the rows cannot be told apart")
        by_figures[key] = row
    out = []
    for row in ranked:
        where = f"{results}:{row['line']}: {row['Model Name']}"
        figures = tuple(_number(row[f], where) for f in FIGURES)
        twin = by_figures.pop(figures, None)
        if twin is None:
            raise InputError(f"{where}: no row of {comparison.name} has its figures")
        failed = _number(twin["Failed Extractions"], f"{comparison}:{twin['line']}")
        if failed != int(failed) or failed < 0:
            raise InputError(f"{comparison}:{twin['line']}: Failed Extractions {twin['Failed Extractions']!r} is not a "
                             "count")
        out.append({"rank": int(_number(row["Rank"], where)), "model": row["Model Name"],
                    "short_name": twin["Model"], "institution": row["Institution"], "url": row["Model URL"],
                    "overall": figures[0], "categories": dict(zip(VQA_CATEGORIES, figures[1:])),
                    "failed_extractions": int(failed)})
    if by_figures:
        left = ", ".join(r["Model"] for r in by_figures.values())
        raise InputError(f"{comparison}: {left} in no row of {results.name}")
    return sorted(out, key=lambda r: r["rank"])


def imported(rows: list[dict], as_of: str | None = None) -> dict:
    """The rows in rexrank's form for VQA figures as published."""
    return {"schema_version": 1, "rexrank_version": __version__, "provenance": "imported", "source": SOURCE,
            "attribution": ATTRIBUTION, **({"published": as_of} if as_of else {}), "dataset": DATASET,
            "split": VQA_PRIVATE["split"], "task": TASK, "questions": VQA_PRIVATE["questions"],
            "decimals": 4, "metric": "rexvqa_accuracy", "categories": list(VQA_CATEGORIES), "rows": rows}


def write_official(out: str | os.PathLike, rows: list[dict], as_of: str | None = None) -> Path:
    path = Path(out) / FILE
    write_text(path, json.dumps(imported(rows, as_of), indent=2, ensure_ascii=False) + "\n")
    return path


def shipped() -> dict:
    """The figures rexrank ships (what the board's VQA tab shows as published)."""
    return json.loads((SHIPPED / FILE).read_text(encoding="utf-8"))
