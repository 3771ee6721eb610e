"""Every metric held against the readers' votes: for each metric the per-study tables score, the share of decisive
votes (A or B chosen) where the metric, on that study, scores the chosen report better (a metric tie counts half, as
a tie does in the ratings), with a bootstrap interval over the votes and their number; and Kendall's tau-b between
the metric's order of the models (its dataset value, as the board shows it) and the votes' (their Bradley–Terry
ratings). A metric that agrees with readers scores near 1 and near tau 1; a coin scores 0.5.

The votes are those the ranking counts (`rexrank.arena.limits`), each with its weight: a flood moves agreement no
more than it moves the ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rexrank import per_study
from rexrank.arena.limits import Counted
from rexrank.arena.ranking import RESAMPLES, SEED, battles, fit
from rexrank.errors import InputError
from rexrank.results import Result, companions, results_by_model
from rexrank.scorers import inverted
from rexrank.stats import resample_means


@dataclass(frozen=True)
class Agreement:
    metric: str
    share: float  # weighted share of decisive votes the metric agrees with
    low: float
    high: float
    votes: int  # decisive votes where both reports have a score
    metric_ties: int  # of which the metric scored both reports the same
    tau: float | None  # Kendall's tau-b, metric order vs votes' order; None with fewer than two models
    models: int  # models in the tau


def tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b: (concordant - discordant) / sqrt((n0 - ties in x) * (n0 - ties in y)), n0 = n(n-1)/2; NaN
    when either side is all ties."""
    n = len(x)
    if n != len(y):
        raise ValueError("tau_b: x and y differ in length")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            ties_x += dx == 0
            ties_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def load_tables(folder: str | Path, dataset: str, task: str) -> dict[str, tuple[Result, dict[str, dict]]]:
    """model name -> (its result, metric -> {study_id: per-study score}) for `dataset` and `task` in a
    `rexrank score --out` folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such results folder (give a rexrank score --out folder)")
    out = {}
    for model, found in results_by_model(folder).items():
        for path, result in found:
            if (result.dataset, result.task) != (dataset, task):
                continue
            table, _ = per_study.read(companions(path)[0])
            ids = table["study_id"].astype(str)
            out[model] = (result, {m: dict(zip(ids, table[m].to_numpy(float)))
                                   for m in per_study.metric_columns(table)})
    return out


def agreement(data: Counted, tables: dict[str, tuple[Result, dict[str, dict]]], resamples: int = RESAMPLES,
              seed: int = SEED, confidence: float = 0.95) -> list[Agreement]:
    """One row per metric scored for every voted model, in the registry's order."""
    decisive = [(v, w) for v, w in zip(data.votes, data.weights) if v.chosen is not None
                and v.model_a in tables and v.model_b in tables]
    voted = sorted({m for v, _ in decisive for m in (v.model_a, v.model_b)})
    if not voted:
        return []
    metrics = [m for m in tables[voted[0]][1] if all(m in tables[x][1] for x in voted)]
    fitted = battles([v for v, _ in decisive], [w for _, w in decisive])
    ratings = dict(zip(fitted.models, fit(fitted.a, fitted.b, fitted.score, fitted.weight, len(fitted.models))))
    tail = 100 * (1 - confidence) / 2
    rows = []
    for metric in metrics:
        sign = -1.0 if inverted(metric) else 1.0  # a per-study RadCliQ is better lower
        agree, weight, ties = [], [], 0
        for v, w in decisive:
            a = tables[v.model_a][1][metric].get(v.study_id, math.nan)
            b = tables[v.model_b][1][metric].get(v.study_id, math.nan)
            if not (math.isfinite(a) and math.isfinite(b)):
                continue
            better = np.sign(sign * (a - b))  # +1: the metric prefers A
            ties += better == 0
            agree.append(0.5 if better == 0 else float((better > 0) == (v.winner == "a")))
            weight.append(w)
        if not agree:
            continue
        x, w = np.array(agree), np.array(weight)
        boot = resample_means(np.column_stack([x * w, w]), resamples, seed)
        low, high = np.percentile(boot[:, 0] / boot[:, 1], [tail, 100 - tail])
        values = {m: tables[m][0].metrics[metric].value for m in voted if metric in tables[m][0].metrics}
        both = [m for m in voted if values.get(m) is not None]
        tau = tau_b([values[m] for m in both], [ratings[m] for m in both]) if len(both) > 1 else None
        rows.append(Agreement(metric, float((x * w).sum() / w.sum()), float(low), float(high), len(agree), int(ties),
                              tau, len(both)))
    return rows
