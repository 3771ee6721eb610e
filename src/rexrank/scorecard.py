"""Run a set of metrics over (study_id, reference, prediction) rows: per-study table, aggregates, signatures;
in chunks, checkpointed so that a killed run continues. Writing a result's files is `rexrank.result_set`.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from rexrank import __version__, contradictions, per_study, stats
from rexrank.data.known import recognise
from rexrank.errors import InputError
from rexrank.files import atomic_path, write_text
from rexrank.llm.guard import DataUse
from rexrank.reports import check_pairs
from rexrank.results import MetricResult
from rexrank.scorers import REGISTRY, MetricUnavailable, Scorer, spec
from rexrank.scorers.base import CHUNK, Run
from rexrank.signature import Signature


@dataclass
class Scorecard:
    per_study: pd.DataFrame  # study_id and one column per metric that ran
    metrics: dict[str, MetricResult]
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> one line saying why and how to fix
    extras: dict[str, dict] = field(default_factory=dict)  # corpus-level numbers, e.g. CheXbert label F1

    def write_per_study(self, path: str | os.PathLike, dataset: str, split: str, task: str) -> Path:
        """The per-study table, recording what its scores are of (the test set, task and each metric's signature:
        `rexrank.per_study`), so that it is never paired with another test set's or task's."""
        return per_study.write(self.per_study, path, per_study.about(
            dataset, split, task, {name: m.signature for name, m in self.metrics.items()}))


def _plan(metrics: Sequence[str]) -> list[str]:
    """Requested metrics plus the per-text scorers those made from them need, scorers first."""
    needed = [c for m in metrics for c in spec(m).needs if c in REGISTRY and spec(c).per_text]
    return list(dict.fromkeys([*needed, *metrics]))


class MetricSet:
    """The scorers behind a list of metric names, built once (models load once) and reused for every system.

    `judge` configures the LLM-judged metrics: `judge_url`, `judge_model`, `allow_endpoints`, `concurrency`, and
    a metric's own options (`fineradscore_shots`); each `Judged.from_options` takes what it needs. Without a judge,
    GREEN uses its local model and FineRadScore is unavailable."""

    scorers: dict[str, Scorer]  # the per-text scorers, run chunk by chunk
    from_run: dict[str, Any]  # every other metric, made from the run after them (`made_from`)
    unavailable: dict[str, str]  # metric -> why it cannot run here

    def __init__(self, metrics: Sequence[str], device: str | None = None, batch_size: int | None = None,
                 progress: bool = True, judge: dict | None = None, chunk: int | None = None, dtype: str = "fp32",
                 options: dict[str, dict] | None = None):
        """`options`: a scorer's own settings by metric (its spec's `options`: {"bleu4": {"tokenize": "none"}})."""
        self.metrics, self.progress, self.chunk = list(metrics), progress, chunk or CHUNK
        self._options = {"device": device, "batch_size": batch_size, "dtype": dtype, "judge": judge,
                         "settings": options or {}}

    def __getattr__(self, name: str):
        """`scorers`, `from_run` and `unavailable`, made when first asked for (after the input is read and checked: a
        refused file costs no weight lookup, no judge and no torch import)."""
        if name not in ("scorers", "from_run", "unavailable") or "_options" not in self.__dict__:
            raise AttributeError(name)
        self.scorers, self.from_run, self.unavailable = {}, {}, {}
        how = {k: self._options[k] for k in ("device", "batch_size", "dtype", "judge")}
        for metric in _plan(self.metrics):
            made = spec(metric)
            try:  # a judged metric's own options (`quoted`) beside its judge's
                built = made.build(self._options["settings"].get(metric), progress=self.progress, **how)
                (self.scorers if made.per_text else self.from_run)[metric] = built
            except MetricUnavailable as err:
                self.unavailable[metric] = str(err)
            except ValueError as err:  # an option the scorer refuses: the caller's to fix
                if metric not in self._options["settings"]:
                    raise
                given = ", ".join(f"{metric}.{k}={v!r}" for k, v in self._options["settings"][metric].items())
                raise InputError(f"{given}: {err}") from None
        return getattr(self, name)

    def for_dataset(self, dataset: str | None) -> MetricSet:
        """This set with each scorer as it scores `dataset`'s texts (`Scorer.for_dataset`); the models are shared."""
        scorers = {name: scorer.for_dataset(dataset) for name, scorer in self.scorers.items()}  # built before the copy
        made = copy.copy(self)
        made.scorers = scorers
        return made


