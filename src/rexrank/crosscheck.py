"""rexrank against CXR-Report-Metric on real data: a model's predictions, the split, and the per-study CSV that
rajpurkarlab/CXR-Report-Metric (`CXRMetric/run_eval.py`, `calc_metric`) wrote for them; where the two differ, by
metric and by study, and by how much (`rexrank crosscheck`).

That CSV is `pred.to_csv(out_csv)` after `reset_index()`: an unnamed index column, `index`, the predictions CSV's own
columns (`study_id`, `report`: the PREDICTION text, as ReXrank's evaluation script writes it), then `bleu_score`,
`bertscore`, `semb_score`, `radgraph_combined`, `RadCliQ-v0`, `RadCliQ-v1`, one row per study the ground-truth and
predictions CSVs share, sorted by study id. Its RadGraph step reads every id with `int()`, so sets whose ids are not
numbers were run with the ids replaced by 0..n-1 in file order (MoERad's IU-Xray scores): `positional=True` reads
id k as the k-th study of the predictions file.

Tolerances (`TOLERANCES`), each a claim about rounding, not a fit to one machine:

- `bleu2`: exact. Both sides do the same double arithmetic on the same tokens (ours equals fast-bleu, which the
  reference calls, to 1.1e-16: benchmarks/README.md), and pandas writes a double as its shortest repr, which reads
  back exactly; 1e-12 allows for the order of a few double operations and is far below the smallest step one token
  makes (a bigram precision moves by 1/(n-1): 2e-3 on a 500-token report).
- `bertscore`, `semb_score`: float32 models (epsilon 1.2e-7) run in another stack (torch and transformers versions,
  CPU or GPU kernels, batch padding) sum 768-wide products over 6 or 12 layers in another order. The largest
  per-study difference measured between code paths on the same weights is 2e-5 (SembScore against
  CXR-Report-Metric's encode path; BERTScore 2e-7 raw, which its rescaling multiplies by 1/(1 - 0.847) = 6.5);
  1e-4 leaves a margin of five and is a tenth of the board's third decimal. A reference run on a GPU with TF32
  matrix products (PyTorch 1.7-1.11's default on Ampere) rounds to 10 bits and will differ by more: it is reported.
- `radgraph`: an F1 of counts, the same in any stack unless a float32 near-tie flips an entity or relation label,
  which is a real difference in the graph (1e-3 or more) and is reported: 1e-9.
- `radcliq_v0`, `radcliq_v1`: linear in the four, so their tolerances propagated, sum |slope| x tolerance.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rexrank.data import align, load_predictions, load_split
from rexrank.errors import InputError
from rexrank.scorers.radcliq import COMPONENTS, RADCLIQ_V0, RADCLIQ_V1

# CXR-Report-Metric's columns, in the order run_eval.py adds them -> rexrank's metric names.
COLUMNS = {"bleu_score": "bleu2", "bertscore": "bertscore", "semb_score": "semb_score",
           "radgraph_combined": "radgraph", "RadCliQ-v0": "radcliq_v0", "RadCliQ-v1": "radcliq_v1"}
STUDY_ID, REPORT = "study_id", "report"
_COMPONENT_TOLERANCE = {"bleu2": 1e-12, "bertscore": 1e-4, "semb_score": 1e-4, "radgraph": 1e-9}
TOLERANCES = {**_COMPONENT_TOLERANCE, **{
    name: float(sum(abs(w) * _COMPONENT_TOLERANCE[c] for w, c in zip(model.weights.tolist(), COMPONENTS, strict=True)))
    for name, model in (("radcliq_v0", RADCLIQ_V0), ("radcliq_v1", RADCLIQ_V1))}}


def collapse(text: object) -> str:
    """Whitespace collapsed: every run of spaces, tabs and line breaks one space, the ends stripped."""
    return " ".join(str(text).split()) if isinstance(text, str) else ""


@dataclass(frozen=True)
class OfficialScores:
    """A CXR-Report-Metric output CSV: study ids and report texts as written, and each metric column present."""

    path: str
    study_ids: list[str]
    reports: list[str]
    values: dict[str, np.ndarray]  # rexrank metric name -> per-study value (NaN: an empty cell)


def read_scores_csv(path: str | os.PathLike) -> OfficialScores:
    """The per-study CSV CXR-Report-Metric wrote, checked: the study_id and report columns, one row per study, and
    at least one of its metric columns, every cell a number or empty."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file (the CSV CXR-Report-Metric's calc_metric wrote)")
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # a report may be any length
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            table = list(csv.reader(handle))
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text ({err})") from None
    except csv.Error as err:
        raise InputError(f"{path}: not a readable CSV ({err})") from None
    if not table:
        raise InputError(f"{path}: empty; expected CXR-Report-Metric's per-study CSV")
    header = table[0]
    metrics = [c for c in COLUMNS if c in header]
    if STUDY_ID not in header or REPORT not in header or not metrics:
        raise InputError(f"{path}: not CXR-Report-Metric's per-study CSV: expected columns {STUDY_ID}, {REPORT} and "
                         f"some of {', '.join(COLUMNS)}; found {','.join(header)[:200]}")
    at = {name: header.index(name) for name in (STUDY_ID, REPORT, *metrics)}
    ids, reports, values, seen = [], [], {COLUMNS[c]: [] for c in metrics}, {}
    for number, row in enumerate(table[1:], 2):
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(f"{path}:{number}: {len(row)} fields, the header has {len(header)}")
        study = row[at[STUDY_ID]].strip()
        if not study:
            raise InputError(f"{path}:{number}: no study_id")
        if study in seen:
            raise InputError(f"{path}:{number}: study {study} appears twice (first on line {seen[study]})")
        seen[study] = number
        ids.append(study)
        reports.append(row[at[REPORT]])
        for column in metrics:
            cell = row[at[column]].strip()
            try:
                values[COLUMNS[column]].append(float(cell) if cell else math.nan)
            except ValueError:
                raise InputError(f"{path}:{number}: study {study}: {column} {cell[:40]!r} is not a number") from None
    if not ids:
        raise InputError(f"{path}: no studies in it")
    return OfficialScores(str(path), ids, reports, {k: np.asarray(v, dtype=np.float64) for k, v in values.items()})


