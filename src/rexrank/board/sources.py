"""Where the board comes from, testable without Gradio: a results repo (a local folder or a Hub dataset); when none
is named, the official ReXrank tables shipped with rexrank (`OFFICIAL`, as published, no CIs); or the embedded
synthetic demo board (`DEMO`); and `BoardSource`, the Space's table that outlives a failed read. A folder that is no
results repo but holds `rexrank score --out` results shows them as unverified rows beside the official field
(`own_results`): what a researcher wants to see before submitting."""

from __future__ import annotations

import atexit
import enum
import os
import re
import shutil
import tempfile
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pandas as pd

from rexrank.board.aggregate import _row, aggregate, radrbench_rows, rank, ranked_rows
from rexrank.board.schema import (
    BOARD,
    RADRBENCH_BOARD,
    RADRBENCH_COLUMNS,
    conform,
    empty_board,
    empty_radrbench,
)
from rexrank.catalog import TEST_SETS
from rexrank.rules.layout import SUBMISSIONS
from rexrank.text import sanitize_text

RESULTS_ENV = "REXRANK_RESULTS"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class Builtin(enum.Enum):
    """The boards rexrank carries: the official ReXrank tables (the default) and the synthetic demo."""

    OFFICIAL = "the official ReXrank tables as published (rexrank.ai, 2025-09; no CIs)"
    DEMO = "the embedded synthetic demo board"


OFFICIAL, DEMO = Builtin.OFFICIAL, Builtin.DEMO
Results = str | os.PathLike | Builtin | None  # None: OFFICIAL


def read_radrbench(results: Results) -> pd.DataFrame:
    """The RadRBench-CXR table of a results repo, as `read_board` reads the board: none for the official tables
    (ReXrank published none), the demo's for DEMO; a local folder's `radrbench.parquet` (or its submissions
    aggregated in memory); a Hub repo's `radrbench.parquet`, an empty table when the repo has none yet (an aggregate
    job older than the RadRBench-CXR table)."""
    if results is DEMO:
        return demo_tables()[1]
    if not results or results is OFFICIAL:
        return empty_radrbench()
    path = Path(results).expanduser()
    if path.is_dir():
        if (path / RADRBENCH_BOARD).is_file():
            return pd.read_parquet(path / RADRBENCH_BOARD).reindex(columns=list(RADRBENCH_COLUMNS))
        return radrbench_rows(path)
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return pd.read_parquet(hf_hub_download(str(results), RADRBENCH_BOARD, repo_type="dataset")).reindex(
            columns=list(RADRBENCH_COLUMNS))
    except EntryNotFoundError:
        return empty_radrbench()


def read_board(results: Results) -> pd.DataFrame:
    """The board of a results repo: `None`, "" or OFFICIAL the official ReXrank tables shipped with rexrank; DEMO the
    embedded synthetic demo board; an existing local folder its `leaderboard.parquet` (or, when it has none yet, its
    merged submissions and imported rows ranked in memory); a Hub dataset id `owner/name` its `leaderboard.parquet`
    only (through the HF cache). Raises when it cannot."""
    if results is DEMO:
        return demo_tables()[0]
    if not results or results is OFFICIAL:
        return _official().copy()
    path = Path(results).expanduser()
    if path.is_dir():
        if (path / BOARD).is_file():
            return conform(pd.read_parquet(path / BOARD))
        if not is_results_repo(path) and score_results(path):
            return own_results(path)
        return conform(ranked_rows(path))  # attrs["unreadable"] survives the reindex
    if path.exists():
        raise FileNotFoundError(f"{results} is a file; give the results repo folder that holds {BOARD}")
    if not _HUB_ID.match(str(results)) or str(results).startswith((".", "~")):
        raise FileNotFoundError(f"no results folder at {results}")
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_download, hf_hub_url

    if not constants.HF_HUB_OFFLINE:  # hf_hub_download alone would quietly serve a stale cached copy
        get_hf_file_metadata(hf_hub_url(str(results), BOARD, repo_type="dataset"))
    return conform(pd.read_parquet(hf_hub_download(str(results), BOARD, repo_type="dataset")))