def dataset_of(rows: pd.DataFrame, dataset: DataUse | str | None) -> str | None:
    """The test set the rows' texts are from, for the scorers whose text preparation follows it: the one named (a
    catalog name), else the official split that holds every study id (the evidence the data-use identity goes by),
    else None."""
    if isinstance(dataset, str):
        return dataset
    match = recognise(rows["study_id"])
    return match.dataset if match is not None and match.subset else None


def score(
    rows: pd.DataFrame,
    metrics: Sequence[str] | MetricSet,
    resamples: int = stats.RESAMPLES,
    seed: int = stats.SEED,
    dataset: DataUse | str | None = None,
    checkpoint: Path | None = None,
    text: dict[str, str] | None = None,
) -> Scorecard:
    """Every metric over `rows`. The per-text scorers run chunk by chunk (the metric set's `chunk` studies: features
    computed, scored, freed), so memory does not grow with the number of studies; with `checkpoint` (a folder) each
    finished chunk is kept there and a rerun with the same rows, metrics and chunk continues after the last one.
    Composites, judged metrics and the CIs run once at the end on the whole columns. `dataset`: what the texts are,
    for the LLM judges' data-use guard (`rexrank.data.identity.identify`) and for the scorers that prepare each
    dataset's texts its own way (`dataset_of`: BLEU-4 and ROUGE-L clean IU-Xray's as R2Gen does). `text`: how the
    rows' texts were made (`Aligned.text`: the reference-text version, the task's rule for a missing section, what
    was done to the predictions), added to every metric's signature, so that numbers made on texts built otherwise
    never share a point key with these (docs/metrics.md §0)."""
    metric_set = metrics if isinstance(metrics, MetricSet) else MetricSet(metrics, progress=False)
    metric_set = metric_set.for_dataset(dataset_of(rows, dataset))  # R2Gen cleans each dataset its own way
    predictions, references = rows["prediction"].tolist(), rows["reference"].tolist()
    skipped: dict[str, str] = dict(metric_set.unavailable)
    scorers = [name for name in _plan(metric_set.metrics) if name in metric_set.scorers]
    parts = _chunks(rows, metric_set, scorers, checkpoint)
    columns: dict[str, object] = {}
    detail: dict[str, list] = {}
    signatures: dict[str, Signature] = {}
    extras: dict[str, dict] = {}
    joined: dict[str, dict[str, np.ndarray]] = {}  # each scorer's small per-pair columns, every chunk's
    for name in scorers:
        reason = next((c.skipped[name] for c in parts if name in c.skipped), None)
        if reason is not None:
            skipped[name] = reason
            continue
        scorer = metric_set.scorers[name]
        columns[name] = np.concatenate([c.columns[name] for c in parts])
        joined[name] = {k: np.concatenate([c.extras[name][k] for c in parts]) for k in parts[0].extras[name]}
        extras |= scorer.extras_from(joined[name])
        signatures[name] = scorer.signature()
    run = Run(predictions, references, dataset, columns, joined, signatures, skipped)
    for name in _plan(metric_set.metrics):
        if name not in metric_set.from_run:
            continue
        try:
            made = metric_set.from_run[name].made_from(run)
        except MetricUnavailable as err:  # a part skipped; the judge's server failed, or most answers unread
            skipped[name] = str(err)
            continue
        columns[name] = made.columns[name] if list(made.columns) == [name] else made.columns
        signatures[name] = made.signature
        detail |= made.detail
        extras |= made.extras

    if text:  # on each metric's own signature; a composite's components are signed by the composite's
        signatures = {name: replace(made, settings={**made.settings, **text}) for name, made in signatures.items()}
    ordered = {column: values for name in _plan(metric_set.metrics) if name in columns
               for column, values in _per_study(name, columns[name]).items()}
    per_study = pd.DataFrame({"study_id": rows["study_id"].tolist(), **ordered, **detail})
    # after the scores, from them: which clean verdicts CheXbert's labels (or RadGraph) contradict (rule 22)
    per_study = contradictions.mark(per_study, contradictions.labels_of(joined))
    for name, found in contradictions.counts(per_study).items():
        extras[name] = {**extras.get(name, {}), **found}
    return Scorecard(per_study, estimates(per_study, signatures, resamples, seed), skipped, extras)


