"""RadRBench-CXR as its authors scored it: rexrank beside ChestX-Reasoner's own evaluation code, on its shipped outputs.

    git clone https://github.com/MAGIC-AI4Med/ChestX-Reasoner /data/ChestX-Reasoner   # yours; never in this repo
    .venv/bin/python benchmarks/chestx_reasoner.py --clone /data/ChestX-Reasoner [--dataset BUILT] [--json out.json]

Their files' text derives from MIMIC-CXR and CheXpert reports: read from your clone, never copied here. Their code is
run from your clone too, never copied, with its GPT-4o calls answered offline:

- Accuracy, per model and option task: their `eval/accuracy_eval.py` as shipped, in a temporary folder, on a copy of
  their file (its model and file lists replaced as it assigns them; RaTEScore and GPT-4o stubbed, never reached on
  these branches). Qwen2-VL outputs are first cut at their last "assistant", as their free-text branch does (as
  shipped, its option branch reads the echoed prompt's "<answer></answer>" and leaves every Qwen2-VL-7B item out).
  Beside it, rexrank's `accuracy()` of the same records by `--answer-rule chestx-reasoner` and by `rexrank`, and
  whether `score-radrbench` joins the file as it is to a test set: `--dataset` (a build of the published files) or a
  stand-in built from their `qwenvl72b` files, which carry the published fields (item_id, image_path, answer).
- RadRScore, per model and task of `eval/res/reasoning_res/`: their `reasoning_eval.py` `main()` (one worker) with
  each GPT-4o call answered by the reply they stored for it, in order; rexrank's `radrscore()` through the tests'
  loopback judge, each prompt answered by the stored reply it was built from; the prompts compared byte for byte.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import csv
import importlib.util
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakeopenai import FakeOpenAI  # noqa: E402
from fixtures.chestx_reasoner import replies_by_prompt  # noqa: E402

from rexrank.errors import InputError  # noqa: E402
from rexrank.llm import Judge  # noqa: E402
from rexrank.radrbench import chestx_reasoner  # noqa: E402
from rexrank.radrbench.answers import accuracy, task_of  # noqa: E402
from rexrank.scorers.radrscore import COMPONENTS, DATASET, radrscore  # noqa: E402

OPTION_TASKS = ("chexpert_binary", "chexpert_single", "chexpert_multi", "mimic_binary", "mimic_single", "mimic_multi",
                "rsna_binary", "siim_binary", "temporal_cls")
STAND_IN = "qwenvl72b"  # the authors' model folder whose files carry the published test items' fields


def text(pred) -> str:
    """An output as rexrank reads it: a one-element list (Qwen2-VL-72B's files) is its text."""
    return pred[0] if isinstance(pred, list) and len(pred) == 1 else pred


@contextlib.contextmanager
def inside(folder: Path):
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def authors_accuracy(script: Path, model: str, files: dict[str, list], cut: bool) -> dict[str, tuple[float, int]]:
    """(accuracy, items counted) per task by their accuracy_eval.py, run on `files` (task -> records)."""
    stub = types.ModuleType("RaTEScore")
    stub.RaTEScore = type("RaTEScore", (), {"compute_score": lambda self, *a: sys.exit("RaTEScore reached")})
    sys.modules.setdefault("RaTEScore", stub)

    class Settings(dict):  # the script's namespace: its model and file lists are ours as it assigns them
        def __setitem__(self, key, value):
            chosen = {"model_list": [model], "files_to_process": [f"{t}_test_option" for t in files]}
            super().__setitem__(key, chosen.get(key, value))

    with tempfile.TemporaryDirectory() as tmp, inside(Path(tmp)), contextlib.redirect_stdout(open(os.devnull, "w")):
        (Path(tmp) / "output" / model).mkdir(parents=True)
        for task, records in files.items():
            copied = [dict(r, pred=r["pred"].split("assistant")[-1]) if cut else r for r in records]
            (Path(tmp) / "output" / model / f"{task}_test_option.json").write_text(json.dumps(copied))
        code = compile(script.read_text(encoding="utf-8"), str(script), "exec")
        exec(code, {"__name__": "accuracy_eval", "__builtins__": builtins}, Settings())  # noqa: S102
        with open(Path(tmp) / "res" / "test_results.csv", encoding="utf-8") as table:
            rows = list(csv.DictReader(table))
    return {r["Task"].removesuffix("_test_option"): (float(r["Accuracy"]), int(r["Valid Samples Number"]))
            for r in rows}


def stand_in(clone: Path, out: Path) -> Path:
    from rexrank.radrbench.dataset import read_radrbench, write_radrbench

    return write_radrbench(read_radrbench([clone / "eval" / "res" / "accuracy_res" / STAND_IN]), out)


def joined(path: Path, dataset: Path | None, rule: str) -> str:
    """Whether score-radrbench takes the file as it is, and its accuracy then."""
    from rexrank.radrbench.outputs import load_outputs
    from rexrank.radrbench.score import load_items, score_outputs

    if dataset is None:
        return "no test set"
    items = load_items(dataset, configs=[path.stem])
    try:
        outputs = load_outputs(path, items)
    except InputError as err:
        found = re.search(r"(\d+) problem\(s\)", str(err))
        return f"refused ({found.group(1) if found else '?'} records)"
    scores = score_outputs(items, outputs, resamples=1, rule=rule)
    return f"{len(outputs)}/{len(items)}: {scores.rows.iloc[-1]['accuracy']:.3f}"


def accuracy_rows(clone: Path, models: list[str], dataset: Path | None) -> list[dict]:
    rows = []
    for model in models:
        which = chestx_reasoner.branch(chestx_reasoner.RULE, model)
        folder = clone / "eval" / "res" / "accuracy_res" / model
        files = {t: json.loads((folder / f"{t}_test_option.json").read_text(encoding="utf-8")) for t in OPTION_TASKS}
        theirs = authors_accuracy(clone / "eval" / "accuracy_eval.py", model, files, cut=which == "qwenvl")
        for task, records in files.items():
            columns = ([text(r["pred"]) for r in records], [r["answer"] for r in records],
                       [r["question"] for r in records], task_of(task))
            ours = accuracy(*columns, f"{chestx_reasoner.RULE}:{which}")
            strict = accuracy(*columns)
            rows.append({"model": model, "task": task, "records": len(records), "authors": theirs[task][0],
                         "authors_counted": theirs[task][1], "chestx_reasoner": ours.accuracy,
                         "chestx_reasoner_counted": sum(ours.scored), "rexrank": strict.accuracy,
                         "join": joined(folder / f"{task}_test_option.json", dataset,
                                        f"{chestx_reasoner.RULE}:{which}")})
    return rows


def load_reasoning_eval(script: Path):
    spec = importlib.util.spec_from_file_location("reasoning_eval", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def authors_radrscore(module, model: str, task: str, stored: list[dict], path: Path) -> tuple[dict, set[str]]:
    """Their main() on their stored items, each GPT-4o call answered by the reply stored for it (one worker, so in
    the order the items are stored); their Recall/Precision/Efficiency and the user prompts they built."""
    replies = []
    for item in stored:
        judged = [] if "ours" in model else [{"correct": item["correct"]}]  # their accuracy judge comes first
        replies += [json.dumps(r) for r in (*judged, item["gt_key_finding"], item["pred_key_finding"],
                                            item["recall_res"], item["precision_res"], item["efficiency"])]
    answers, prompts, asked = iter(replies), set(), []

    def query(messages):
        prompts.add((messages[0]["content"], messages[1]["content"]))
        asked.append(1)
        return next(answers, "{}")

    def read_stored(name, *args, **kwargs):
        return builtins.open(path if str(name).startswith("/mnt/") else name, *args, **kwargs)

    module.query, module.num_paralled, module.open = query, 1, read_stored
    argv = sys.argv
    with tempfile.TemporaryDirectory() as tmp, inside(Path(tmp)), contextlib.redirect_stdout(open(os.devnull, "w")):
        sys.argv = ["reasoning_eval.py", "--model", model, "--task", task]
        try:
            module.main()
        finally:
            sys.argv = argv
        with open(Path(tmp) / "res" / "reasoning_res" / "results.csv", encoding="utf-8") as table:
            row = next(csv.DictReader(table))
    if len(asked) != len(replies):  # an item their code dropped midway would shift every later reply
        raise SystemExit(f"{model}/{task}: their main() asked {len(asked)} questions, {len(replies)} replies stored")
    return row, prompts


def radrscore_rows(clone: Path, cache: Path) -> list[dict]:
    module = load_reasoning_eval(clone / "eval" / "reasoning_eval.py")
    rows = []
    for folder in sorted((clone / "eval" / "res" / "reasoning_res").iterdir()):
        for path in sorted(folder.glob("*_evaluation_res.json")):
            task = path.name.removesuffix("_evaluation_res.json")
            stored = json.loads(path.read_text(encoding="utf-8"))
            theirs, their_prompts = authors_radrscore(module, folder.name, task, stored, path)
            fake = FakeOpenAI(model="gpt-4o")
            fake.replies, fake.default_reply = replies_by_prompt(stored), "UNSCRIPTED PROMPT"
            # Their judge sampled: one prompt asked twice (a study's steps in two items) may have two stored replies,
            # where rexrank asks it once; a cache per task keeps another task's reply out.
            seen: dict[str, set[str]] = {}
            for item in stored:
                for prompt, reply in replies_by_prompt([item]).items():
                    seen.setdefault(prompt, set()).add(reply)
            judge = Judge(base_url=fake.url, model="gpt-4o", concurrency=16, cache=cache / f"{folder.name}.{task}.db",
                          progress=False)
            try:
                result = radrscore([text(i["pred"]) for i in stored], [i["reason_steps"] for i in stored],
                                   [i["original_report"] for i in stored], judge, dataset=DATASET,
                                   quoted=False)  # the reference's messages, to compare with theirs
            finally:
                fake.stop()
            sent = {(body["messages"][0]["content"], body["messages"][1]["content"]) for body in fake.requests}
            rows.append({"model": folder.name, "task": task, "items": len(stored),
                         "authors_valid": int(theirs["Valid Samples Number"]),
                         **{f"authors_{c}": float(theirs[k]) for c, k in zip(COMPONENTS, ("Recall", "Precision",
                                                                                            "Efficiency"))},
                         "judged": result.judged, **{f"judged_{c}": result.judged_mean_of(c) for c in COMPONENTS},
                         **{f"board_{c}": result.mean_of(c) for c in COMPONENTS},
                         "prompts": len(sent), "prompts_theirs": len(sent & their_prompts),
                         "replies_differ": sum(len(r) > 1 for r in seen.values()),
                         "unscripted": sum("UNSCRIPTED" in (t or "") for r in result.replies for t in r.values())})
    return rows


def show(acc: list[dict], rad: list[dict]) -> None:
    print("## Accuracy (option tasks): the authors' accuracy_eval.py vs rexrank's readings\n")
    print("| model | task | records | authors (counted) | rexrank --answer-rule chestx-reasoner (counted) | rexrank "
          "(every item) | score-radrbench join: items, accuracy |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in acc:
        same = "=" if abs(r["authors"] - r["chestx_reasoner"]) < 1e-12 and \
            r["authors_counted"] == r["chestx_reasoner_counted"] else "≠"
        print(f"| {r['model']} | {r['task']} | {r['records']} | {r['authors']:.3f} ({r['authors_counted']}) | {same} "
              f"{r['chestx_reasoner']:.3f} ({r['chestx_reasoner_counted']}) | {r['rexrank']:.3f} | {r['join']} |")
    print("\n## RadRScore Rc/Rf/Re: the authors' reasoning_eval.py main() vs rexrank over the judged items (the "
          "authors' way) and the board's (an unread item 0)\n")
    print("| model | task | items | authors (valid) | rexrank judged (read) | rexrank board | prompts equal | prompts "
          "with two stored replies |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rad:
        three = {k: "/".join(f"{r[f'{k}_{c}']:.3f}" for c in COMPONENTS) for k in ("authors", "judged", "board")}
        odd = f", {r['unscripted']} unscripted" if r["unscripted"] else ""
        print(f"| {r['model']} | {r['task']} | {r['items']} | {three['authors']} ({r['authors_valid']}) | "
              f"{three['judged']} ({r['judged']}) | {three['board']} | {r['prompts_theirs']}/{r['prompts']}{odd} | "
              f"{r['replies_differ']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clone", type=Path, required=True, help="a checkout of MAGIC-AI4Med/ChestX-Reasoner")
    parser.add_argument("--dataset", type=Path, help="a build of the published RadRBench-CXR files (rexrank "
                        f"build-dataset radrbench-cxr); default: a stand-in from their {STAND_IN} files")
    parser.add_argument("--models", default="ours_process_final_150,qwenvl7b",
                        help="accuracy_res folders to compare (their branches: ours*, qwenvl*, chexagent3b)")
    parser.add_argument("--skip-radrscore", action="store_true", help="accuracy only")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="chestx-reasoner-") as tmp:
        dataset = args.dataset or stand_in(args.clone, Path(tmp) / "stand-in")
        acc = accuracy_rows(args.clone, args.models.split(","), dataset)
        rad = [] if args.skip_radrscore else radrscore_rows(args.clone, Path(tmp))
    show(acc, rad)
    if args.json:
        args.json.write_text(json.dumps({"accuracy": acc, "radrscore": rad}, indent=1))


if __name__ == "__main__":
    main()
