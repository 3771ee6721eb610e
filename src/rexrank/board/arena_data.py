"""The Arena tab's data, testable without Gradio (issue 48): which reports it may put side by side (`Pool`: the
stored predictions of a split's ranked models), what it shows of a study's images, and the ranking and agreement
views it draws from the votes (`rexrank.arena`).

Images: a public page shows a study's images only where the split's licence lets it. IU-Xray (Open-i, CC BY-NC-ND
4.0) does, unchanged and attributed, when the Space holds a copy (`IMAGES_ENV`: a folder of `<dataset>/<study_id>/`
images); MIMIC-CXR and CheXpert Plus are credentialed (PhysioNet's and Stanford AIMI's agreements): never an image,
and the page says so, with the study id a credentialed reader can open in their own copy. ReXGradient's test set is
private: no Arena at all. The demo's split is synthetic and has no images. No split's reference report is shown."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from rexrank import demo
from rexrank.arena.agreement import agreement
from rexrank.arena.limits import counted
from rexrank.arena.ranking import MIN_VOTES, RESAMPLES, battles, position_bias, rate
from rexrank.arena.votes import Vote
from rexrank.board.sources import DEMO, Builtin, Results
from rexrank.catalog import PUBLIC_DATASETS, TASK_TITLES, TEST_SETS

IMAGES_ENV = "REXRANK_ARENA_IMAGES"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
DEMO_METRICS = ("bleu2", "rouge_l")  # model-free: the demo's agreement table is scored on its split, offline


@dataclass(frozen=True)
class Pool:
    """The reports the Arena may pair on one split and task: model name -> study id -> report."""

    dataset: str
    task: str
    reports: dict[str, dict[str, str]]

    @property
    def key(self) -> str:
        return f"{self.dataset}.{self.task}"

    @property
    def label(self) -> str:
        title = TEST_SETS[self.dataset].title if self.dataset in TEST_SETS else "Demo (synthetic)"
        return f"{title} · {TASK_TITLES.get(self.task, self.task)}"

    @property
    def studies(self) -> dict[str, list[str]]:
        return {m: sorted(r) for m, r in self.reports.items()}


def demo_pools() -> list[Pool]:
    """The demo systems' embedded predictions on the demo's synthetic split, per task."""
    from rexrank.data.predictions import load_predictions

    names = {key: card["name"] for key, card in demo.systems().items()}
    return [Pool(demo.NAME, task, {names[k]: _texts(load_predictions(demo.predictions(k, task))) for k in names})
            for task in TASK_TITLES]


def _texts(predictions: dict) -> dict[str, str]:
    return {str(s): p for s, p in predictions.items() if isinstance(p, str) and p.strip()}


def pools(results: Results, board: pd.DataFrame) -> list[Pool]:
    """Per public split and task, the ranked models whose submission stored its predictions there
    (`submissions/<id>/predictions/<dataset>.<task>.jsonl`): a pool once two have them. The official tables have
    none; a file that cannot be read leaves its model out."""
    if results is DEMO:
        return demo_pools()
    if not results or isinstance(results, Builtin) or board.empty:
        return []
    from rexrank.data.predictions import load_predictions

    ranked = board[board["rank"].notna() & board["dataset"].isin(PUBLIC_DATASETS) & board["submission"].notna()]
    out = []
    for (dataset, task), rows in ranked.groupby(["dataset", "task"], sort=False):
        reports = {}
        for submission, model in zip(rows["submission"], rows["model"]):
            try:
                path = _fetch(results, f"submissions/{submission}/predictions/{dataset}.{task}.jsonl")
                reports[model] = _texts(load_predictions(path))
            except Exception:  # no predictions stored (an imported row), or a file the Space cannot read
                continue
        if len(reports) > 1:
            out.append(Pool(dataset, task, reports))
    return out


def _fetch(results: Results, path: str) -> Path:
    from rexrank.board.compare import _fetch as fetch

    return fetch(results, path)


def images_allowed(dataset: str) -> bool:
    """Whether a public page may show this split's images: a public, uncredentialed test set (IU-Xray)."""
    found = TEST_SETS.get(dataset)
    return found is not None and not found.credentialed and not found.private


def study_images(dataset: str, study_id: str, root: str | os.PathLike | None = None) -> tuple[list[str], str]:
    """(image files to show, the note under them) for one study: files only where `images_allowed` and the Space
    holds them under `root` (default IMAGES_ENV)."""
    found = TEST_SETS.get(dataset)
    if found is None:
        return [], "The demo's split is synthetic: it has no images. Judge the two reports on their own."
    if not images_allowed(dataset):
        return [], (f"{found.title} is credentialed ({found.info.homepage}): a public page shows none of its images, "
                    f"and no reference report. A credentialed reader may open study `{study_id}` in their own copy.")
    root = root if root is not None else os.environ.get(IMAGES_ENV)
    split = Path(root) / dataset if root else None
    folder = split / study_id if split else None  # a study id is never a way out of its split's folder
    files = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) \
        if folder is not None and folder.is_dir() and folder.resolve().parent == split.resolve() else []
    if not files:
        return [], f"This Space holds no copy of {found.title}'s images: study `{study_id}` is shown without them."
    return files, f"{found.title} study `{study_id}`: {found.card['homepage']}, {found.card['licence'].upper()}."


