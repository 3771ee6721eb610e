"""The board's Compare tab, testable without Gradio: two models on one dataset and task, compared study by study on
the per-study tables their reviews wrote (`rexrank.compare.paired`, what `rexrank compare` prints). Only verified
rows are compared, and only on the table their verified result names by sha256: a submitter cannot swap in other
scores. A pair that cannot be compared, or a metric the two made differently, says why."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import pandas as pd

from rexrank import stats
from rexrank.board.schema import METRICS, RANK_BY
from rexrank.board.sources import DEMO, Builtin, Results, demo_repo
from rexrank.board.views import DATASETS, TASKS, TITLES
from rexrank.catalog import TEST_SETS
from rexrank.compare import paired
from rexrank.errors import InputError
from rexrank.reports import TASKS as TASK_NAMES
from rexrank.rules.layout import MAX_BYTES, SUBMISSION_ID
from rexrank.rules.parquet import check_per_study
from rexrank.submission import SUBMISSIONS
from rexrank.text import to_markdown

COLUMNS = ("Metric", "A − B", "95% CI of A − B", "p (bootstrap)", "p (AR)", "Studies", "Note")


class NotComparable(Exception):
    """Why two rows cannot be compared; the message is markdown-safe."""


def compare(board: pd.DataFrame, results: Results, dataset: str, task: str, a: str, b: str,
            trials: int = stats.TRIALS, seed: int = stats.SEED) -> tuple[str, pd.DataFrame]:
    """A heading (which pair, how many studies, or why not) and one row per metric: A - B (every board column is
    higher-is-better, so a positive difference favours A), its paired-bootstrap 95% CI and p-value, and the
    approximate-randomisation p-value, each two-sided."""
    where = f"{DATASETS.get(dataset, to_markdown(dataset, 60))}, {TASKS.get(task, to_markdown(task, 60))}"
    try:
        if not a or not b or a == b:
            raise NotComparable("Pick two different models.")
        if dataset in TEST_SETS and TEST_SETS[dataset].private:
            raise NotComparable(f"{TEST_SETS[dataset].title} is private: its per-study scores never leave the "
                                "maintainers' backend, which publishes aggregates only.")
        rows = [_row(board, dataset, task, m) for m in (a, b)]
        alike = tuple(m for m in METRICS if rows[0][f"{m}_key"] == rows[1][f"{m}_key"])
        comparisons = {c.metric: c for c in _paired(results, *map(_table, rows), alike, trials, seed)}
    except NotComparable as why:
        return f"**{where}**: {why}", pd.DataFrame(columns=list(COLUMNS))
    order = sorted(METRICS, key=lambda m: m != RANK_BY)  # as the board's table: the ranking metric first
    out = [_line(comparisons[m]) if m in comparisons else
           [TITLES[m], "", "", "", "", "", "made otherwise for A than for B (their signatures differ): not compared"]
           for m in order if m in comparisons or (m not in alike and all(pd.notna(r[m]) for r in rows))]
    studies = next(iter(comparisons.values())).of  # `paired` returns at least one metric, or raises
    heading = (f"**{where}**: A = {to_markdown(a, 100)}, B = {to_markdown(b, 100)}; "
               f"{studies:,} paired studies, {trials:,} resamples and randomisations, seed {seed} "
               f"(`rexrank compare` on the same tables gives the same numbers). A − B > 0 favours A.")
    return heading, pd.DataFrame(out, columns=list(COLUMNS))


def _line(c) -> list:
    title = TITLES.get(c.metric, c.metric)
    if c.bootstrap is None:
        return [title, "", "", "", "", "0", "no study judged for both"]
    boot, ar = c.bootstrap, c.randomisation
    note = f"the {c.studies:,} studies judged for both" if c.studies < c.of else ""
    return [title, f"{boot.delta:+.4f}", f"[{boot.low:+.4f}, {boot.high:+.4f}]", f"{boot.p_value:.4f}",
            f"{ar.p_value:.4f}", f"{c.studies:,}", note]


def _row(board: pd.DataFrame, dataset: str, task: str, model: str) -> pd.Series:
    rows = board[(board["dataset"] == dataset) & (board["task"] == task) & (board["model"] == model)]
    name = to_markdown(model, 100)
    if rows.empty:
        raise NotComparable(f"{name} has no row here.")
    row = rows.sort_values("rank", na_position="last").iloc[0]
    if row["provenance"] == "imported":
        raise NotComparable(f"{name} is ReXrank's figure as published: ReXrank published no per-study scores, so "
                            "there is nothing to pair. Only models rexrank scored can be compared.")
    if pd.isna(row.get("per_study_sha256")):
        why = row.get("unranked")
        raise NotComparable(f"{name} is not verified" + (f" ({to_markdown(why, 200)})" if isinstance(why, str) else "")
                            + ": only the per-study scores of a verified result are compared.")
    return row


def _table(row: pd.Series) -> tuple[str, str, str]:
    """Where the row's per-study table is, the sha256 its verified result names, and the model's name as shown."""
    submission, dataset, task = str(row["submission"]), str(row["dataset"]), str(row["task"])
    if not SUBMISSION_ID.fullmatch(submission) or dataset not in TEST_SETS or task not in TASK_NAMES:
        raise NotComparable(f"{to_markdown(row['model'], 100)}: the board names no readable per-study table.")
    return (f"{SUBMISSIONS}/{submission}/per_study/{dataset}.{task}.parquet", str(row["per_study_sha256"]),
            to_markdown(row["model"], 100))


# Keyed by the tables' sha256s, so a cached answer is never a stale one; 10,000 resamples on 2,347 studies take
# about a second per metric, so a pair asked again (or shared by link) answers at once.
@lru_cache(maxsize=64)
def _paired(results: Results, a: tuple[str, str, str], b: tuple[str, str, str], metrics: tuple[str, ...],
            trials: int, seed: int) -> tuple:
    try:
        return tuple(paired(_read(results, *a), _read(results, *b), trials, seed, ("A", "B"), metrics))
    except InputError as err:
        raise NotComparable(f"Not comparable: {to_markdown(str(err), 300)}.") from None


def _read(results: Results, path: str, sha256: str, name: str) -> pd.DataFrame:
    try:
        file = _fetch(results, path)
        if file.stat().st_size > MAX_BYTES["per_study"]:
            raise NotComparable(f"{name}'s per-study table is larger than {MAX_BYTES['per_study'] >> 20} MiB.")
        data = file.read_bytes()
    except NotComparable:
        raise
    except Exception as err:  # missing on the Hub or on disk, the Hub down
        raise NotComparable(f"{name}'s per-study table cannot be read ({type(err).__name__}).") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise NotComparable(f"{name}'s per-study table is not the one its verified result names (sha256 differs): "
                            "not compared.")
    try:  # read as a pull request's table is, its cost bounded before it is decoded, though a job wrote it
        return check_per_study(data).table.to_pandas()
    except InputError as err:
        raise NotComparable(f"{name}'s per-study table is refused: {to_markdown(str(err), 200)}.") from None


def _fetch(results: Results, path: str) -> Path:
    if results is DEMO:
        return demo_repo() / path
    if not results or isinstance(results, Builtin):  # the official tables: imported rows only, no tables
        raise FileNotFoundError(path)
    folder = Path(results).expanduser()
    if folder.is_dir():
        return folder / path
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(str(results), path, repo_type="dataset"))
