"""The Model tab: one model's numbers across datasets and tasks (bars, a table to read) and its card's facts."""

from __future__ import annotations

import math

import pandas as pd

from rexrank.board.schema import METRICS
from rexrank.board.views import DATASETS, TASKS, TITLES, UNKNOWN, VERIFIED, as_number, as_text, source, value_with_ci
from rexrank.catalog import ACCESS
from rexrank.text import safe_url, sanitize_text, to_markdown


def model_scores(board: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's numbers in long form (dataset, task, metric, value, low, high) for its bars and CI whiskers."""
    rows = board[board["model"] == model]
    records = [{"dataset": DATASETS.get(r["dataset"], r["dataset"]), "task": TASKS.get(r["task"], r["task"]),
                "metric": TITLES[m], "value": as_number(r[m]), "low": as_number(r[f"{m}_low"]),
                "high": as_number(r[f"{m}_high"])}
               for _, r in rows.iterrows() for m in METRICS if as_number(r[m]) is not None]
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
        return list(dict.fromkeys(t for t in (sanitize_text(as_text(x), 200) for x in rows[column]) if t))

    url = next((u for u in (safe_url(as_text(x)) for x in rows["url"]) if u), None)
    paper = next((u for u in (safe_url(as_text(x)) for x in rows.get("paper", [])) if u), None)  # `--paper`
    code = next((u for u in (safe_url(as_text(x)) for x in rows.get("code", [])) if u), None)  # `--code`
    access = next((ACCESS[a] for a in map(as_text, rows.get("access", [])) if a in ACCESS), UNKNOWN)
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