def _per_study(name: str, values) -> dict[str, np.ndarray]:
    """A metric's per-study columns as its spec names them: its score, or its k sufficient statistics (as an (n, k)
    table, or by column)."""
    columns = spec(name).columns
    if isinstance(values, dict):
        return values
    if values.ndim == 1:
        return {name: values}
    return {c: v.astype(np.int64) if columns[c] == "count" else v for c, v in zip(columns, values.T, strict=True)}


def _chunks(rows: pd.DataFrame, metric_set: MetricSet, scorers: list[str], checkpoint: Path | None) -> list[Chunk]:
    """The per-text scorers' columns, chunk by chunk, each chunk freed once scored; a chunk a checkpoint keeps is
    read back instead."""
    predictions, references, chunk = rows["prediction"].tolist(), rows["reference"].tolist(), metric_set.chunk
    saved = Checkpoint(checkpoint, _run_key(rows, metric_set, scorers, chunk)) if checkpoint and scorers else None
    parts: list[Chunk] = []
    starts = range(0, max(len(rows), 1), chunk)
    kept = f" ({len(saved.resumed)} chunks kept from {saved.folder})" if saved and saved.resumed else ""
    with tqdm(total=len(rows), desc=f"studies{kept}", unit="study", leave=False,
              disable=None if metric_set.progress and len(starts) > 1 else True) as bar:
        for i, start in enumerate(starts):
            done = saved.load(i) if saved else None
            if done is None:
                done = _score_chunk(metric_set, scorers, predictions[start:start + chunk],
                                    references[start:start + chunk])
                if saved:
                    saved.save(i, done)
            parts.append(done)
            _give_back_memory()
            bar.update(min(chunk, len(rows) - start))
    return parts


@functools.cache
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): nothing to do
        return None


def _give_back_memory() -> None:
    """Hand the memory a finished chunk's features held back to the system: glibc keeps freed blocks below its
    dynamic mmap threshold (raised to the size of the large arrays freed first) in its heaps, one per thread, and
    malloc_trim returns their free pages (measured: a peak about 55 MiB lower; benchmarks/README.md, Scale)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


@dataclass
class Chunk:
    """One chunk's per-study scores, the small per-pair columns their extras need, and the scorers it skipped."""

    columns: dict[str, np.ndarray]
    extras: dict[str, dict[str, np.ndarray]]
    skipped: dict[str, str]


def _score_chunk(metric_set: MetricSet, scorers: Sequence[str], predictions: list[str],
                 references: list[str]) -> Chunk:
    done = Chunk({}, {}, {})
    for name in scorers:
        scorer = metric_set.scorers[name]
        try:
            candidate_features, reference_features = scorer.paired_features(predictions, references)
        except MetricUnavailable as err:
            done.skipped[name] = str(err)
            continue
        done.columns[name] = np.asarray(scorer.score(candidate_features, reference_features), dtype=np.float64)
        done.extras[name] = scorer.extras_columns(candidate_features, reference_features)
        del candidate_features, reference_features  # freed before the next metric's features are made
    return done