UNVERIFIED = "unverified"  # the provenance of a user's own row: scored on their machine, seen by no maintainer


def is_results_repo(folder: Path) -> bool:
    """A results repo's folder: its board, its submissions or its imported rows (an empty one is a new repo)."""
    return any((folder / part).exists() for part in (BOARD, SUBMISSIONS, "imported"))


def score_results(folder: Path) -> list[Path]:
    """The result JSONs `rexrank score --out folder` writes (`<dataset>.<task>.<model>.json`, every model's), in the
    folder or one level down (a folder of several models' --out folders, `rexrank demo --out`'s)."""
    from rexrank.results import result_files

    return [*result_files(folder), *(p for sub in sorted(folder.iterdir()) if sub.is_dir() for p in result_files(sub))]


def own_dataset(board: pd.DataFrame) -> str | None:
    """The test set a board of one's own results should open on: the first (in the board's order) that holds an
    unverified row, so that `rexrank leaderboard --results` of IU-Xray results opens on IU-Xray; None for any
    other board."""
    mine = set(board.loc[board["provenance"] == UNVERIFIED, "dataset"].dropna())
    return next((name for name in TEST_SETS if name in mine), None)


def own_results(folder: Path) -> pd.DataFrame:
    """The official field, and beside it the results of `rexrank score` in `folder` as unverified rows: provenance
    `unverified` (the board shows it as its own text), never ranked, their Note saying where their 1/RadCliQ-v1
    would place them and that `rexrank submit` sends them for the maintainers to re-score. A result of a test set or
    split the board does not rank (a sample, the demo's synthetic split) is left out, named in `attrs["unreadable"]`;
    when none is left, FileNotFoundError naming what the board shows."""
    from rexrank.results import Result, ResultError

    official = _official()
    mine, left_out = [], []
    for path in score_results(folder):
        try:
            result = Result.read(path)
        except (ResultError, UnicodeDecodeError, OSError) as err:
            left_out.append(f"{path.relative_to(folder)}: {err if isinstance(err, ResultError) else 'unreadable'}")
            continue
        test_set = TEST_SETS.get(result.dataset)
        if test_set is None or result.split != test_set.split:
            left_out.append(f"{path.relative_to(folder)}: {result.dataset} {result.split} is not a test set the board "
                            "ranks")
            continue
        if result.counts.get("unpredicted"):
            left_out.append(f"{path.relative_to(folder)}: partial ({result.counts['unpredicted']:,} of the split's "
                            "studies without a prediction, rexrank score --partial): the board compares whole splits")
            continue
        mine.append(_row(result, None, {}) | {"provenance": UNVERIFIED, "per_study_sha256": None,
                                              "unranked": _placing(official, result)})
    if not mine:
        shown = ", ".join(f"{t.name} {t.split}" for t in TEST_SETS.values())
        raise FileNotFoundError(f"{folder} holds results of rexrank score, but none of a test set the board ranks "
                                f"({shown}): {'; '.join(left_out[:3])}")
    board = conform(rank(pd.concat([official, conform(pd.DataFrame(mine))], ignore_index=True)))
    board.attrs["unreadable"] = left_out
    return board


def _placing(official: pd.DataFrame, result) -> str:
    """A user's row's Note: unverified, where its 1/RadCliQ-v1 would place it among the ranked rows, how to submit."""
    from rexrank.board.schema import RANK_BY

    ranked = official[(official["dataset"] == result.dataset) & (official["task"] == result.task)
                      & official["rank"].notna()]
    made = result.metrics.get(RANK_BY)
    if made is None or made.value is None:
        place = "no 1/RadCliQ-v1, by which the board ranks" + (
            " (skipped when it was scored: its result JSON says why)" if RANK_BY in result.skipped else "")
    else:
        above = int((ranked[RANK_BY] > made.value).sum())
        place = f"its 1/RadCliQ-v1 would place it {above + 1} of {len(ranked) + 1}"
    return (f"yours, unverified (rexrank score on this machine): {place}; rexrank submit sends it to the "
            "maintainers to re-score")


