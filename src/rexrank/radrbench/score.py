"""Scoring a reasoning model on RadRBench-CXR: accuracy per source and task with bootstrap CIs, answer-format
failures counted per task, one signature (docs/metrics.md §9); the overall row over the option tasks, the free-text
task beside it by RaTEScore, as the authors score it; RadRScore, where a judge is given, both as the board counts it
and over the items judged (as the authors report it). The model's outputs are read by `outputs`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank import stats
from rexrank.data.split import listing, read_parquet
from rexrank.errors import InputError
from rexrank.radrbench.answers import MULTI_NO_OPTION, REXRANK, TASKS, accuracy, signature


def load_items(folder: str | Path, split: str = "test", configs: list[str] | None = None) -> pd.DataFrame:
    """Every item of a dataset built by `rexrank build-dataset radrbench-cxr` (one folder per config), or of a folder
    of the published JSON files (built on the way, as that command builds them); `configs` in rexrank's naming or the
    authors' (`mimic_binary`)."""
    from rexrank.radrbench.dataset import config_name

    folder = Path(folder)
    if not (folder / "build_info.json").is_file():
        if folder.is_dir() and any(folder.glob("*.json")):
            return _published(folder, split, configs)
        raise InputError(f"{folder}: not a RadRBench-CXR dataset (no build_info.json, no published JSON files): "
                         "rexrank build-dataset radrbench-cxr --source DOWNLOADED --out DIR builds one")
    found = sorted(p.parent.name for p in folder.glob(f"*/{split}-*.parquet"))
    wanted = []
    for name in configs or []:
        try:
            wanted.append(config_name(name))
        except InputError:
            wanted.append(name)  # named below as a config the folder does not have
    unknown = sorted(set(wanted) - set(found))
    if unknown:
        raise InputError(f"{folder}: no config {', '.join(unknown)}; it has {', '.join(found)}")
    frames = [read_parquet(p).assign(config=c) for c in (wanted or found)
              for p in sorted((folder / c).glob(f"{split}-*.parquet"))]
    if not frames:
        raise InputError(f"{folder}: no {split} items")
    return pd.concat(frames, ignore_index=True)


def _published(folder: Path, split: str, configs: list[str] | None) -> pd.DataFrame:
    """The items of a folder of RadRBench-CXR's published files (the demo's, a download), built as
    `rexrank build-dataset radrbench-cxr` builds them, into a folder that goes once they are read."""
    import tempfile

    from rexrank.radrbench.dataset import read_radrbench, write_radrbench

    with tempfile.TemporaryDirectory(prefix="rexrank-radrbench-") as tmp:
        return load_items(write_radrbench(read_radrbench([folder]), Path(tmp) / "built"), split, configs)


@dataclass
class RadRBenchScores:
    rows: pd.DataFrame  # per (source, task), per task ("all", task), and ("all", "all") over the option tasks: items,
    #                     scored, correct, accuracy (correct / scored; None when none is), low, high, failures
    missing: list[str]  # items without an output (scored as empty outputs)
    signature: str
    per_item: pd.DataFrame = field(repr=False)  # config, item_id, source, task, scored, correct, answer, failure
    notes: list[str] = field(default_factory=list)  # what the rule left aside, in words


