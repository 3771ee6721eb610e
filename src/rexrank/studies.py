"""Why a model scored low: one result's per-study scores beside its predictions (and, given the split, the
references), read back from what `rexrank score --out` wrote. The lowest studies by a metric, the studies where the
metrics disagree most, the studies where two models differ most, and the bins of a metric's distribution (what the
board's and `rexrank studies --plot`'s figure draws, and what a click on one of its bars lists)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rexrank import per_study
from rexrank.data.split import jsonl_records
from rexrank.errors import InputError
from rexrank.per_study import metric_columns
from rexrank.results import Result, companions, result_files
from rexrank.scorers import METRICS, inverted, spec

BINS = 20  # a metric's distribution, drawn and listed


@dataclass(frozen=True)
class Scored:
    """One result's studies: `study_id`, a column per metric with a per-study score, `prediction` and, when the split
    was given, `reference`."""

    result: Result
    path: Path
    table: pd.DataFrame

    @property
    def metrics(self) -> list[str]:
        return metric_columns(self.table)

    @property
    def title(self) -> str:
        r = self.result
        return f"{r.model.name} · {r.dataset} {r.split} · {r.task}"


def lower_is_better(metric: str) -> bool:
    """A per-study score of a metric the board shows as 1/mean (RadCliQ, FineRadScore) is better when lower."""
    return inverted(metric)


def find(where: str | Path, dataset: str | None = None, task: str | None = None, model: str | None = None) -> Path:
    """The one result JSON `where` names: the file itself, or the one in an --out folder that `dataset`, `task` and
    `model` leave (each InputError names what is there to choose from)."""
    where = Path(where)
    if where.is_file():
        return where
    if not where.is_dir():
        raise InputError(f"{where}: no such result or --out folder")
    found = [(p, Result.read(p)) for p in result_files(where)]
    kept = [(p, r) for p, r in found if (dataset is None or r.dataset == dataset) and (task is None or r.task == task)
            and (model is None or r.model.name == model)]
    if len(kept) == 1:
        return kept[0][0]
    held = ", ".join(f"{r.dataset} {r.task} of {r.model.name!r}" for _, r in (kept or found)[:8]) or "none"
    if not kept:
        asked = ", ".join(f"{k} {v!r}" for k, v in (("model", model), ("dataset", dataset), ("task", task)) if v)
        raise InputError(f"{where}: no result of rexrank score " + ("there" if not found else "of " + asked)
                         + f" (it holds: {held})")
    raise InputError(f"{where}: {len(kept)} results ({held}): choose one with --dataset, --task or --model-name")


def load(path: Path, references: dict[str, str] | None = None) -> Scored:
    """A result and its per-study table joined with the predictions it scored (and `references`: study_id -> text)."""
    result = Result.read(path)
    table_path, predictions_path = companions(path)
    table, _ = per_study.read(table_path)
    table["study_id"] = table["study_id"].astype(str)
    if predictions_path.is_file():
        texts = {str(r.get("study_id")): r.get("prediction") for _, r in jsonl_records(predictions_path)}
        table["prediction"] = table["study_id"].map(texts)
    if references is not None:
        table["reference"] = table["study_id"].map(references)
    return Scored(result, path, table)


def worst(scored: Scored, metric: str, n: int) -> pd.DataFrame:
    """The `n` studies that score worst by `metric` (the highest where lower is better)."""
    need(scored, metric)
    ordered = scored.table.sort_values(metric, ascending=not lower_is_better(metric), kind="stable",
                                       na_position="first")
    return ordered.head(n).reset_index(drop=True)


def disagreements(scored: Scored, n: int) -> pd.DataFrame:
    """The `n` studies whose metrics disagree most: each metric's per-study scores as percentiles (better is higher),
    the spread between a study's best and worst percentile, largest first (`spread`)."""
    metrics = scored.metrics
    if len(metrics) < 2:
        raise InputError(f"{scored.path.name}: one metric only ({', '.join(metrics)}): nothing to disagree")
    table = scored.table
    ranks = pd.DataFrame({m: (-table[m] if lower_is_better(m) else table[m]).rank(pct=True) for m in metrics})
    out = table.assign(spread=ranks.max(axis=1) - ranks.min(axis=1))
    return out.sort_values("spread", ascending=False, kind="stable").head(n).reset_index(drop=True)


def versus(a: Scored, b: Scored, metric: str, n: int) -> pd.DataFrame:
    """The `n` studies where A and B differ most by `metric`, on the studies both scored: `better` is how much
    better A is (negative: B is), largest difference first; B's columns end in `_b`."""
    for scored in (a, b):
        need(scored, metric)
    if (a.result.dataset, a.result.task) != (b.result.dataset, b.result.task):
        raise InputError(f"{a.path.name} and {b.path.name}: not the same dataset and task ({a.title}; {b.title})")
    both = a.table.merge(b.table, on="study_id", suffixes=("", "_b"))
    if both.empty:
        raise InputError(f"{a.path.name} and {b.path.name}: no study in common")
    sign = -1.0 if lower_is_better(metric) else 1.0
    both["better"] = sign * (both[metric] - both[f"{metric}_b"])
    return both.reindex(both["better"].abs().sort_values(ascending=False, kind="stable").index).head(n) \
        .reset_index(drop=True)


def edges(values: pd.Series, bins: int = BINS) -> np.ndarray:
    """A metric's histogram bin edges over its finite per-study scores (one unit wide around a single value)."""
    finite = values[np.isfinite(values.to_numpy(dtype=float))].astype(float)
    if finite.empty:
        return np.array([0.0, 1.0])
    low, high = float(finite.min()), float(finite.max())
    return np.histogram_bin_edges(finite, bins=bins, range=(low - 0.5, high + 0.5) if low == high else (low, high))


def in_bin(scored: Scored, metric: str, index: int, bins: int = BINS) -> pd.DataFrame:
    """The studies in bar `index` of `metric`'s histogram (`edges`; the last bar holds its upper edge), worst first."""
    need(scored, metric)
    cut = edges(scored.table[metric], bins)
    if not 0 <= index < len(cut) - 1:
        raise InputError(f"{metric}: no bar {index} (it has {len(cut) - 1})")
    low, high = cut[index], cut[index + 1]
    values = scored.table[metric]
    inside = (values >= low) & ((values < high) | ((values == high) & (index == len(cut) - 2)))
    kept = scored.table[inside]
    return kept.sort_values(metric, ascending=not lower_is_better(metric), kind="stable").reset_index(drop=True)


def need(scored: Scored, metric: str) -> None:
    """InputError unless `scored` has a per-study score of `metric`, naming those it has."""
    if metric in scored.metrics:
        return
    has = ", ".join(scored.metrics) or "none"
    if metric in METRICS and spec(metric).sufficient and spec(metric).carried_by(scored.table.columns):
        raise InputError(f"{scored.path.name}: {metric} is a corpus statistic (its studies give counts, not scores): "
                         f"no study has a {metric} of its own; choose from {has}")
    raise InputError(f"{scored.path.name}: no per-study {metric} (it has {has})")
