"""The board's tables as the aggregate job writes them and every reader reads them: `leaderboard.parquet`, one row
per (model, dataset, task), and `radrbench.parquet`, one row per (model, source, task)."""

from __future__ import annotations

import pandas as pd

from rexrank.radrbench import RADRSCORE_PARTS
from rexrank.scorers import BOARD_METRICS, RANK_BY  # noqa: F401  (the board's modules read RANK_BY here)
from rexrank.scorers import METRICS as REPORT_METRICS

BOARD = "leaderboard.parquet"
RADRBENCH_BOARD = "radrbench.parquet"
# Every report metric rexrank scores has its columns on the board (BLEU-4, ROUGE-L, the label F1s...): ReXrank's
# (BOARD_METRICS, the view's default columns) first, in its tables' order, then the rest in the registry's.
METRICS: tuple[str, ...] = (*BOARD_METRICS, *(m for m in REPORT_METRICS if m not in BOARD_METRICS))

# `note`: what an imported row's file says of it (a published value its components contradict, say);
# `per_study_sha256`: the per-study table a verified result names (what the Compare tab may read), else blank;
# `access_source`, `trained_on_source`: for an imported row, the page that states its model's access and training
# data (`rexrank.official.FACTS`); a submission's card is its own source, and they are blank; `withheld`: the judged
# metrics whose values are blank until the maintainers review their verdicts (`rexrank.contradictions`).
BASE = ("submission", "model", "institution", "url", "paper", "code", "access", "date", "trained_on", "dataset",
        "split", "task", "provenance", "rexrank_version", "created", "note", "per_study_sha256", "access_source",
        "trained_on_source", "withheld")
# Each metric's value, 95% CI, signature, the signature's point key (what ranking compares) and how its making departs
# from the published figures' (`rexrank.official.departures`; blank where it does not, or there is no signature).
COLUMNS = (*BASE, *(f"{m}{part}" for m in METRICS
                    for part in ("", "_low", "_high", "_signature", "_key", "_departs")))

# One row per (model, source, task) and a source/task "all" row per model; accuracy with its bootstrap CI, and where
# the submission was judged, RadRScore and its components over the group's items with reasoning annotations.
RADRBENCH_COLUMNS = ("submission", "model", "institution", "url", "date", "source", "task", "items", "correct",
                     "accuracy", "low", "high", "failures", "missing_outputs", "signature", "radrscore_items",
                     *(f"{part}{end}" for part in RADRSCORE_PARTS for end in ("", "_low", "_high")),
                     "radrscore_signature", "ratescore", "ratescore_low", "ratescore_high", "ratescore_signature")
RADRBENCH_TYPES = {"items": "Int64", "correct": "Int64", "missing_outputs": "Int64", "accuracy": "float64",
                   "low": "float64", "high": "float64", "radrscore_items": "Int64",
                   **{f"{part}{end}": "float64" for part in RADRSCORE_PARTS for end in ("", "_low", "_high")},
                   "ratescore": "float64", "ratescore_low": "float64", "ratescore_high": "float64"}


def conform(board: pd.DataFrame) -> pd.DataFrame:
    """A board written by an older or newer aggregate job: the columns we show, missing ones blank (never 0)."""
    return board.reindex(columns=list(dict.fromkeys([*COLUMNS, "rank", "self_rank", "unranked", *board.columns])))


def empty_board() -> pd.DataFrame:
    """A board with the aggregate job's columns and no rows."""
    return conform(pd.DataFrame(columns=list(COLUMNS)))


def empty_radrbench() -> pd.DataFrame:
    return pd.DataFrame(columns=list(RADRBENCH_COLUMNS)).astype(RADRBENCH_TYPES)