def score_outputs(items: pd.DataFrame, outputs: dict[tuple[str, str], object], resamples: int = stats.RESAMPLES,
                  seed: int = stats.SEED, rule: str = REXRANK) -> RadRBenchScores:
    """Accuracy of `outputs` (`outputs.load_outputs`) on `items` under an answer rule (`answers.ANSWER_RULES`,
    resolved: "chestx-reasoner:<branch>"). The overall row ("all", "all") is over the option tasks: the authors score
    the free-text task by RaTEScore (`open_ended_rows`), not by exact match, and their rule has no accuracy for it (its
    items are left aside); under rexrank's rule its exact match keeps rows of its own, outside the overall one. Both
    are said in `notes`."""
    keys = list(zip(items["config"], items["item_id"]))
    unknown = sorted(set(outputs) - set(keys))
    if unknown:
        raise InputError(f"{len(unknown)} output(s) for items the dataset does not have:\n"
                         + listing([f"item {'/'.join(k)}" for k in unknown]))
    notes = []
    if rule != REXRANK and (free := items["task"] == MULTI_NO_OPTION).any():
        notes.append(f"{int(free.sum()):,} free-text item(s) left aside: the {rule} rule has no accuracy for them "
                     "(the authors score them by RaTEScore)")
        items = items[~free]
        keys = list(zip(items["config"], items["item_id"]))
    missing = ["/".join(k) for k in keys if k not in outputs]
    name = getattr(outputs, "name", lambda k: "/".join(k))
    result = accuracy([outputs.get(k) for k in keys], items["answer"].tolist(), items["question"].tolist(),
                      items["task"].tolist(), rule, names=[name(k) for k in keys])
    per_item = pd.DataFrame({"config": items["config"], "item_id": items["item_id"], "source": items["source"],
                             "task": items["task"], "scored": result.scored, "correct": result.correct,
                             "answer": [a.shown for a in result.answers],
                             "failure": [a.failure for a in result.answers]})
    # Per source and task, then per task over every source (source "all"), then everything ("all", "all").
    options = per_item[per_item["task"] != MULTI_NO_OPTION]
    if len(options) < len(per_item):
        notes.append(f"the overall row is over the {len(options):,} option-task items; the "
                     f"{len(per_item) - len(options):,} free-text item(s) have their exact match in rows of their own "
                     "and RaTEScore beside them (as ChestX-Reasoner scores that task)")
    groups = ([(s, t, g) for (s, t), g in per_item.groupby(["source", "task"], sort=True)]
              + [("all", t, per_item[per_item["task"] == t]) for t in TASKS if (per_item["task"] == t).any()]
              + [("all", "all", options)])
    rows = []
    for source, task, group in groups:
        counted = group[group["scored"]]
        e = stats.estimate(counted["correct"].astype(float).to_numpy(), "mean", resamples, seed) \
            if len(counted) else None
        rows.append({"source": source, "task": task, "items": len(group), "scored": len(counted),
                     "correct": int(group["correct"].sum()), "accuracy": None if e is None else e.value,
                     "low": None if e is None else e.low, "high": None if e is None else e.high,
                     "failures": json.dumps(group["failure"].dropna().value_counts().sort_index().to_dict())})
    sig = str(signature(rule).with_bootstrap(resamples, seed))
    return RadRBenchScores(pd.DataFrame(rows), missing, sig, per_item, notes)


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


def free_text_lines(items: pd.DataFrame, found: tuple[pd.DataFrame, str] | None, unavailable: str | None) -> list[str]:
    """The free-text task's rows beside the accuracy table: RaTEScore per source and over all with its CI and
    signature (`open_ended_rows`), or, where RaTEScore could not run, each row saying why instead of a number."""
    from rexrank.radrbench.answers import MULTI_NO_OPTION

    free = items[items["task"] == MULTI_NO_OPTION]
    if free.empty:
        return []
    lines = ["", "free-text task (multi_no_option), RaTEScore of the answer against the reference answer, as "
             "ChestX-Reasoner scores it (its exact match: the rows above, outside the overall row)",
             f"{'source':<14} {'items':>6} {'RaTEScore':>9}  95% CI"]
    if found is None:
        counts = [(s, len(g)) for s, g in free.groupby("source", sort=True)] + [("all", len(free))]
        return lines + [f"{s:<14} {n:>6,} {'n/a':>9}  RaTEScore not run here: {unavailable}" for s, n in counts]
    rows, signature = found
    return lines + [f"{r['source']:<14} {r['items']:>6,} {r['ratescore']:>9.4f}  [{r['low']:.4f}, {r['high']:.4f}]"
                    for _, r in rows.iterrows()] + [f"signature: {signature}"]


COMPONENTS = ("completeness", "factuality", "effectiveness")


@dataclass
class Reasoning:
    """RadRScore over the items with reasoning annotations, two ways, each signed: `rows`, the board's figures (an item
    whose replies could not be read counts 0, its worst: `unreadable:worst`), and `judged_rows`, over the items whose
    replies were read (the authors' way, `unreadable:left-out`; a group with none has no row). Both: per source and
    task and over all, each value with a bootstrap CI over its items; `<name>_n` is the items read."""
    rows: pd.DataFrame
    judged_rows: pd.DataFrame
    signature: str
    judged_signature: str
    result: object = field(repr=False)  # the RadRScoreResult: per-item values, replies, problem counts