@dataclass(frozen=True)
class Study:
    study_id: str
    rexrank: float
    csv: float

    @property
    def difference(self) -> float:
        return self.rexrank - self.csv


@dataclass(frozen=True)
class MetricCheck:
    metric: str
    column: str  # CXR-Report-Metric's name for it
    tolerance: float
    studies: int  # compared
    rexrank_mean: float
    csv_mean: float  # over the studies with a value in the CSV
    max_abs_difference: float
    differ: int  # studies beyond the tolerance, an empty CSV cell included
    worst: list[Study] = field(default_factory=list)  # the largest differences beyond the tolerance, largest first

    def to_json(self) -> dict:
        out = asdict(self) | {"worst": [asdict(s) | {"difference": s.difference} for s in self.worst]}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


@dataclass(frozen=True)
class TextMismatch:
    study_id: str
    at: int  # the first character (of the whitespace-collapsed texts) where they part
    is_reference: bool  # the CSV's text is this study's reference instead (the two input CSVs swapped)


@dataclass
class Crosscheck:
    predictions: str
    against: str
    dataset: str
    split: str
    task: str
    positional: bool
    studies: int  # in both the CSV and the task's studies
    missing_from_csv: list[str]  # the task's studies the CSV has no row for
    extra_in_csv: list[str]  # CSV rows for no study of the task
    dropped_by_task: list[str]  # of those, studies the task leaves out (a findings run given every study?)
    text_mismatches: list[TextMismatch]
    metrics: dict[str, MetricCheck]
    skipped: dict[str, str]

    @property
    def agree(self) -> bool:
        return (not self.missing_from_csv and not self.extra_in_csv and not self.text_mismatches
                and not any(m.differ for m in self.metrics.values()))

    def to_json(self) -> dict:
        return {"predictions": self.predictions, "against": self.against, "dataset": self.dataset,
                "split": self.split, "task": self.task, "positional": self.positional, "studies": self.studies,
                "agree": self.agree, "missing_from_csv": self.missing_from_csv, "extra_in_csv": self.extra_in_csv,
                "dropped_by_task": self.dropped_by_task,
                "text_mismatches": [asdict(t) for t in self.text_mismatches],
                "metrics": {name: m.to_json() for name, m in self.metrics.items()},
                "tolerances": {name: TOLERANCES[name] for name in self.metrics}, "skipped": dict(self.skipped)}

    def lines(self, skipped: bool = True) -> list[str]:
        """The report as the command prints it; `skipped`: a line for each metric not checked (the command says it
        in its own words instead)."""
        how = "by position (--positional: CSV id k is the predictions file's k-th study)" if self.positional \
            else "by study id"
        out = [f"{self.predictions} against {self.against} (CXR-Report-Metric's per-study scores)",
               f"{self.dataset} {self.split} · {self.task} · {self.studies:,} studies in both, matched {how}"]
        if self.missing_from_csv:
            out.append(f"not in the CSV: {len(self.missing_from_csv):,} of the task's studies: "
                       f"{_ids(self.missing_from_csv)}")
        if self.extra_in_csv:
            dropped = (f" ({len(self.dropped_by_task):,} of them studies the {self.task} task leaves out: the CSV "
                       "was made for another task?)") if self.dropped_by_task else ""
            out.append(f"in the CSV only: {_studies(len(self.extra_in_csv))}{dropped}: {_ids(self.extra_in_csv)}")
        if self.text_mismatches:
            swapped = sum(t.is_reference for t in self.text_mismatches)
            n = len(self.text_mismatches)
            note = (f"; {swapped:,} of them {'holds' if swapped == 1 else 'hold'} the study's reference instead (the "
                    "ground-truth and predictions CSVs given to CXR-Report-Metric swapped?)") if swapped else ""
            out.append(f"report column: for {_studies(n)} it is not the prediction given (whitespace collapsed)"
                       f"{note}; the CSV's scores there are of other text:")
            out += [f"    {t.study_id}: {'the reference' if t.is_reference else f'parts at character {t.at}'}"
                    for t in self.text_mismatches[:10]]
            if len(self.text_mismatches) > 10:
                out.append(f"    ... and {len(self.text_mismatches) - 10:,} more")
        else:
            out.append(f"report column: the predictions given, for every one of the {self.studies:,} studies "
                       "(whitespace collapsed)")
        for name, m in self.metrics.items():
            verdict = "agree" if not m.differ else f"{m.differ:,} of {m.studies:,} studies differ"
            out.append(f"  {name:<11} mean rexrank {m.rexrank_mean:.6f}, CSV {m.csv_mean:.6f}; max |diff| "
                       f"{m.max_abs_difference:.2e} (tolerance {m.tolerance:.0e}): {verdict}")
            out += [f"      {s.study_id}: rexrank {s.rexrank:.6f}, CSV {_shown(s.csv)} ({s.difference:+.2e})"
                    for s in m.worst]
        bleu = self.metrics.get("bleu2")
        if bleu is not None and bleu.differ > bleu.studies / 2:
            out.append("  (BLEU-2 differs on most studies: was the CSV made against another task's or split's "
                       "references? --task, --dataset)")
        if skipped:
            out += [f"  {name:<11} not checked here: {why}" for name, why in self.skipped.items()]
        checked = ", ".join(self.metrics) or "no metric"
        out.append(f"all agree (checked: {checked})" if self.agree else f"they differ (checked: {checked})")
        return out


