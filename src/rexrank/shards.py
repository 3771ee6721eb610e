"""Data-parallel scoring: each process scores one shard of the studies, `merge` joins the per-study tables and
computes every dataset value and CI once, after the join, as an unsharded run does (`rexrank.result_set.merge`).

A shard is a contiguous block of the task's studies in split order (`--shard I/N`, 0-based; `--shard auto` takes
I and N from `RANK` and `WORLD_SIZE`, which `torchrun` and `accelerate launch` set, one shard per process or GPU).
Per-study scores do not depend on the other studies of a run, so a merged result equals the unsharded one; model
metrics batch differently, which moves per-study scores by float rounding only. CheXbert's label F1 metrics are
recomputed from the joined per-study TP/FP/FN bitmasks, so they equal the unsharded run's exactly; corpus-level
extras (SembScore's chexbert_label_f1) are left out of a merged result, with a warning.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from rexrank.errors import InputError
from rexrank.files import write_text
from rexrank.results import Result, result_paths


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (0 <= I < N), or `auto`: RANK / WORLD_SIZE from the launcher."""
    if text == "auto":
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            raise InputError("--shard auto needs RANK and WORLD_SIZE (run under torchrun or accelerate launch)")
        text = f"{os.environ['RANK']}/{os.environ['WORLD_SIZE']}"
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise InputError(f"--shard {text!r}: expected I/N with 0 <= I < N, e.g. 0/4, or auto")
    return int(index), int(count)


def shard_rows(rows: pd.DataFrame, index: int, count: int) -> pd.DataFrame:
    """The `index`-th of `count` contiguous blocks of the rows (sizes differ by at most one); InputError when it
    holds no study (more shards than studies)."""
    block = rows.iloc[np.array_split(np.arange(len(rows)), count)[index]].reset_index(drop=True)
    if block.empty:
        raise InputError(f"--shard {index}/{count} holds no study: {len(rows)} studies in {count} shards (use at most "
                         f"{len(rows)} shards)")
    return block


def shard_paths(out: Path, dataset: str, task: str, model: str, index: int, count: int) -> tuple[Path, Path]:
    """A shard's sidecar and table, named as the model's result is (`rexrank.results.result_paths`) plus the shard."""
    stem = result_paths(out, dataset, task, model)[0].name.removesuffix(".json")
    return out / f"{stem}.shard-{index}-of-{count}.json", out / f"{stem}.shard-{index}-of-{count}.parquet"


def write_shard(out: Path, result: Result, per_study: pd.DataFrame, predictions: pd.DataFrame, index: int,
                count: int) -> Path:
    """The shard's per-study table (with its predictions) and a sidecar holding what the merge needs."""
    from rexrank import per_study as tables

    meta_path, table_path = shard_paths(out, result.dataset, result.task, result.model.name, index, count)
    table = per_study.assign(prediction=predictions["prediction"].to_numpy())
    tables.write(table, table_path, tables.about(result.dataset, result.split, result.task,
                                                 {name: m.signature for name, m in result.metrics.items()}))
    meta = {"shard": [index, count], "model": vars(result.model), "dataset": result.dataset, "split": result.split,
            "task": result.task, "counts": result.counts, "skipped": result.skipped, "warnings": result.warnings,
            "extras": sorted(result.extras), "rows": len(table), "inputs": result.checks.get("inputs"),
            "signatures": {name: m.signature.to_dict() for name, m in result.metrics.items()}}
    write_text(meta_path, json.dumps(meta, indent=2) + "\n")
    return table_path