def _hub_cached(results) -> pd.DataFrame | None:
    """The board of a Hub results repo as the local HF cache last saw it (a Space restarted while the Hub is down)."""
    if not results or isinstance(results, Builtin) or Path(results).exists() or not _HUB_ID.match(str(results)):
        return None
    try:
        from huggingface_hub import hf_hub_download

        return conform(pd.read_parquet(hf_hub_download(str(results), BOARD, repo_type="dataset",
                                                        local_files_only=True)))
    except Exception:
        return None


class BoardSource:
    """The board the Space shows: `load()` rereads the results repo; when that fails the last good table stays, with
    a banner saying why (a first failure shows an empty board and the banner, never a blank page)."""

    def __init__(self, results: Results = None):
        self.results = results
        self.board: pd.DataFrame = empty_board()
        self.radrbench: pd.DataFrame = empty_radrbench()
        self.banner = ""
        self.loaded: str | None = None  # when the shown table was read (UTC)

    @property
    def name(self) -> str:
        if isinstance(self.results, Builtin) or not self.results:
            return (self.results or OFFICIAL).value
        return str(self.results)

    def load(self) -> tuple[pd.DataFrame, str]:
        try:
            board = read_board(self.results)
        except Exception as error:  # the Hub down, a repo without a board yet, a broken file: keep what we had
            kept = f"showing the table read at {self.loaded}" if self.loaded else "no earlier table to show"
            if self.loaded is None and (cached := _hub_cached(self.results)) is not None:
                self.board, kept = cached, "showing the copy in the local Hub cache"
            reason = sanitize_text(f"{type(error).__name__}: {error}", 300)
            self.banner = f"⚠️ Could not read the board from {sanitize_text(self.name, 200)} ({reason}); {kept}."
            return self.board, self.banner
        unreadable = board.attrs.get("unreadable") or []
        self.board, self.banner = board, "" if not unreadable else sanitize_text(
            f"⚠️ {len(unreadable)} result file{'s' * (len(unreadable) != 1)} left out: {'; '.join(unreadable[:3])}"
            + ("; ..." if len(unreadable) > 3 else ""), 600)
        try:  # the board read, so the repo is there: a RadRBench-CXR table that fails keeps the last one
            self.radrbench = read_radrbench(self.results)
        except Exception as error:
            self.banner = (f"⚠️ Could not read the RadRBench-CXR table from {sanitize_text(self.name, 200)} "
                           f"({sanitize_text(f'{type(error).__name__}: {error}', 300)}); showing the last one read.")
        self.loaded = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return self.board, self.banner


@cache
def _official() -> pd.DataFrame:
    from rexrank.official import SHIPPED

    return conform(ranked_rows(SHIPPED))


@cache
def _demo() -> tuple[pd.DataFrame, pd.DataFrame]:
    from rexrank.demo.board import demo_keys

    board = conform(aggregate(demo_repo(), demo_keys()))  # the demo's ledger is signed with its own, published key
    return board, pd.read_parquet(demo_repo() / RADRBENCH_BOARD)


@cache
def demo_repo() -> Path:
    """The demo's results repo on disk, built once per process and removed at exit: the Compare tab reads its
    per-study tables."""
    from rexrank.demo.board import demo_results_repo

    folder = Path(tempfile.mkdtemp(prefix="rexrank-demo-board-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return demo_results_repo(folder)


def demo_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The embedded synthetic demo board and its RadRBench-CXR table, built once per process (a fraction of a
    second); copies, so a caller may change them."""
    board, radrbench = _demo()
    return board.copy(), radrbench.copy()
