"""`rexrank infer`: run a code submission as the maintainers will, and turn what it wrote into a predictions file.

The model's input is the split's studies for one task without any reference text (`rexrank.inference.inputs`); it
runs in the sandbox (`rexrank.inference.sandbox`), which is checked before any submitted code runs. With `gpus` N the
studies are split into N contiguous blocks, one sandbox and one GPU each. Its save file must hold every study it was
given, once, with a `model_prediction` string; the predictions file (`{"study_id", "prediction"}` lines) is what
`rexrank score` reads. A run stopped half-way (killed, past its limit) keeps its save file, and the same command
continues it: ReXrank's own scripts skip the studies already in their save file.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import VQA_TASK
from rexrank.errors import InputError
from rexrank.inference.contract import Model, check_model
from rexrank.inference.inputs import input_records, write_input
from rexrank.inference.sandbox import Outcome, Sandbox, scratch_copy
from rexrank.inference.save_file import SaveFileRefused, members
from rexrank.inference.staging import image_tree, weights_tree
from rexrank.text import shown

SAVE = "predictions.json"
INPUT = "input.json"
DEFAULT_TIMEOUT = 24 * 3600.0
MAX_OUTPUT = 1024 * 1024 * 1024  # what a sandbox may write: its save file, logs, scratch
# a prediction's UTF-8 bytes: what one predictions line may hold (rexrank.rules.limits.LINE_JSON, a layer above:
# tests/test_layers.py holds the two equal)
MAX_PREDICTION = 64 * 1024
# a VQA answer's UTF-8 bytes: a letter, or the sentence a chat model writes around it (ReXrank's MedGemma example
# generates at most 256 tokens, about 1.2 KB); four times that, so that an honest long answer is read and a
# 41,007-question per-question table stays within the results repo's bound (rexrank.rules.layout)
MAX_VQA_ANSWER = 4 * 1024
# a study's record in the save file: its prediction written with every character escaped (\\u0000, 6 bytes a byte),
# beside the input record's fields and a script's own bookkeeping
RECORD_BYTES = 6 * MAX_PREDICTION + 256 * 1024


class InferenceFailed(InputError):
    """A stage of a code submission's run failed; the message says which, and why in rexrank's words."""


@dataclass(frozen=True)
class Run:
    model: Model
    task: str
    studies: int
    seconds: float
    predictions: Path
    logs: tuple[Path, ...]


def choose_task(model: Model, task: str | None) -> str:
    if task is None:
        if len(model.runs) > 1:
            raise InputError(f"the model does {' and '.join(model.runs)}: give --task")
        return model.runs[0]
    if task not in model.runs:
        raise InputError(f"the model's model.yaml does not name the task {task!r} (it names "
                         f"{', '.join(model.runs)})")
    return task


def weights_folders(model: Model, cache: Path | None = None) -> dict[str, Path]:
    """Each pinned repo's folder in the Hub cache (`models--ORG--NAME`), holding its pinned snapshot; InputError
    naming what is missing and the command that fetches it."""
    from huggingface_hub import constants

    cache = Path(cache or constants.HF_HUB_CACHE)
    found, missing = {}, []
    for w in model.weights:
        folder = cache / f"models--{w.repo.replace('/', '--')}"
        if (folder / "snapshots" / w.revision).is_dir():
            found[w.repo] = folder
        else:
            missing.append(f"{w.repo}@{w.revision[:12]}")
    if missing:
        raise InputError(f"weights not in the Hugging Face cache {cache}: {', '.join(missing)}; fetch them first "
                         "(`rexrank infer ... --fetch`, or `hf download REPO --revision COMMIT`): nothing is "
                         "fetched once the script runs")
    return found


def fetch_weights(model: Model, cache: Path | None = None) -> None:
    """Download each pinned repo at its commit into the Hub cache (network on: before any sandbox)."""
    from huggingface_hub import snapshot_download

    for w in model.weights:
        snapshot_download(w.repo, revision=w.revision, cache_dir=str(cache) if cache else None)


def infer(submission: str | Path, dataset: str | Path, image_root: str | Path, out: str | Path, *,
          task: str | None = None, split: str | None = None, timeout: float = DEFAULT_TIMEOUT, gpus: int = 0,
          python: str | Path | None = None, environment: str | Path | None = None,
          weights_cache: str | Path | None = None, keep_logs: bool = True, max_output: int = MAX_OUTPUT,
          limit: int | None = None, records: dict[str, dict] | None = None) -> Run:
    """Run the submission on `dataset`'s studies for `task` (its first `limit` of them, for a smoke test); write the
    predictions file `out`. `python`: the job's interpreter (default: this one); `environment`: the submission's
    environment as `rexrank.inference.environment.build` made it, run at /env and never on the host; `keep_logs`
    False: the script's output is kept nowhere (the private stage). `records`: the VQA task's input, keyed by
    question id (`inputs.question_records`), `dataset` unread; its predictions name a `question_id` each."""
    import sys
    import time

    model = check_model(submission)
    task = choose_task(model, task)
    images = Path(image_root).resolve()
    if not images.is_dir():
        raise InputError(f"{images}: no such folder of images")
    if (task == VQA_TASK) != (records is not None):  # questions for VQA, a split's studies for a report task
        raise InputError(f"the {VQA_TASK} task runs on questions (`records`), a report task on a split's studies")
    records = records if records is not None else input_records(dataset, task, split)
    if limit is not None:
        records = dict(list(records.items())[:limit])
    folders = weights_folders(model, Path(weights_cache) if weights_cache else None)
    out = Path(out).resolve()
    work = out.with_name(f".{out.name}.work")
    blocks = _blocks(list(records), max(1, gpus))
    env = {"REXRANK_TASK": task, "REXRANK_IMAGES": model.images, "REXRANK_MODEL_REPO": model.weights[0].repo,
           "REXRANK_MODEL_REVISION": model.weights[0].revision,
           "REXRANK_GPU_MEMORY_GB": f"{model.gpu_memory_gb:g}"}  # what rexrank's runners fit their batches to
    sandboxes = []
    tree = image_tree(records, images, work / "images")
    folders = weights_tree(folders, {w.repo: w.revision for w in model.weights}, work / "weights")
    for i, block in enumerate(blocks):
        folder = work / f"block-{i}"
        write_input({s: records[s] for s in block}, folder / "input" / INPUT)
        (folder / "output").mkdir(parents=True, exist_ok=True)
        scratch_copy(model.folder, folder / "output" / "work")
        sandboxes.append(Sandbox(model.folder.resolve(), folder / "input", tree, folder / "output", weights=folders,
                                 revisions={w.repo: w.revision for w in model.weights},
                                 python=Path(python or sys.executable),
                                 environment=Path(environment).resolve() if environment else None,
                                 gpu=i if gpus else None, timeout=timeout, max_output_bytes=max_output, env=env))
    sandboxes[0].check()  # before any submitted code runs
    command = model.command(f"/input/{INPUT}", f"/output/{SAVE}", "/images/", sandboxes[0].interpreter())
    outcomes: list[Outcome | BaseException] = [None] * len(sandboxes)  # type: ignore[list-item]

    def run(i: int) -> None:
        try:
            log = work / f"block-{i}.log" if keep_logs else None
            outcomes[i] = sandboxes[i].run(command, log)
        except BaseException as err:  # noqa: BLE001 - reported below, on the caller's thread
            outcomes[i] = err

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(sandboxes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, outcome in enumerate(outcomes):
        if isinstance(outcome, BaseException):
            raise outcome
        if not outcome.ok:
            where = f"; its output: {outcome.log}" if outcome.log else ""
            raise InferenceFailed(f"running the model (block {i + 1} of {len(blocks)}): the script "
                                  f"{outcome.why(timeout, max_output)}{where}; its save file is kept, and the same "
                                  "command continues it")
    _write(out, records, work, blocks, max_output, task)
    kept = []
    for i in range(len(blocks)) if keep_logs else ():
        if (log := work / f"block-{i}.log").is_file():
            kept.append(out.with_name(f"{out.name}.log" if len(blocks) == 1 else f"{out.name}.{log.stem}.log"))
            shutil.copyfile(log, kept[-1])
    shutil.rmtree(work, ignore_errors=True)
    return Run(model, task, len(records), time.monotonic() - started, out, tuple(kept))


def _write(out: Path, records: dict, work: Path, blocks: list[list[str]], max_output: int, task: str) -> None:
    """The predictions file from each block's save file (a VQA answer bounded as one, named by its question)."""
    from rexrank.data.predictions import write_predictions

    vqa = task == VQA_TASK
    predictions = {}
    for i, block in enumerate(blocks):
        predictions |= read_save(work / f"block-{i}" / "output" / SAVE, block, max_output,
                                 MAX_VQA_ANSWER if vqa else MAX_PREDICTION)
    write_predictions(out, list(records), [predictions[s] for s in records], key="question_id" if vqa else "study_id")


