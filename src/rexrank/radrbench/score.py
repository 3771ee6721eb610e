"""Scoring a reasoning model on RadRBench-CXR: accuracy per source and task with bootstrap CIs, answer-format
failures counted per task, one signature (docs/metrics.md §9).

Rules for the model's output file (JSON list or JSONL of `{"config", "item_id", "output"}`; `prediction` is accepted
for `output`): an item is named by its config (`mimic-cxr.binary`: one study has items in several task files, under
one published id) and its id; an item given twice, or one the dataset does not have, is an error naming it; an item
without an output is scored as an empty output (wrong, counted as `empty_output`) and the count is reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank import stats
from rexrank.data.split import jsonl_records, listing, read_json, read_parquet
from rexrank.errors import InputError
from rexrank.radrbench.answers import TASKS, accuracy, signature

OUTPUT_KEYS = ("output", "prediction")


def load_items(folder: str | Path, split: str = "test", configs: list[str] | None = None) -> pd.DataFrame:
    """Every item of a dataset built by `rexrank build-dataset radrbench-cxr` (one folder per config)."""
    folder = Path(folder)
    if not (folder / "build_info.json").is_file():
        raise InputError(f"{folder}: not a RadRBench-CXR dataset built by rexrank (no build_info.json)")
    found = sorted(p.parent.name for p in folder.glob(f"*/{split}-*.parquet"))
    unknown = sorted(set(configs or []) - set(found))
    if unknown:
        raise InputError(f"{folder}: no config {', '.join(unknown)}; it has {', '.join(found)}")
    frames = [read_parquet(p).assign(config=c) for c in (configs or found)
              for p in sorted((folder / c).glob(f"{split}-*.parquet"))]
    if not frames:
        raise InputError(f"{folder}: no {split} items")
    return pd.concat(frames, ignore_index=True)


def load_outputs(path: str | Path) -> dict[tuple[str, str], object]:
    """(config, item_id) -> the model's raw output."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such outputs file")
    if path.suffix == ".jsonl":
        records = [(f"line {n}", r) for n, r in jsonl_records(path)]
    else:
        data = read_json(path)
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of {{\"item_id\", \"output\"}} (or a .jsonl file)")
        records = [(f"record {i}", r) for i, r in enumerate(data)]
    outputs: dict[tuple[str, str], object] = {}
    problems = []
    for where, record in records:
        key = next((k for k in OUTPUT_KEYS if isinstance(record, dict) and k in record), None)
        if not isinstance(record, dict) or not {"config", "item_id"} <= set(record) or key is None:
            problems.append(f"{where}: expected an object with config, item_id and output")
            continue
        item = (str(record["config"]), str(record["item_id"]))
        if item in outputs:
            problems.append(f"item {'/'.join(item)}: given twice")
        outputs[item] = record[key]
    if problems:
        raise InputError(f"{path}: {len(problems)} problem(s), nothing was scored:\n{listing(problems)}")
    return outputs


@dataclass
class RadRBenchScores:
    rows: pd.DataFrame  # per (source, task), per task ("all", task), and ("all", "all"): items, correct, accuracy,
    #                     low, high, failures
    missing: list[str]  # items without an output (scored as empty outputs)
    signature: str
    per_item: pd.DataFrame = field(repr=False)  # item_id, source, task, correct, answer, failure


def score_outputs(items: pd.DataFrame, outputs: dict[tuple[str, str], object], resamples: int = stats.RESAMPLES,
                  seed: int = stats.SEED) -> RadRBenchScores:
    keys = list(zip(items["config"], items["item_id"]))
    unknown = sorted(set(outputs) - set(keys))
    if unknown:
        raise InputError(f"{len(unknown)} output(s) for items the dataset does not have:\n"
                         + listing([f"item {'/'.join(k)}" for k in unknown]))
    missing = ["/".join(k) for k in keys if k not in outputs]
    result = accuracy([outputs.get(k) for k in keys], items["answer"].tolist(), items["question"].tolist(),
                      items["task"].tolist())
    per_item = pd.DataFrame({"config": items["config"], "item_id": items["item_id"], "source": items["source"],
                             "task": items["task"],
                             "correct": result.correct,
                             "answer": [None if a.value is None else ", ".join(sorted(a.value))
                                        for a in result.answers],
                             "failure": [a.failure for a in result.answers]})
    # Per source and task, then per task over every source (source "all"), then everything ("all", "all").
    groups = ([(s, t, g) for (s, t), g in per_item.groupby(["source", "task"], sort=True)]
              + [("all", t, per_item[per_item["task"] == t]) for t in TASKS if (per_item["task"] == t).any()]
              + [("all", "all", per_item)])
    rows = []
    for source, task, group in groups:
        e = stats.estimate(group["correct"].astype(float).to_numpy(), "mean", resamples, seed)
        rows.append({"source": source, "task": task, "items": len(group), "correct": int(group["correct"].sum()),
                     "accuracy": e.value, "low": e.low, "high": e.high,
                     "failures": json.dumps(group["failure"].dropna().value_counts().sort_index().to_dict())})
    sig = str(signature().with_bootstrap(resamples, seed))
    return RadRBenchScores(pd.DataFrame(rows), missing, sig, per_item)


def open_ended_rows(items: pd.DataFrame, outputs: dict[tuple[str, str], object], scorer=None,
                    resamples: int = stats.RESAMPLES, seed: int = stats.SEED) -> tuple[pd.DataFrame, str] | None:
    """RaTEScore of each free-text answer (the `multi_no_option` task) against its reference answer, as
    ChestX-Reasoner scores that task, beside exact match: per source and over every source, each with a bootstrap
    CI; and the scorer's signature. The answer is the text of the model's last <answer>; one that cannot be read
    (no or unclosed tag, empty) is scored as an empty answer, which RaTEScore gives 0.5 (a report without entities;
    ours: the reference drops such a report and shifts every later pair). None when the items have no such task."""
    from rexrank.radrbench.answers import MULTI_NO_OPTION, answer_text
    from rexrank.scorers.ratescore import RaTEScore

    free = items[items["task"] == MULTI_NO_OPTION]
    if free.empty:
        return None
    keys = list(zip(free["config"], free["item_id"]))
    answers = [(answer_text(o)[0] or "") if isinstance(o := outputs.get(k), str) else "" for k in keys]
    gold = [answer_text(a)[0] or a if "<answer>" in a.lower() else a for a in free["answer"]]
    scorer = scorer or RaTEScore(progress=False)
    per_item = pd.DataFrame({"source": free["source"].to_numpy(), "score": scorer(answers, gold)})
    groups = [(s, g) for s, g in per_item.groupby("source", sort=True)] + [("all", per_item)]
    rows = []
    for source, group in groups:
        e = stats.estimate(group["score"].to_numpy(), "mean", resamples, seed)
        rows.append({"source": source, "task": MULTI_NO_OPTION, "items": len(group), "ratescore": e.value,
                     "low": e.low, "high": e.high})
    return pd.DataFrame(rows), str(scorer.signature().with_bootstrap(resamples, seed))


COMPONENTS = ("completeness", "factuality", "effectiveness")


def reasoning_rows(items: pd.DataFrame, outputs: dict[tuple[str, str], object], judge, resamples: int = stats.RESAMPLES,
                   seed: int = stats.SEED) -> tuple[pd.DataFrame, object]:
    """RadRScore's Rc, Rf, Re and their mean per source and task, over the items with reasoning annotations
    (reference steps and the original report), each with a bootstrap CI over the items; an item whose replies could
    not be read counts 0 in each (`<name>_n`: the items read)."""
    from rexrank.scorers.radrscore import DATASET, radrscore

    has_steps = items["reason_steps"].map(lambda steps: steps is not None and len(steps) > 0)
    reasoned = items[has_steps & items["original_report"].notna()]
    steps = [json.loads(j) if isinstance(j, str) and j else list(s)
             for j, s in zip(reasoned["reason_steps_json"], reasoned["reason_steps"])]
    keys = list(zip(reasoned["config"], reasoned["item_id"]))
    outputs_text = [o if isinstance(o := outputs.get(k), str) else "" for k in keys]
    result = radrscore(outputs_text, steps, reasoned["original_report"].tolist(), judge, dataset=DATASET)
    per_item = pd.DataFrame({"source": reasoned["source"].to_numpy(), "task": reasoned["task"].to_numpy(),
                             "read": [s is not None for s in result.scores],
                             **{c: result.board(c) for c in COMPONENTS}, "radrscore": result.board_scores})
    groups = [(s, t, g) for (s, t), g in per_item.groupby(["source", "task"], sort=True)] + [("all", "all", per_item)]
    rows = []
    for source, task, group in groups:
        row = {"source": source, "task": task, "items": len(group)}
        for name in (*COMPONENTS, "radrscore"):
            row[f"{name}_n"] = int(group["read"].sum())
            e = stats.estimate(group[name].to_numpy(dtype=float), "mean", resamples, seed)
            row[name], row[f"{name}_low"], row[f"{name}_high"] = e.value, e.low, e.high
        rows.append(row)
    return pd.DataFrame(rows), result


def reasoning_table(rows: pd.DataFrame) -> list[str]:
    """`reasoning_rows` as aligned text lines (n/a where no item of a group was scored)."""

    def cell(x, width: int) -> str:
        return f"{'n/a':>{width}}" if x is None or pd.isna(x) else f"{x:{width}.4f}"

    lines = [f"{'source':<14} {'task':<16} {'items':>6} {'Rc':>7} {'Rf':>7} {'Re':>7} {'RadRScore':>10}  95% CI"]
    for _, r in rows.iterrows():
        ci = "" if r["radrscore_low"] is None or pd.isna(r["radrscore_low"]) else (
            f"[{r['radrscore_low']:.4f}, {r['radrscore_high']:.4f}]")
        lines.append(f"{r['source']:<14} {r['task']:<16} {r['items']:>6,} "
                     + " ".join(cell(r[c], 7) for c in COMPONENTS) + f" {cell(r['radrscore'], 10)}  {ci}")
    return lines


def write_results(out: str | Path, model: str, scores: RadRBenchScores, reasoning: pd.DataFrame | None = None,
                  judged=None, open_ended: tuple[pd.DataFrame, str] | None = None) -> Path:
    """`<out>/radrbench-cxr.accuracy.json` (what a submission carries) and `radrbench-cxr.per_item.parquet`;
    `open_ended`: what `open_ended_rows` gave."""
    from rexrank.files import atomic_path, write_text

    out = Path(out)
    path = out / "radrbench-cxr.accuracy.json"
    write_text(path, json.dumps(
        {"dataset": "radrbench-cxr", "model": model, "signature": scores.signature,
         "missing_outputs": len(scores.missing), "rows": scores.rows.to_dict("records"),
         "radrscore": None if reasoning is None else {"signature": judged.signature, **judged.tally(),
                                                       "rows": json.loads(reasoning.to_json(orient="records"))},
         "ratescore": None if open_ended is None else {"signature": open_ended[1],
                                                       "rows": open_ended[0].to_dict("records")}},
        indent=2) + "\n")
    with atomic_path(out / "radrbench-cxr.per_item.parquet") as tmp:
        scores.per_item.to_parquet(tmp, index=False)
    return path
