"""`rexrank infer`: run a code submission as the maintainers will (docs/submitting.md)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rexrank.catalog import VQA_TASK
from rexrank.cli.options import OK, whole
from rexrank.errors import InputError
from rexrank.reports import TASKS


def add(commands) -> None:
    run = commands.add_parser("infer", help="run a code submission's model on a split, in the sandbox the "
                                            "maintainers use, and write its predictions")
    run.add_argument("--submission", required=True, metavar="DIR",
                     help="the submission's model/ folder (model.yaml, inference.py, requirements.txt), or the "
                          "folder holding it")
    run.add_argument("--dataset", required=True, metavar="SPLIT",
                     help="a ReXrank split JSON, a rexrank-built dataset folder or a Hub dataset ORG/NAME: its "
                          "studies' images and context are given to the model, never its reports; for --task vqa, "
                          "a folder built by `rexrank build-dataset rexvqa` (questions and options, never answers)")
    run.add_argument("--split", help="the split of a built dataset (default: the one its data says, else test)")
    run.add_argument("--image-root", required=True, metavar="IMAGES",
                     help="the folder the split's image paths are relative to (read-only to the model)")
    run.add_argument("--out", required=True, metavar="PREDICTIONS.jsonl",
                     help="where the predictions go (study_id or question_id, prediction), as `rexrank score` "
                          "and `rexrank score-vqa` read them")
    run.add_argument("--task", choices=(*TASKS, VQA_TASK),
                     help="which of the model's tasks (needed when it does more than one: model.yaml's report "
                          "tasks, and vqa where it serves VQA)")
    run.add_argument("--timeout", type=whole(1), default=24 * 3600, metavar="S",
                     help="wall-clock limit of the run in seconds (default 86400); the save file is kept, so the "
                          "same command continues a run stopped here")
    run.add_argument("--gpus", type=whole(0), default=0, metavar="N",
                     help="split the studies over N sandboxes, one GPU each (default 0: one sandbox, no GPU)")
    run.add_argument("--python", metavar="PATH",
                     help="the Python the script runs with when its environment is not built (default: this one)")
    run.add_argument("--build", action="store_true",
                     help="first build the submission's environment from its requirements.txt or environment.yaml as "
                          "the maintainers' job does (wheels fetched here, installed in the sandbox offline, into "
                          "OUT.env/) and run the script in it")
    run.add_argument("--weights-cache", metavar="DIR",
                     help="the Hugging Face hub cache holding the pinned weights (default HF_HUB_CACHE)")
    run.add_argument("--fetch", action="store_true",
                     help="first download the pinned weights into the cache (network; never inside the sandbox)")
    run.set_defaults(run=cmd_infer)


def cmd_infer(args: argparse.Namespace) -> int:
    from rexrank.inference.contract import check_model
    from rexrank.inference.runner import choose_task, fetch_weights, infer

    if args.fetch:
        _fetch(check_model(args.submission), fetch_weights, Path(args.weights_cache) if args.weights_cache else None)
    environment = None
    if args.build:
        from rexrank.inference.environment import build

        out = Path(args.out)
        environment = build(check_model(args.submission), out.with_name(f"{out.name}.env"),
                            out.with_name(f"{out.name}.build.log"), args.python)
        print(f"environment built: {environment or 'none needed (rexrank runner)'}; its log: {out.name}.build.log")
    model = check_model(args.submission)
    task, records, split = choose_task(model, args.task), None, args.split
    if task == VQA_TASK:  # the questions as the job gives them (rexrank.backend.vqa.run)
        from rexrank.inference.inputs import question_records
        from rexrank.vqa.dataset import load_questions

        questions, split = load_questions(args.dataset, args.split)
        records = question_records(questions, split, str(args.dataset))
    done = infer(args.submission, args.dataset, args.image_root, args.out, task=task, split=split,
                 timeout=float(args.timeout), gpus=args.gpus, python=args.python, environment=environment,
                 weights_cache=args.weights_cache, records=records)
    unit = "questions answered" if task == VQA_TASK else "studies predicted"
    print(f"{done.studies:,} {unit} for {done.task} in {done.seconds:,.1f} s: {done.predictions}")
    for log in done.logs:
        print(f"  the script's output: {log}")
    print("score them: " + shlex.join(_score_command(done, args.dataset, split, _model_name(Path(args.submission)))))
    return OK


def _score_command(done, dataset, split: str | None, name: str) -> list[str]:
    """The command that scores the run's predictions, complete: `rexrank score-vqa` needs a folder to write to."""
    if done.task == VQA_TASK:
        out = Path(done.predictions).with_name(f"{Path(done.predictions).stem}.scored")
        return ["rexrank", "score-vqa", "--predictions", str(done.predictions), "--dataset", str(dataset), "--split",
                split, "--out", str(out), "--model-name", name]
    return ["rexrank", "score", "--predictions", str(done.predictions), "--dataset", str(dataset), "--task",
            done.task, "--model-name", name]


def _model_name(submission: Path) -> str:
    """A name for the model's results: its submission folder's (the folder holding `model/`, when given that)."""
    folder = submission.resolve()
    return folder.parent.name if folder.name == "model" and folder.parent.name else folder.name


def _fetch(model, fetch_weights, cache: Path | None) -> None:
    """--fetch as `rexrank models download` answers: one line, at once, when the Hub cannot be reached or refuses."""
    from rexrank.models import hub_failure, unreachable_hub

    pins = ", ".join(f"{w.repo}@{w.revision[:12]}" for w in model.weights)
    if (host := unreachable_hub()) is not None:
        raise InputError(f"--fetch: the Hub ({host}) cannot be reached from here (its name does not resolve): {pins} "
                         "not downloaded; fetch where there is network, or run without --fetch if they are in the "
                         "cache (--weights-cache)")
    try:
        fetch_weights(model, cache)
    except Exception as err:
        if (why := hub_failure(err)) is None:
            raise
        raise InputError(f"--fetch: {why}: {pins} not downloaded") from None
