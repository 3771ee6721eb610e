"""Per-study tables on disk: `study_id` and a column per metric, and, in the parquet file's `rexrank` metadata, what
the scores are of (`About`: dataset, split, task, each metric's signature point key), so that two tables made on
different test sets, tasks or settings are never paired silently (`rexrank.significance`). Read back with the submission
rules' bounded reader (`rules.parquet.check_per_study`), which accepts exactly that key, parsed with limits."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from rexrank import __version__
from rexrank.errors import InputError
from rexrank.files import atomic_path
from rexrank.rules.layout import MAX_BYTES
from rexrank.rules.parquet import ABOUT_KEY, About, check_per_study
from rexrank.signature import Signature

SUFFIX = ".per_study.parquet"  # how `rexrank score --out` names them: <dataset>.<task>.<model>.per_study.parquet


def about(dataset: str, split: str, task: str, signatures: dict[str, Signature | None]) -> About:
    """What a table of these scores records: its test set and task, each metric's point key (not its bootstrap or
    package versions: those do not change a per-study value)."""
    return About(dataset, split, task, {name: s.point_key for name, s in signatures.items() if s}, __version__)


def write(frame: pd.DataFrame, path: str | os.PathLike, made: About | None = None) -> Path:
    """The table as parquet, atomically, with `made` in its `rexrank` file metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if made is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), ABOUT_KEY: made.to_json()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return Path(path)


def read(path: str | os.PathLike) -> tuple[pd.DataFrame, About | None]:
    """A per-study table and what it records (None: a table written before rexrank recorded it, or by hand). Every
    problem is one InputError naming the file: a folder (with the tables it holds), no file, not parquet, a
    table or metadata the rules refuse."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p.name for p in path.glob(f"*{SUFFIX}"))
        held = (f"it holds {', '.join(found[:6])}{' ...' if len(found) > 6 else ''}" if found
                else f"it holds no *{SUFFIX} (rexrank score --out writes them)")
        raise InputError(f"{path}: a folder, not a per-study table <dataset>.<task>.<model>{SUFFIX}; {held}")
    if not path.is_file():
        raise InputError(f"{path}: no such per-study table")
    if (size := path.stat().st_size) > MAX_BYTES["per_study"]:
        raise InputError(f"{path}: {size:,} bytes, more than the {MAX_BYTES['per_study']:,} a per-study table may be")
    try:
        checked = check_per_study(path.read_bytes())
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    return checked.table.to_pandas(), checked.about


def metric_columns(table: pd.DataFrame) -> list[str]:
    """The metrics a per-study table scores study by study, in the registry's order (not their detail columns, not
    the label F1s' bitmasks)."""
    from rexrank.scorers import METRICS

    return [m for m in METRICS if m in table.columns and pd.api.types.is_float_dtype(table[m])]