def _studies(n: int) -> str:
    return f"{n:,} {'study' if n == 1 else 'studies'}"


def _ids(ids: Sequence[str], limit: int = 10) -> str:
    return ", ".join(ids[:limit]) + (f" ... ({len(ids) - limit:,} more)" if len(ids) > limit else "")


def _shown(value: float) -> str:
    return "empty" if math.isnan(value) else f"{value:.6f}"


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _positional(official: OfficialScores, order: list[str]) -> list[str]:
    """CSV ids 0..n-1 as the predictions file's studies in its order."""
    ids, seen = [], {}
    for study in official.study_ids:
        if not study.isdigit() or int(study) >= len(order):
            raise InputError(f"{official.path}: study_id {study!r} is not a position in the predictions (0 to "
                             f"{len(order) - 1}); --positional reads each id as one")
        if int(study) in seen:
            raise InputError(f"{official.path}: study_id {study!r} and {seen[int(study)]!r} are the same position")
        seen[int(study)] = study
        ids.append(order[int(study)])
    return ids


def crosscheck(predictions: str | os.PathLike, dataset: str, against: str | os.PathLike, task: str, *,
               split: str | None = None, dataset_name: str | None = None, positional: bool = False,
               metrics: Sequence[str] | None = None, worst: int = 5, device: str | None = None,
               batch_size: int | None = None, dtype: str = "fp32", progress: bool = False) -> Crosscheck:
    """Score `predictions` on the split with rexrank's metrics that can run here and compare each study with the
    CSV `against` (the module's rules). `metrics`: some of the CSV's (default: all it has)."""
    from rexrank.scorecard import MetricSet, score

    official = read_scores_csv(against)
    test_split = load_split(dataset, split, dataset_name)
    raw = load_predictions(predictions)
    aligned = align(test_split.references(task), raw, str(predictions))
    references = test_split.references(task)
    present = list(official.values)
    wanted = list(present if metrics is None else dict.fromkeys(metrics))
    absent = [m for m in wanted if m not in present]
    if absent:
        raise InputError(f"{against}: no column for {', '.join(absent)} (it has "
                         f"{', '.join(c for c, m in COLUMNS.items() if m in present)})")
    ids = _positional(official, list(raw)) if positional else official.study_ids
    rows = aligned.rows.set_index("study_id", drop=False)
    in_task = set(rows.index)
    if not in_task & set(ids):
        hint = (" Its ids are 0, 1, 2, ...: pass --positional if they stand for the predictions' order."
                if all(i.isdigit() for i in ids) and not positional else "")
        raise InputError(f"{against}: none of its {len(ids):,} study ids is a study of the {task} task of "
                         f"{dataset} (first: {ids[0]}).{hint}")
    shared = [i for i in ids if i in in_task]
    extra = [i for i in ids if i not in in_task]
    missing = [i for i in rows.index if i not in set(ids)]
    position = {study: n for n, study in enumerate(ids)}
    mismatches = []
    for study in shared:
        theirs, ours = collapse(official.reports[position[study]]), collapse(rows.at[study, "prediction"])
        if theirs != ours:
            mismatches.append(TextMismatch(study, _first_difference(theirs, ours),
                                           theirs == collapse(references.references.get(study))))
    chosen = rows.loc[shared].reset_index(drop=True)
    card = score(chosen, MetricSet(wanted, device, batch_size, progress=progress, dtype=dtype), resamples=1)
    checks = {}
    for name in wanted:
        if name not in card.per_study:
            continue
        ours = card.per_study[name].to_numpy(dtype=np.float64)
        theirs = official.values[name][[position[s] for s in shared]]
        checks[name] = _compare(name, shared, ours, theirs, worst)
    return Crosscheck(str(predictions), str(against), test_split.dataset, test_split.split, task, positional,
                      len(shared), missing, extra, [i for i in extra if i in references.dropped], mismatches, checks,
                      {name: why for name, why in card.skipped.items() if name in wanted})


def _compare(name: str, studies: list[str], ours: np.ndarray, theirs: np.ndarray, worst: int) -> MetricCheck:
    tolerance = TOLERANCES[name]
    gap = np.abs(ours - theirs)
    off = np.where(np.isnan(gap), np.inf, gap)  # an empty CSV cell differs
    beyond = np.flatnonzero(off > tolerance)
    order = beyond[np.argsort(-off[beyond], kind="stable")][:worst]
    has = ~np.isnan(theirs)
    return MetricCheck(name, next(c for c, m in COLUMNS.items() if m == name), tolerance, len(studies),
                       float(np.mean(ours)) if len(ours) else math.nan,
                       float(np.mean(theirs[has])) if has.any() else math.nan,
                       float(np.max(off)) if len(off) else 0.0, len(beyond),
                       [Study(studies[i], float(ours[i]), float(theirs[i])) for i in order])
