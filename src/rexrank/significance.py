"""Two systems compared on the same studies, metric by metric, from their per-study tables (`study_id` and a column
per metric, as `rexrank score` writes them, or a metric's sufficient statistics: TP/FP/FN bitmasks, n-gram
counts): A - B in the metric's reported statistic (1 / mean for RadCliQ-v1 and FineRadScore), its paired-bootstrap
95% CI and p-value, and the approximate-randomisation p-value. `rexrank compare` prints it; the board's Compare tab
shows it for two verified models.

Only like with like: tables that record different test sets, splits or tasks (`rexrank.per_study`) are refused, and
a metric whose signatures differ (other weights, settings or texts) is left out, with the reason (`alike`)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rexrank import stats
from rexrank.errors import InputError
from rexrank.rules.parquet import About
from rexrank.scorers import METRICS, spec


@dataclass(frozen=True)
class Comparison:
    metric: str
    statistic: str  # mean or inverse_mean
    studies: int  # the pairs the tests used: a judged metric's are the studies judged for both systems
    of: int  # the studies both tables cover
    bootstrap: stats.PairedTest | None  # None: no study to pair
    randomisation: stats.PairedTest | None

    @property
    def title(self) -> str:
        return f"1/{self.metric}" if self.statistic == "inverse_mean" else self.metric


def paired(a: pd.DataFrame, b: pd.DataFrame, trials: int = stats.TRIALS, seed: int = stats.SEED,
           names: tuple[str, str] = ("A", "B"), metrics: tuple[str, ...] | None = None) -> list[Comparison]:
    """Every metric both tables carry (or those of `metrics`), in rexrank's order. The tables must cover the same
    studies, in any order; a judged metric is paired on the studies scored for both (the others have no blanks)."""
    a, b = (_by_study(t, n) for t, n in zip((a, b), names))
    if set(a.index) != set(b.index):
        only = sorted(set(a.index) ^ set(b.index))
        raise InputError(f"{names[0]} and {names[1]} cover different studies ({len(only)} differ, e.g. {only[0]}): "
                         "a paired test needs the same split and task")
    b = b.loc[a.index]
    shared = [m for m in METRICS if spec(m).carried_by(a.columns) and spec(m).carried_by(b.columns)
              and (metrics is None or m in metrics)]
    if not shared:
        raise InputError(f"{names[0]} and {names[1]} share no metric column")
    out = []
    for metric in shared:
        statistic = spec(metric).statistic
        if spec(metric).sufficient:  # the tests resample (or swap) whole studies' rows of counts (TP/FP/FN, n-grams)
            x, y = spec(metric).table(a), spec(metric).table(b)
        else:
            x, y = a[metric].astype(float), b[metric].astype(float)
        if spec(metric).judged:
            both = x.notna() & y.notna()
            x, y = x[both], y[both]
        tests = (stats.paired_bootstrap(x, y, statistic, trials, seed),
                 stats.permutation_test(x, y, statistic, trials, seed)) if len(x) else (None, None)
        out.append(Comparison(metric, statistic, len(x), len(a), *tests))
    return out


@dataclass(frozen=True)
class Alike:
    """What two tables' records allow: the metrics made alike (None: every shared one, nothing recorded to tell),
    those made otherwise (metric -> A's and B's point keys), and what could not be checked."""

    metrics: tuple[str, ...] | None
    differ: dict[str, tuple[str, str]]
    unchecked: str = ""


def alike(a: About | None, b: About | None, names: tuple[str, str] = ("A", "B")) -> Alike:
    """Refuse (InputError, one line naming both) tables of different test sets, splits or tasks; of the metrics both
    record, keep those with one signature point key. A table that records nothing (an older rexrank's, one made by
    hand) cannot be checked: `unchecked` says so."""
    if a is None or b is None:
        missing = [n for n, made in zip(names, (a, b)) if made is None]
        verb = "records" if len(missing) == 1 else "record"
        return Alike(None, {}, f"{' and '.join(missing)} {verb} no dataset, task or signatures (written by an older "
                     "rexrank, or by hand): that both are of the same test set, task and settings is not checked")
    for field in ("dataset", "split", "task"):
        if getattr(a, field) != getattr(b, field):
            raise InputError(f"{names[0]} is {a.dataset} {a.split} · {a.task}, {names[1]} is {b.dataset} {b.split} · "
                             f"{b.task}: a paired test compares two systems on the same test set and task")
    shared = [m for m in a.signatures if m in b.signatures]
    differ = {m: (a.signatures[m], b.signatures[m]) for m in shared if a.signatures[m] != b.signatures[m]}
    return Alike(tuple(m for m in shared if m not in differ), differ)


def _by_study(table: pd.DataFrame, name: str) -> pd.DataFrame:
    if "study_id" not in table.columns:
        raise InputError(f"{name}: a per-study table has a study_id column")
    if table["study_id"].duplicated().any():
        raise InputError(f"{name}: study {table['study_id'][table['study_id'].duplicated()].iloc[0]} appears twice")
    return table.set_index("study_id")