def _run_key(rows: pd.DataFrame, metric_set: MetricSet, scorers: Sequence[str], chunk: int) -> str:
    """What a checkpoint's chunks depend on: the rows, each scorer's point key, the chunk size, rexrank's version."""

    def made(name: str) -> str:
        scorer = metric_set.scorers[name]
        try:
            return scorer.signature().point_key
        except (MetricUnavailable, NotImplementedError):  # known only once it runs: it will be skipped, not kept
            return f"{name}:{scorer.version}:unsigned"

    digest = hashlib.sha256(json.dumps([__version__, chunk, [made(name) for name in scorers]]).encode())
    for column in ("study_id", "prediction", "reference"):
        for text in rows[column]:
            digest.update(str(text).encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


class Checkpoint:
    """Finished chunks of one run in a folder: `run.json` names the run, `chunk-<i>.npz` holds chunk i (written
    whole or not at all) and the run's key, checked when it is read: a chunk of another run, or one that does not
    read, is scored again. A folder left by another run (other rows, metrics, weights or chunk size) is cleared.
    One run at a time uses a folder (`score_file` holds `writing`); the key in each chunk keeps a chunk of another
    run out even where a lock does not hold (a file system without locks, a folder copied from elsewhere)."""

    def __init__(self, folder: Path, key: str):
        self.folder, self.key = Path(folder), key
        self.marker = self.folder / "run.json"
        if self.folder.exists() and not self._ours():
            shutil.rmtree(self.folder)
        self.resumed = sorted(p.name for p in self.folder.glob("chunk-*.npz"))  # made only once a chunk is saved

    def _ours(self) -> bool:
        try:
            return json.loads(self.marker.read_text(encoding="utf-8")).get("run") == self.key
        except (OSError, ValueError, AttributeError):
            return False

    def _path(self, i: int) -> Path:
        return self.folder / f"chunk-{i:05d}.npz"

    def load(self, i: int) -> Chunk | None:
        if not self._path(i).is_file():
            return None
        try:
            return self._read(i)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # torn or foreign: scored again
            return None

    def _read(self, i: int) -> Chunk | None:
        with np.load(self._path(i), allow_pickle=False) as saved:
            if "run" not in saved.files or str(saved["run"]) != self.key:
                return None
            chunk = Chunk({}, {}, json.loads(str(saved["skipped"])))
            for key in saved.files:
                kind, _, rest = key.partition("/")  # "run" and "skipped" have no "/"
                if kind == "column":
                    chunk.columns[rest] = saved[key]
                elif kind == "extra":
                    name, _, column = rest.partition("/")
                    chunk.extras.setdefault(name, {})[column] = saved[key]
            for name in chunk.columns:
                chunk.extras.setdefault(name, {})
        return chunk

    def save(self, i: int, chunk: Chunk) -> None:
        arrays = {"run": np.array(self.key), "skipped": np.array(json.dumps(chunk.skipped)),
                  **{f"column/{name}": values for name, values in chunk.columns.items()},
                  **{f"extra/{name}/{key}": values for name, more in chunk.extras.items()
                     for key, values in more.items()}}
        if not self.marker.is_file():
            self.folder.mkdir(parents=True, exist_ok=True)
            write_text(self.marker, json.dumps({"run": self.key}) + "\n")
        with atomic_path(self._path(i)) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, **arrays)


def estimates(per_study: pd.DataFrame, signatures: dict[str, Signature], resamples: int = stats.RESAMPLES,
              seed: int = stats.SEED) -> dict[str, MetricResult]:
    """Each metric's dataset value and CI from its per-study columns, as its spec reads them (every study has a score:
    a judged study whose answer could not be read is at the metric's worst)."""
    results = {}
    for name, signature in signatures.items():
        kind = spec(name)
        results[name] = MetricResult.from_estimate(stats.estimate(kind.table(per_study), kind.statistic, resamples,
                                                                  seed), signature)
    return results


def table_report(name: str, predictions: Sequence[str], references: Sequence[str],
                 resamples: int = stats.RESAMPLES, seed: int = stats.SEED, **runtime) -> dict:
    """What the `evaluate` module of a metric made from a table returns (a composite, a label F1, a corpus statistic):
    its value with a CI and its signature, computed through the scorecard (each component once, sharing the cache).
    A composite adds its per-study values, its raw mean and 1/mean and its components' means; a metric of sufficient
    statistics adds them per study (`per_sample`: column -> values), so that the caller can merge or resample them."""
    check_pairs(predictions, references)
    rows = pd.DataFrame({"study_id": [str(i) for i in range(len(predictions))], "prediction": list(predictions),
                         "reference": list(references)})
    made = spec(name)
    settings = {key: runtime.pop(key) for key in list(runtime) if key in made.options}
    card = score(rows, MetricSet([name], **{"progress": False} | runtime, options={name: settings}), resamples, seed)
    if name not in card.metrics:
        raise MetricUnavailable(f"{name}: {card.skipped.get(name, 'not computed')}")
    result = card.metrics[name]
    if made.sufficient:
        return {name: result.value, f"{name}_ci": [result.low, result.high], "signature": str(result.signature),
                "per_sample": {c: card.per_study[c].tolist() for c in made.columns}}
    return {name: result.mean, f"inv_{name}": result.value, f"inv_{name}_ci": [result.low, result.high],
            f"{name}_per_sample": card.per_study[name].tolist(),
            **{c: card.metrics[c].mean for c in made.needs},
            "non_positive_mean": result.non_positive_mean, "signature": str(result.signature)}