def _blocks(studies: list[str], n: int) -> list[list[str]]:
    size = -(-len(studies) // n) if studies else 0
    return [studies[i:i + size] for i in range(0, len(studies), size)] if size else [[]]


def read_save(path: Path, studies: list[str], limit: int, longest: int = MAX_PREDICTION) -> dict[str, str]:
    """The predictions in a script's save file: every study (or question) it was given, once, each a
    `model_prediction` string of valid Unicode of at most `longest` bytes; InferenceFailed naming the studies
    otherwise. Read a study at a time (rexrank.inference.save_file):
    its cost is bounded by a record, not by the file."""
    where = "reading what the model wrote"
    if not path.is_file() or path.is_symlink():
        raise InferenceFailed(f"{where}: the script left no save file {SAVE} (ReXrank's contract: the input JSON "
                              "with a `model_prediction` string added per study, at --save_json_file)")
    if path.stat().st_size > limit:
        raise InferenceFailed(f"{where}: its save file is {path.stat().st_size:,} bytes, more than {limit:,}")
    given, kept, twice, extra, wrong = set(studies), {}, [], 0, []
    try:
        for study, record in members(path, RECORD_BYTES, 2 * len(studies) + 16):
            if study not in given:
                extra += 1
            elif study in kept:
                twice.append(study)
            elif isinstance(record, dict) and "model_prediction" in record:
                kept[study] = record["model_prediction"]
    except SaveFileRefused as err:
        raise InferenceFailed(f"{where}: its save file is refused: {err}") from None
    missing = [s for s in studies if s not in kept]
    wrong = [s for s in kept if not isinstance(kept[s], str)]
    text = [s for s in kept if s not in wrong]
    unencodable = [s for s in text if not _encodable(kept[s])]
    long = [s for s in text if s not in unencodable and len(kept[s].encode("utf-8")) > longest]
    # named by the study ids the job gave it only: a key the script made up could carry what it saw
    problems = [f"{len(v):,} {what} (first: {shown(v[0], 60)})" for v, what in (
        (missing, "studies without a model_prediction"), (wrong, "predictions that are not text"),
        (unencodable, "predictions that are not valid Unicode (a lone surrogate)"),
        (long, f"predictions over {longest:,} bytes"), (twice, "studies written twice")) if v]
    problems += [f"{extra:,} studies it was not given"] if extra else []
    if problems:
        raise InferenceFailed(f"{where}: " + "; ".join(problems))
    return {s: kept[s] for s in studies}


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