def ranking_view(votes: list[Vote], dataset: str, task: str, resamples: int = RESAMPLES) -> tuple[pd.DataFrame, str]:
    """The models' Bradley–Terry ratings from the votes on `dataset`/`task` that the per-account rules count, and
    what was counted and left out with the position bias (the anomalous voters are for the maintainers, not here)."""
    here = [v for v in votes if (v.dataset, v.task) == (dataset, task)]
    data = counted(here)
    columns = ["Rank", "Model", "Rating", "95% CI", "Votes", "Win share"]
    if not data.votes:
        return pd.DataFrame(columns=columns), (f"{len(here):,} votes so far; none counted yet (an account counts "
                                               "once it has voted 10 times).")
    rows = []
    for r in rate(battles(data.votes, data.weights), MIN_VOTES, resamples):
        span = "" if not r.ranked else str(r.best_rank) if r.best_rank == r.worst_rank else \
            f"{r.best_rank}–{r.worst_rank}"
        rows.append([span, r.model, round(r.rating), f"{r.low:.0f}–{r.high:.0f}", r.votes, round(r.wins / r.weight, 2)])
    left = "; ".join(f"{n:,} {why}" for why, n in sorted(data.dropped.items()))
    note = (f"{len(here):,} votes, {len(data.votes):,} counted from {data.accounts:,} accounts"
            + (f" (left out: {left})" if left else "") + f". A model is ranked past {MIN_VOTES} counted votes; the "
            "rank is the range its 95% CI allows. Ratings: Bradley–Terry on the Elo scale (mean 1000), a tie or "
            "“both bad” half a win each.")
    bias = position_bias([v.winner for v in data.votes], resamples)
    if bias:
        note += (f" Position bias: {bias.share:.0%} of {bias.decisive:,} decisive votes chose A (95% CI "
                 f"{bias.low:.0%}–{bias.high:.0%}; sides are drawn at random, so 50% is none).")
    return pd.DataFrame(rows, columns=columns), note


def agreement_view(votes: list[Vote], tables: dict, dataset: str, task: str,
                   resamples: int = RESAMPLES) -> pd.DataFrame:
    """Each metric against the counted votes: the share of decisive votes where it prefers the chosen report (95%
    CI), their number, the metric's ties, and Kendall's tau-b of its model order against the votes'."""
    from rexrank.board.views import TITLES

    data = counted([v for v in votes if (v.dataset, v.task) == (dataset, task)])
    rows = [[TITLES.get(r.metric, r.metric), round(r.share, 3), f"{r.low:.3f}–{r.high:.3f}", r.votes, r.metric_ties,
             "" if r.tau is None else f"{r.tau:+.2f}", r.models] for r in agreement(data, tables, resamples)]
    return pd.DataFrame(rows, columns=["Metric", "Agrees", "95% CI", "Decisive votes", "Metric ties", "Kendall τ-b",
                                       "Models"])


@cache
def demo_tables(task: str) -> dict:
    """The demo systems' BLEU-2 and ROUGE-L, study by study, on the demo split: what `agreement` holds the demo's
    votes against. (The demo results repo's per-study tables are synthetic numbers on other ids.)"""
    from rexrank import functional
    from rexrank.data.predictions import load_predictions
    from rexrank.data.split import jsonl_records

    refs = {r["study_id"]: r for _, r in jsonl_records(demo.DATASET)}
    out = {}
    for key, card in demo.systems().items():
        said = load_predictions(demo.predictions(key, task))
        ids = [s for s in refs if s in said and _reference(refs[s], task)]
        scored = {m: functional.score(m, [said[s] for s in ids], [_reference(refs[s], task) for s in ids],
                                      resamples=100) for m in DEMO_METRICS}
        out[card["name"]] = (SimpleNamespace(metrics={m: SimpleNamespace(value=s.value) for m, s in scored.items()}),
                             {m: dict(zip(ids, map(float, s.per_study))) for m, s in scored.items()})
    return out


def _reference(record: dict, task: str) -> str | None:
    from rexrank.reports import reference_text

    return reference_text(record.get("findings") or None, record.get("impression") or None, task)


def repo_tables(results: Results, board: pd.DataFrame, dataset: str, task: str) -> dict:
    """model -> (its result, metric -> {study: score}) from the per-study tables a results repo's verified rows
    name; a model whose table cannot be read is left out (the view then holds fewer models)."""
    from rexrank import per_study
    from rexrank.results import Result

    if results is DEMO:
        return demo_tables(task)
    rows = board[(board["dataset"] == dataset) & (board["task"] == task) & board["rank"].notna()
                 & board["per_study_sha256"].notna()]
    out = {}
    for submission, model in zip(rows["submission"], rows["model"]):
        try:
            result = Result.read(_fetch(results, f"submissions/{submission}/results/{dataset}.{task}.json"))
            table, _ = per_study.read(_fetch(results, f"submissions/{submission}/per_study/{dataset}.{task}.parquet"))
        except Exception:
            continue
        ids = table["study_id"].astype(str)
        out[model] = (result, {m: dict(zip(ids, table[m].to_numpy(float))) for m in per_study.metric_columns(table)})
    return out
