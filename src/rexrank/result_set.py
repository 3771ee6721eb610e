"""A result set on disk: the three files of one result (its JSON, per-study table and the predictions it scored),
written so that a killed run is never taken for a finished one, under a lock so that two runs never write one;
`score_file`, the whole job behind `rexrank score` (load, check, score, write); and `merge`, which joins the shards
of one run (`rexrank.shards`) into the result an unsharded run writes.

A rerun never replaces a result without a word. Scoring the same model on the same dataset and task into the same
folder again keeps what the earlier run computed and this one did not (`--metrics bleu2` after a full run keeps
BLEU-4 and ROUGE-L), when both scored the same texts (`inputs`: one digest of every study's id, reference and
prediction) and every metric both computed has one signature point key; otherwise it is refused before any scoring
(other texts) or before anything is written (other settings: the scored chunks stay, so the same command with
`replace=True`, `--replace`, writes at once)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from rexrank import contradictions, per_study, shards, stats
from rexrank.data import align, load_predictions, load_split
from rexrank.data.identity import identify
from rexrank.data.known import is_demo
from rexrank.data.predictions import write_predictions
from rexrank.errors import InputError
from rexrank.files import Locked, exclusive, file_sha256
from rexrank.results import ModelInfo, Result, ResultError, companions, result_paths
from rexrank.rules.copies import copy_problem
from rexrank.scorecard import MetricSet, Scorecard, estimates, score
from rexrank.signature import Signature


def write_result_set(out: Path, result: Result, card: Scorecard, study_ids: Sequence[str],
                     predictions: Sequence[str]) -> Result:
    """The three files of a result: per-study table and predictions first, then the result JSON naming both by
    sha256. A run killed in between leaves a JSON whose hashes disagree with the files beside it, which `rexrank
    submit` refuses. Returns the result as written."""
    json_path, table_path, predictions_path = result_paths(out, result.dataset, result.task, result.model.name)
    card.write_per_study(table_path, result.dataset, result.split, result.task)
    write_predictions(predictions_path, study_ids, predictions)
    result = replace(result, companions={"per_study.parquet": file_sha256(table_path),
                                         "predictions.jsonl": file_sha256(predictions_path)})
    result.write(json_path)
    _drop_superseded(out, result)
    return result


def inputs_digest(rows: pd.DataFrame) -> str:
    """What a result scored, as one sha256: each study's id, reference and prediction, in order (the result's
    `checks.inputs`; two runs that share it scored the same texts)."""
    digest = hashlib.sha256()
    for row in rows[["study_id", "reference", "prediction"]].itertuples(index=False):
        digest.update(json.dumps(list(row), ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


def _earlier(path: Path, inputs: str) -> Result | None:
    """The result a rerun would write over (None: none there), refused (naming the file and --replace) unless it
    scored the same texts."""
    if not path.is_file():
        return None
    try:
        earlier = Result.read(path)
    except ResultError as err:
        raise InputError(f"{path}: a result is there that cannot be read ({err}): give --replace to replace it") \
            from None
    if earlier.checks.get("inputs") != inputs:
        why = ("scored other predictions or references" if earlier.checks.get("inputs") else
               "does not record what it scored (an older rexrank's)")
        raise InputError(f"{path} holds {earlier.model.name!r}'s earlier result, which {why}: this run would replace "
                         "it; give --replace to replace it, or another --model-name or --out to keep both")
    return earlier


def _kept(earlier: Result | None, card: Scorecard, path: Path) -> Scorecard:
    """`card` with what `earlier` (the result at `path`) computed and this run did not; InputError naming `path` and
    --replace where a metric both computed was made otherwise (its signatures' point keys differ)."""
    from rexrank.scorers import METRICS, spec

    if earlier is None:
        return card
    for name, metric in card.metrics.items():
        before = earlier.metrics.get(name)
        if before and before.signature and metric.signature and \
                before.signature.point_key != metric.signature.point_key:
            raise InputError(f"{path}: {name} was made otherwise before ({before.signature.point_key}, now "
                             f"{metric.signature.point_key}): give --replace to replace the earlier result (this "
                             "run's scores are kept: it writes at once), or another --model-name or --out")
    kept = [name for name in earlier.metrics if name not in card.metrics]
    try:
        earlier_table = per_study.read(companions(path)[0])[0] if kept else card.per_study
    except (InputError, OSError) as err:
        raise InputError(f"{path}: its per-study table cannot be read ({err}), so what it holds cannot be kept: give "
                         "--replace to replace it") from None
    columns = [c for name in kept for c in (*spec(name).columns, *spec(name).details) if c in earlier_table]
    table = card.per_study.merge(earlier_table[["study_id", *columns]], on="study_id", how="left") if columns \
        else card.per_study
    metrics = {**card.metrics, **{name: earlier.metrics[name] for name in kept}}
    return Scorecard(table, {name: metrics[name] for name in sorted(metrics, key=METRICS.index)},
                     {name: why for name, why in card.skipped.items() if name not in kept},
                     {**earlier.extras, **card.extras})


def _held_by(path: Path) -> str | None:
    """The model whose result a result JSON holds (None: no such file, or not a result)."""
    try:
        return Result.read(path).model.name if path.is_file() else None
    except (ResultError, OSError):
        return None


def check_room(out: Path, dataset: str, task: str, model: str) -> None:
    """Refuse, before any scoring, to replace another model's result: two model names that make the same file name
    ("Model A" and "Model-A") would otherwise share one. The same model scored again replaces its own."""
    path = result_paths(out, dataset, task, model)[0]
    held = _held_by(path)
    if held is not None and held != model:
        raise InputError(f"{path} holds the result of model {held!r}, which model {model!r} would replace (their "
                         "names make the same file name): give this one another --model-name, or its own --out")


def _drop_superseded(out: Path, result: Result) -> None:
    """The same model's result under rexrank's earlier name, `<dataset>.<task>.json`, and its companions: replaced by
    the one just written, as a rerun into the same --out replaced it then (another model's stays)."""
    legacy = out / f"{result.dataset}.{result.task}.json"
    if _held_by(legacy) == result.model.name:
        for path in (*companions(legacy), legacy):
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def writing(out: Path, dataset: str, task: str, model: str, part: str = ""):
    """Hold `<out>/.partial/<dataset>.<task>.<model><part>.lock` while one run scores into `out` and writes its
    files: a second run of the same model, dataset and task into the same folder stops at once with the first's pid,
    instead of clearing its checkpoint and mixing their chunks and files. Other models, tasks and shards have files
    of their own and run beside it."""
    stem, partial = result_paths(out, dataset, task, model)[0].name.removesuffix(".json") + part, out / ".partial"
    made = [] if out.exists() else [out]  # a run that ends before writing anything leaves no folder behind
    try:
        with exclusive(partial / f"{stem}.lock"):
            yield
    except Locked as held:
        pid = "" if held.pid is None else f" (pid {held.pid})"
        raise InputError(f"another rexrank score is writing {out / stem}{pid}: wait for it to end, or give this run "
                         "its own --out") from None
    finally:
        for folder in (partial, *made):  # only if empty: a kept checkpoint, or another run's, stays
            with contextlib.suppress(OSError):
                folder.rmdir()


def score_file(predictions: Path, dataset: str, task: str, metrics: Sequence[str] | MetricSet, out: Path,
               model: ModelInfo, split: str | None = None, dataset_name: str | None = None,
               resamples: int = stats.RESAMPLES, seed: int = stats.SEED,
               shard: tuple[int, int] | None = None, ignore_extra: bool = False, partial: bool = False,
               replace_earlier: bool = False) -> Result:
    """Score one predictions file on one split and task; write the result JSON and per-study table. With `shard`
    (I, N), score the I-th of N blocks of the studies and write that shard for `rexrank merge` instead. The result's
    dataset and split are what the split is (`load_split`: an official split's ids name it), `split` and
    `dataset_name` checked against it; `ignore_extra` and `partial` as `rexrank.data.align` takes them. An earlier
    result of the model in `out` is kept and added to, or refused (the module's rules), unless `replace_earlier`."""
    test_split = load_split(dataset, split, dataset_name)
    aligned = align(test_split.references(task), load_predictions(predictions), str(predictions), ignore_extra,
                    partial)
    rows = aligned.rows if shard is None else shards.shard_rows(aligned.rows, *shard)
    # The data-use guard decides by what the split is (its build metadata, its study ids), not by its file's name.
    part = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
    stem = result_paths(out, test_split.dataset, task, model.name)[0].name.removesuffix(".json")
    checkpoint = out / ".partial" / f"{stem}{part}"  # a killed run continues from here
    check_room(out, test_split.dataset, task, model.name)
    inputs, path = inputs_digest(aligned.rows), result_paths(out, test_split.dataset, task, model.name)[0]
    earlier = None if shard is not None or replace_earlier else _earlier(path, inputs)
    warnings = [f"{dataset}: {note}" for note in test_split.notes] + [f"{predictions}: {w}" for w in aligned.warnings]
    if not is_demo(test_split.source) and (copied := copy_problem(*(aligned.rows[c].tolist() for c in (
            "study_id", "prediction", "reference")))):
        warnings.append(f"{predictions}: {copied}; the leaderboard's review refuses such a set")
    with writing(out, test_split.dataset, task, model.name, part):
        card = score(rows, metrics, resamples, seed, dataset=identify(test_split), checkpoint=checkpoint,
                     text=aligned.text)
        card = _kept(earlier, card, path)
        result = Result(model, test_split.dataset, test_split.split, task, card.metrics, aligned.counts,
                        card.skipped, warnings=warnings, extras=card.extras, checks={"inputs": inputs})
        if shard is not None:
            shards.write_shard(out, result, card.per_study, rows, *shard)
        else:
            result = write_result_set(out, result, card, aligned.rows["study_id"], aligned.rows["prediction"])
        shutil.rmtree(checkpoint, ignore_errors=True)
    return result


def merge(shards: list[Path], out: Path, resamples: int, seed: int, replace_earlier: bool = False) -> Result:
    """Join the shards (their sidecar JSONs or tables) of one run; write the result as `rexrank score` does (an
    earlier result of the model kept and added to, or refused, as there)."""
    metas = {}
    for path in shards:
        meta_path = path.with_suffix(".json")
        if not meta_path.is_file():
            raise InputError(f"{path}: no shard sidecar {meta_path.name} beside it (written by rexrank score --shard)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        metas[tuple(meta["shard"])] = (meta, meta_path.with_suffix(".parquet"))
    counts = {n for _, n in metas}
    if len(counts) != 1:
        raise InputError(f"shards of different runs: split into {', '.join(map(str, sorted(counts)))}")
    count = counts.pop()
    missing = [i for i in range(count) if (i, count) not in metas]
    if missing:
        raise InputError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing; nothing merged")
    first = metas[(0, count)][0]
    for (i, _), (meta, _) in metas.items():
        for key in ("dataset", "task", "split", "signatures", "model", "inputs"):
            if meta[key] != first[key]:
                raise InputError(f"shard {i}/{count} differs from shard 0/{count} in its {key}: not one run")
    table = pd.concat([pd.read_parquet(metas[(i, count)][1]) for i in range(count)], ignore_index=True)
    if len(table) != first["counts"].get("scored", len(table)) or table["study_id"].duplicated().any():
        raise InputError(f"the shards hold {len(table)} studies, the run scored {first['counts'].get('scored')}")
    signatures = {name: Signature.from_dict(detail) for name, detail in first["signatures"].items()}
    per_study = table.drop(columns=["prediction"])
    warnings = list(first["warnings"])
    if first["extras"]:
        warnings.append(f"corpus-level extras ({', '.join(first['extras'])}) need every study at once; not computed "
                        "for a sharded run")
    # the judges' contradicted verdicts are columns of the table: counted again over the joined studies
    card = Scorecard(per_study, estimates(per_study, signatures, resamples, seed), first["skipped"],
                     contradictions.counts(per_study))
    model, inputs = ModelInfo(**first["model"]), first.get("inputs") or ""
    check_room(out, first["dataset"], first["task"], model.name)
    path = result_paths(out, first["dataset"], first["task"], model.name)[0]
    with writing(out, first["dataset"], first["task"], model.name):  # not while a score writes the same files
        card = _kept(None if replace_earlier else _earlier(path, inputs), card, path)
        result = Result(model, first["dataset"], first["split"], first["task"], card.metrics, first["counts"],
                        card.skipped, warnings=warnings, extras=card.extras,
                        checks={"inputs": inputs} if inputs else {})
        return write_result_set(out, result, card, table["study_id"], table["prediction"])
