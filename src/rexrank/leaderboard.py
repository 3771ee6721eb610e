"""Shaping the board for display: pure DataFrame in, DataFrame out (the Space renders; nothing here needs Gradio).

Input is `leaderboard.parquet` as the aggregate job writes it (`rexrank.backend.aggregate.COLUMNS`). Text that came
from a submission is sanitised here, once: the `Model` column is markdown (the name escaped, a link only to a safe
http(s) URL), so a name with HTML or markdown in it shows as text; every other column is plain text.
"""

from __future__ import annotations

import math

import pandas as pd

from rexrank.backend.aggregate import METRICS, RANK_BY
from rexrank.backend.security import safe_url, sanitize_text, to_markdown
from rexrank.official import METRIC_COLUMNS

DATASETS = {"rexgradient": "ReXGradient", "mimic-cxr": "MIMIC-CXR", "iu-xray": "IU-Xray",
            "chexpert-plus": "CheXpert Plus"}
TASKS = {"findings": "Findings", "findings_impression": "Findings + Impression"}
TITLES = {metric: title for title, metric in METRIC_COLUMNS.items()}  # as ReXrank's tables name them


def value_with_ci(value: float | None, low: float | None, high: float | None, decimals: int = 3) -> str:
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


def table(board: pd.DataFrame, dataset: str, task: str, search: str = "", metrics: tuple[str, ...] = METRICS
          ) -> pd.DataFrame:
    """One dataset and task, ranked by 1/RadCliQ-v1 (unranked rows last, with the reason), filtered by a search
    over model and institution, with the chosen metric columns as `value ± CI`."""
    rows = board[(board["dataset"] == dataset) & (board["task"] == task)]
    if search.strip():
        needle = search.strip().casefold()
        hay = (rows["model"].fillna("") + " " + rows["institution"].fillna("")).str.casefold()
        rows = rows[hay.str.contains(needle, regex=False)]
    rows = rows.sort_values(["rank", RANK_BY], ascending=[True, False], na_position="last")
    out = pd.DataFrame({
        "Rank": [("" if pd.isna(r) else str(int(r))) for r in rows["rank"]],
        "Model": [model_cell(m, u) for m, u in zip(rows["model"], rows["url"])],
        "Institution": [sanitize_text(i or "", 200) for i in rows["institution"]],
        "Date": rows["date"].fillna("").tolist(),
        "Trained on": [sanitize_text(t or "", 200) for t in rows["trained_on"]],
        "Source": ["imported" if p == "imported" else "verified" for p in rows["provenance"]],
    })
    for m in metrics:
        out[TITLES[m]] = [value_with_ci(_num(v), _num(lo), _num(hi))
                          for v, lo, hi in zip(rows[m], rows[f"{m}_low"], rows[f"{m}_high"])]
    out["Note"] = [("" if pd.isna(u) else sanitize_text(u, 300)) for u in rows["unranked"]]
    return out.reset_index(drop=True)


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


def _num(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)
