"""The Model tab's per-study distributions, testable without Gradio: on a board read on this machine (a
`rexrank leaderboard --results DIR` folder, the demo), each of a model's dataset and task pairs whose per-study scores
it holds, drawn as `rexrank studies --plot` draws them (each bar clickable), and the studies a bar holds. Never for a
private test set (its per-study scores are never published) nor a row imported as published (there are none): each
says why. Not on a Hub board, whose tables would be downloaded a click at a time."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from rexrank.board.compare import NotComparable, per_study_at, read_per_study
from rexrank.board.sources import DEMO, UNVERIFIED, BoardSource, demo_repo, score_results
from rexrank.board.views import DATASET_TITLES, TASKS
from rexrank.catalog import TEST_SETS
from rexrank.results import COMPUTED, Result
from rexrank.rules.layout import SUBMISSIONS
from rexrank.scorers import spec
from rexrank.studies import Scored, in_bin, load, metric_columns
from rexrank.text import to_markdown

ELSEWHERE = ("Per-study distributions are drawn on a board read on this machine: `rexrank leaderboard --results DIR` "
             "(your `rexrank score --out` folder, or a results repo's) or `rexrank leaderboard --demo`.")
# The page's script: a click (a tap) on a bar sends its id, `bin-<metric>-<index>`, as the figure's click event.
CLICK_JS = ("element.addEventListener('click', (e) => { const bar = e.target.closest('[id^=\"bin-\"]'); "
            "if (bar) trigger('click', {bar: bar.id}); });")


def local(source: BoardSource) -> Path | None:
    """The folder the board was read from, when it is on this machine (the demo's built repo); else None."""
    if source.results is DEMO:
        return demo_repo()
    if isinstance(source.results, str | Path) and Path(source.results).expanduser().is_dir():
        return Path(source.results).expanduser()
    return None


def _label(row: pd.Series) -> str:
    return f"{DATASET_TITLES.get(row['dataset'], row['dataset'])} · {TASKS.get(row['task'], row['task'])}"


def pairs(source: BoardSource, model: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The model's dataset and task pairs with per-study scores here, as (label, `dataset.task`); and a line for each
    pair without, saying why."""
    if local(source) is None:
        return [], [ELSEWHERE]
    board = source.board
    rows = board[board["model"] == model].sort_values(["dataset", "task"], key=lambda c: c.map(
        {k: i for i, k in enumerate([*DATASET_TITLES, *TASKS])}))
    shown, why = [], []
    for _, row in rows.iterrows():
        label, private = _label(row), TEST_SETS.get(row["dataset"])
        if private is not None and private.private:
            why.append(f"{label}: a private test set, whose per-study scores are never published")
        elif row["provenance"] == "imported":
            why.append(f"{label}: ReXrank's figure as published, with no per-study scores")
        elif row["provenance"] == UNVERIFIED or (row["provenance"] in COMPUTED and pd.notna(row["per_study_sha256"])):
            shown.append((label, f"{row['dataset']}.{row['task']}"))
        else:
            why.append(f"{label}: not verified, so its per-study table is not read")
    return shown, why


def scored(source: BoardSource, model: str, key: str) -> Scored:
    """The model's studies on `key` (`dataset.task`): a verified row's per-study table as its result names it (by
    sha256), or a `rexrank score` result's files with its predictions. NotComparable (markdown) when it cannot."""
    folder = local(source)
    dataset, _, task = key.partition(".")
    board = source.board
    rows = board[(board["model"] == model) & (board["dataset"] == dataset) & (board["task"] == task)]
    if folder is None or rows.empty:
        raise NotComparable(ELSEWHERE if folder is None else f"{to_markdown(model, 100)} has no row on {key}.")
    row = rows.iloc[0]
    if row["provenance"] == UNVERIFIED:
        for path in score_results(folder):
            result = Result.read(path)
            if (result.model.name, result.dataset, result.task) == (model, dataset, task):
                return load(path)
        raise NotComparable(f"{to_markdown(model, 100)}'s result on {key} is no longer in {folder.name}.")
    path, sha256, name = per_study_at(row)
    table = read_per_study(source.results, path, sha256, name)
    table["study_id"] = table["study_id"].astype(str)
    predictions = folder / SUBMISSIONS / str(row["submission"]) / "predictions" / f"{key}.jsonl"
    if predictions.is_file():
        from rexrank.data.split import jsonl_records

        texts = {str(r.get("study_id")): r.get("prediction") for _, r in jsonl_records(predictions)}
        table["prediction"] = table["study_id"].map(texts)
    return Scored(None, Path(path), table)


def figure_html(one: Scored, title: str) -> str:
    """The distributions as inline SVG, each bar clickable (`CLICK_JS`), in a frame that scrolls on a phone."""
    from rexrank.board.figures import distribution_figure, figure_svg

    metrics = metric_columns(one.table)
    svg = figure_svg(distribution_figure([(title, one.table)], metrics, title))
    # its panels' count sizes it (the page's CSS): a panel a legible width, a phone scrolling sideways past two
    # a figure named by its title: the SVG draws its words as paths, which neither a screen reader nor a search reads
    return (f'<figure class="per-study-figure" aria-label="{html.escape(title)}" '
            f'style="margin: 0; --panels: {max(2, min(4, len(metrics)))}">{svg}</figure>')


def listed(one: Scored, bar: str) -> pd.DataFrame:
    """The studies bar `bin-<metric>-<index>` holds, worst first: study id, every metric's score, the prediction."""
    metric, _, index = bar.removeprefix("bin-").rpartition("-")
    if metric not in metric_columns(one.table) or not index.isdigit():
        return pd.DataFrame(columns=["Study"])
    rows = in_bin(one, metric, int(index))
    metrics = [metric, *(m for m in metric_columns(one.table) if m != metric)]
    titles = {m: spec(m).title for m in metrics}  # a study's own score: RadCliQ-v1, not its 1/mean
    shown = rows[["study_id", *metrics]].round(4).astype(object).rename(columns={"study_id": "Study", **titles})
    if "prediction" in rows:
        shown["Prediction"] = rows["prediction"].map(lambda t: t if isinstance(t, str) else "")
    return shown
