"""CheXbert label F1 as metrics with a CI (docs/metrics.md §3): micro and macro F1 over the 14 conditions and over
the top 5, made from the labels SembScore's CheXbert features already hold (no second model run).

An F1 is no mean of per-study scores, so each study keeps its sufficient statistics: for each condition whether it
is a true positive, a false positive or a false negative. The per-study table holds them as three integer bitmasks
over the 14 conditions (bit i: `CONDITIONS[i]`), shared by the four metrics (3 columns, not 42, under the table's
column bound); a metric reads its conditions' bits back as an (n, 3L) table of 0/1, TP then FP then FN, whose column
sums `rexrank.stats` turns into the F1 (`AGGREGATES`) and resamples study by study for the CI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rexrank.models.conditions import CONDITIONS
from rexrank.scorers.base import Made, Run
from rexrank.scorers.semb import TOP5, TOP5_INDEX, binary_labels
from rexrank.signature import Signature

MASKS = ("chexbert.tp", "chexbert.fp", "chexbert.fn")  # the per-study columns, one bitmask each
_BITS = np.left_shift(np.int64(1), np.arange(len(CONDITIONS), dtype=np.int64))


def masks(candidate_classes: Sequence[np.ndarray], reference_classes: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Each study's TP, FP and FN conditions as bitmasks (int64), from the CheXbert classes of its two reports
    (positive or uncertain counts as positive, f1chexbert's "rrg" mode, as `semb.label_f1`)."""
    hyp = binary_labels(np.asarray(candidate_classes)).astype(bool).reshape(-1, len(CONDITIONS))
    ref = binary_labels(np.asarray(reference_classes)).astype(bool).reshape(-1, len(CONDITIONS))
    kinds = (hyp & ref, hyp & ~ref, ~hyp & ref)
    return {column: (kind * _BITS).sum(axis=1, dtype=np.int64) for column, kind in zip(MASKS, kinds, strict=True)}


def check(columns: Mapping[str, np.ndarray]) -> list[str]:
    """What makes bitmask columns impossible: a bit past the 14 conditions, a condition two of TP, FP and FN."""
    tp, fp, fn = (np.asarray(columns[c], dtype=np.int64) for c in MASKS)
    if any(((m < 0) | (m >= 1 << len(CONDITIONS))).any() for m in (tp, fp, fn)):
        return [f"{', '.join(MASKS)}: bits past the {len(CONDITIONS)} CheXbert conditions"]
    if ((tp & fp) | (tp & fn) | (fp & fn)).any():
        return [f"{', '.join(MASKS)}: a study counts one condition twice (TP, FP and FN exclude each other)"]
    return []


def sufficient(columns: Mapping[str, object], labels: Sequence[int]) -> np.ndarray:
    """(n, 3L) 0/1 table of the `labels` conditions' bits: TP of each, then FP, then FN."""
    bits = np.asarray(labels, dtype=np.int64)
    return np.concatenate([(np.asarray(columns[column], dtype=np.int64)[:, None] >> bits) & 1 for column in MASKS],
                          axis=1)


@dataclass(frozen=True)
class LabelF1:
    """One of the four: its name, the statistic of the sums (`stats.AGGREGATES`) and the conditions it counts."""

    name: str
    title: str
    statistic: str  # micro_f1 or macro_f1
    labels: tuple[int, ...]  # indices into CONDITIONS
    demo: float | None = None  # the demo draws it (its bitmasks are drawn once, for the four)
    board: float | None = None  # its place among the board's default columns (None: a column a visitor adds)
    version: str = "1"
    bounds: tuple[float, float] = (0.0, 1.0)  # an F1
    needs: tuple[str, ...] = ("semb_score",)  # whose features hold the labels
    section: str = "§3"
    published: dict[str, str | None] = field(default_factory=dict)  # no setting of its own: SembScore's sign it
    empty_prediction: str = ("the CheXbert labels of [CLS][SEP] (a fixed set): each condition it calls positive a "
                             "false positive or a true positive, every other positive reference condition missed")

    columns = {column: "mask" for column in MASKS}  # what its spec says a study carries (shared by the four)
    check = staticmethod(check)  # the rules' test of those columns

    @property
    def summary(self) -> str:
        names = [CONDITIONS[i] for i in self.labels]
        over = (f"the {len(CONDITIONS)} CheXbert conditions" if len(names) == len(CONDITIONS)
                else f"the top 5 ({', '.join(TOP5)})" if names == list(TOP5)
                else f"{len(names)} of them ({', '.join(names)})")
        kind = "summed over conditions" if self.statistic == "micro_f1" else "averaged over conditions"
        return f"F1 of the prediction's CheXbert labels against the reference's, {kind}, over {over}."

    def table(self, columns: Mapping[str, object]) -> np.ndarray:
        return sufficient(columns, self.labels)

    def masks(self, features: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The per-study columns it is computed from (`MASKS`), made from the features of the scorer it `needs`."""
        labels = features[self.needs[0]]
        return masks(labels["candidate_labels"], labels["reference_labels"])

    def signature(self, components: Sequence[Signature]) -> Signature:
        """Signed as a composite is: its version, and the signature of the scorer whose labels it counts."""
        return Signature(self.name, self.version, components=tuple(components))

    def made_from(self, run: Run) -> Made:
        """Its bitmask columns from the labels its scorer's features hold, made once for the four."""
        run.lacking(self.needs, "features")
        masks_made = run.once(("label-f1 masks", self.needs), lambda: self.masks(run.joined))
        return Made(masks_made, self.signature([run.signatures[c] for c in self.needs]))


_ALL = tuple(range(len(CONDITIONS)))
LABEL_F1: dict[str, LabelF1] = {f.name: f for f in (
    LabelF1("chexbert_micro_f1_14", "CheXbert micro-F1 (14)", "micro_f1", _ALL, demo=0.45),
    LabelF1("chexbert_macro_f1_14", "CheXbert macro-F1 (14)", "macro_f1", _ALL, demo=0.30),
    LabelF1("chexbert_micro_f1_5", "CheXbert micro-F1 (5)", "micro_f1", tuple(TOP5_INDEX), demo=0.50),
    LabelF1("chexbert_macro_f1_5", "CheXbert macro-F1 (5)", "macro_f1", tuple(TOP5_INDEX), demo=0.45),
)}
