"""Judge verdicts the deterministic metrics of the same study contradict (docs/security.md, rule 22).

A judge can be talked into a verdict (rule 19 lists what a stronger judge could still be told). The last layer of the
defence does not read the candidate at all: where a judge says a study has no clinically significant error (the
metric's best per-study score: GREEN 1.0, zero significant errors with a finding matched; FineRadScore 0, no
correction) while the deterministic comparison of the same two reports disagrees, the study is *contradicted*:

- CheXbert: the two reports' labels differ on a condition (a study's FP or FN bitmask is not 0; the label F1 metrics'
  masks, `rexrank.scorers.label_f1`, made from SembScore's CheXbert labels whether or not a label F1 was asked for);
- where CheXbert did not run, RadGraph: fewer than half of the entities and relations are shared (the study's
  RadGraph-F1, `radgraph`, below `RADGRAPH_DIFFERS`);
- where neither ran, nothing checks the verdicts: the column is empty and the count None ("not cross-checked").

The scoring math is untouched: this only adds a `<metric>.contradicted` column (1, 0, or empty) to the per-study table
and its count to the result (`extras[<metric>]["contradicted"]`), both made from the table, so a shard merge or a
resumed run keeps them. The board withholds a judged value that has contradicted or unchecked verdicts until a
maintainer's review of exactly that result file is in the ledger (`python -m rexrank.backend approve`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rexrank.results import Result
from rexrank.scorers import REGISTRY, spec
from rexrank.scorers.label_f1 import MASKS, masks

RADGRAPH_DIFFERS = 0.5  # a RadGraph-F1 below it: the reports share fewer than half their entities and relations
SUFFIX = ".contradicted"
CHECKED = tuple(name for name, made in REGISTRY.items() if getattr(made.implementation, "best", None) is not None)


def column(name: str) -> str:
    return f"{name}{SUFFIX}"


def labels_of(features: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The CheXbert TP/FP/FN bitmasks from SembScore's per-pair labels, when SembScore ran ({} otherwise)."""
    labels = features.get("semb_score") or {}
    if "candidate_labels" not in labels:
        return {}
    return masks(labels["candidate_labels"], labels["reference_labels"])


def differ(columns: Mapping[str, Any], labels: Mapping[str, np.ndarray] | None = None
           ) -> tuple[str, np.ndarray] | None:
    """(which comparison, per study whether it says the two reports differ); None where neither CheXbert nor RadGraph
    is in `columns` (a per-study table) or `labels` (bitmasks made at scoring time)."""
    found = dict(labels or {}) or {c: columns[c] for c in MASKS if c in columns}
    if len(found) == len(MASKS):
        return "chexbert", (np.asarray(found[MASKS[1]], np.int64) | np.asarray(found[MASKS[2]], np.int64)) != 0
    if "radgraph" in columns:
        return "radgraph", np.asarray(columns["radgraph"], dtype=np.float64) < RADGRAPH_DIFFERS
    return None


def mark(per_study: pd.DataFrame, labels: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """The table with a `<metric>.contradicted` column for each cross-checked judged metric it holds: 1 where the
    judge's verdict is clean and the deterministic comparison says the reports differ, 0 elsewhere, empty when
    nothing deterministic ran. Scores are not touched."""
    found = differ(per_study, labels)
    out = per_study.copy()
    for name in CHECKED:
        if name not in per_study:
            continue
        if found is None:
            out[column(name)] = pd.array([None] * len(per_study), dtype="Int64")
            continue
        clean = np.asarray(per_study[name], dtype=np.float64) == spec(name).implementation.best
        out[column(name)] = pd.array((clean & found[1]).astype(np.int64), dtype="Int64")
    return out


def counts(per_study: pd.DataFrame) -> dict[str, dict[str, int | None]]:
    """{metric: {"contradicted": count}} from the table's columns; None: not cross-checked."""
    out = {}
    for name in CHECKED:
        if column(name) in per_study:
            values = pd.to_numeric(per_study[column(name)], errors="coerce")
            out[name] = {"contradicted": None if values.isna().all() else int(values.fillna(0).sum())}
    return out


def studies(per_study: pd.DataFrame, name: str) -> list[str]:
    """The ids of the studies whose `name` verdict is contradicted (ids only: the maintainers' list to review)."""
    if column(name) not in per_study:
        return []
    flagged = pd.to_numeric(per_study[column(name)], errors="coerce").fillna(0).to_numpy() == 1
    return [str(s) for s in per_study.loc[flagged, "study_id"]]


def withheld(result: Result) -> dict[str, str]:
    """metric -> why the board withholds its value: contradicted verdicts, or none checked. A result with neither
    (or a metric not cross-checked) withholds nothing; a maintainer's review in the ledger lifts it (the caller's)."""
    out = {}
    for name in CHECKED:
        if name not in result.metrics:
            continue
        made = result.extras.get(name)
        count = made.get("contradicted", None) if isinstance(made, dict) else None
        title = spec(name).title
        if count is None or isinstance(count, bool) or not isinstance(count, int):
            out[name] = f"{title} not cross-checked (neither CheXbert nor RadGraph scored the same studies)"
        elif count > 0:
            out[name] = (f"{title}: {count} verdict{'s' if count > 1 else ''} of no clinically significant error "
                         "the deterministic metrics contradict")
    return out