def reasoning_rows(items: pd.DataFrame, outputs: dict[tuple[str, str], object], judge, resamples: int = stats.RESAMPLES,
                   seed: int = stats.SEED, quoted: bool = True) -> Reasoning:
    """RadRScore's Rc, Rf, Re and their mean on the items with reasoning steps and the original report; `quoted`, its
    spec's option (the texts sent as quoted data)."""
    from rexrank.scorers.radrscore import DATASET, LEFT_OUT, radrscore
    from rexrank.scorers.radrscore import signature as radrscore_signature

    has_steps = items["reason_steps"].map(lambda steps: steps is not None and len(steps) > 0)
    reasoned = items[has_steps & items["original_report"].notna()]
    steps = [json.loads(j) if isinstance(j, str) and j else list(s)
             for j, s in zip(reasoned["reason_steps_json"], reasoned["reason_steps"])]
    keys = list(zip(reasoned["config"], reasoned["item_id"]))
    outputs_text = [o if isinstance(o := outputs.get(k), str) else "" for k in keys]
    result = radrscore(outputs_text, steps, reasoned["original_report"].tolist(), judge, dataset=DATASET,
                       quoted=quoted)
    names = (*COMPONENTS, "radrscore")
    per_item = pd.DataFrame({"source": reasoned["source"].to_numpy(), "task": reasoned["task"].to_numpy(),
                             "read": [s is not None for s in result.scores],
                             **{c: result.board(c) for c in COMPONENTS}, "radrscore": result.board_scores,
                             **{f"judged_{c}": getattr(result, c) for c in COMPONENTS},
                             "judged_radrscore": result.scores})
    groups = [(s, t, g) for (s, t), g in per_item.groupby(["source", "task"], sort=True)] + [("all", "all", per_item)]
    board, judged = [], []
    for source, task, group in groups:
        read = group[group["read"]]
        for table, frame, prefix in ((board, group, ""), (judged, read, "judged_")):
            if frame.empty:
                continue
            row = {"source": source, "task": task, "items": len(group)}
            for name in names:
                row[f"{name}_n"] = len(read)
                e = stats.estimate(frame[prefix + name].to_numpy(dtype=float), "mean", resamples, seed)
                row[name], row[f"{name}_low"], row[f"{name}_high"] = e.value, e.low, e.high
            table.append(row)
    columns = ["source", "task", "items", *(f"{n}{e}" for n in names for e in ("_n", "", "_low", "_high"))]
    return Reasoning(pd.DataFrame(board, columns=columns), pd.DataFrame(judged, columns=columns),
                     str(radrscore_signature(judge, quoted=quoted).with_bootstrap(resamples, seed)),
                     str(radrscore_signature(judge, LEFT_OUT, quoted).with_bootstrap(resamples, seed)), result)


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


def write_results(out: str | Path, model: str, scores: RadRBenchScores, reasoning: Reasoning | None = None,
                  open_ended: tuple[pd.DataFrame, str] | None = None) -> Path:
    """`<out>/radrbench-cxr.accuracy.json` (what a submission carries) and `radrbench-cxr.per_item.parquet`;
    `open_ended`: what `open_ended_rows` gave."""
    from rexrank.files import atomic_path, write_text

    out = Path(out)
    path = out / "radrbench-cxr.accuracy.json"
    write_text(path, json.dumps(
        {"dataset": "radrbench-cxr", "model": model, "signature": scores.signature,
         "missing_outputs": len(scores.missing), "rows": _records(scores.rows),
         "radrscore": None if reasoning is None else {
             "signature": reasoning.signature, **reasoning.result.tally(),
             "rows": _records(reasoning.rows), "judged_signature": reasoning.judged_signature,
             "judged_rows": _records(reasoning.judged_rows)},
         "ratescore": None if open_ended is None else {"signature": open_ended[1],
                                                       "rows": open_ended[0].to_dict("records")}},
        indent=2) + "\n")
    with atomic_path(out / "radrbench-cxr.per_item.parquet") as tmp:
        scores.per_item.to_parquet(tmp, index=False)
    return path


def _records(frame: pd.DataFrame) -> list[dict]:
    """A table's rows for JSON: NaN (no item scored) as null, every other value as it is."""
    return [{k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
            for row in frame.to_dict("records")]
