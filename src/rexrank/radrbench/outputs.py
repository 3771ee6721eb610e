"""A model's outputs for `rexrank score-radrbench`, keyed to the test set's items (docs/metrics.md §9).

Two layouts, told apart by their fields:

- rexrank's: a JSON list or JSONL of `{"config", "item_id", "output"}` (`prediction` is accepted for `output`). An
  item is named by its config (`mimic-cxr.binary`, or the authors' `mimic_binary`: one study has items in several task
  files under one published id) and its id. With configs chosen (`--config`), records of the others are set aside
  and counted.
- ChestX-Reasoner's (`eval/res/accuracy_res/<model>/<task>.json`): a JSON list of `{"question", "answer", "pred"}`,
  some files adding `image_path` and `item_id`; one task a file, named by the file (`mimic_binary_test_option.json`)
  or by `--config`. A record is the test item of that config whose question is the record's (`QUESTION_RULE`), whose
  published id is the record's `item_id` where it has one, and whose images are the record's where it has them (an
  absolute published path matches the test set's relative one by its tail). A record matching no item, or several
  (a binary question is asked of many studies), is refused, saying what to add; so is one whose answer is not the
  item's, and two records of one item.

An output is text, null (scored as an empty output), or a list of one text (Qwen2-VL-72B's files), read as that text.
An item given twice, or one the test set does not have, is an error; every problem names the record by its place in
the file and, where known, the item by its id, and all are listed at once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path, PurePosixPath

import pandas as pd

from rexrank.data.split import jsonl_records, listing, read_json
from rexrank.errors import InputError
from rexrank.radrbench.answers import options_of, parse_reference
from rexrank.radrbench.dataset import config_name
from rexrank.text import shown

OUTPUT_KEYS = ("output", "prediction")
REXRANK, CHESTX_REASONER = "rexrank", "chestx-reasoner"  # the layouts
# ChestX-Reasoner's inference appends this instruction to the published question (eval/inference/*, RL/process_data.py).
INSTRUCTION = "Let's think step by step."
QUESTION_RULE = (f"the question up to {INSTRUCTION!r} (the instruction the authors appended), each whitespace run one "
                 "space")


class Outputs(dict):
    """(config, item_id) -> the model's output (text or None), and where each came from in the file."""

    def __init__(self, layout: str) -> None:
        super().__init__()
        self.layout = layout
        self.where: dict[tuple[str, str], str] = {}  # item -> "record 3" / "line 3"
        self.set_aside: Counter = Counter()  # config -> records of configs not chosen (--config)

    def name(self, item: tuple[str, str]) -> str:
        """An item as errors name it: its id, and its place in the file where it has one."""
        place = self.where.get(item)
        return f"{'/'.join(item)}" + (f" ({place})" if place else "")


def load_outputs(path: str | Path, items: pd.DataFrame, configs: list[str] | None = None) -> Outputs:
    """The outputs in `path` for `items` (`score.load_items`); `configs`: the configs chosen, in either naming."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such outputs file")
    if path.suffix == ".jsonl":
        records = [(f"line {n}", r) for n, r in jsonl_records(path)]
    else:
        data = read_json(path)
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of {{\"config\", \"item_id\", \"output\"}} (or a .jsonl "
                             "file), or ChestX-Reasoner's list of {\"question\", \"answer\", \"pred\"}")
        records = [(f"record {i}", r) for i, r in enumerate(data, 1)]
    chosen = []
    for name in configs or []:
        try:
            chosen.append(config_name(name))
        except InputError as err:
            raise InputError(f"--config {name}: {err}") from None
    authors = bool(records) and all(isinstance(r, dict) and "pred" in r and "config" not in r for _, r in records)
    outputs, problems = (_authors(path, records, items, chosen) if authors else _rexrank(records, items, chosen))
    if problems:
        raise InputError(f"{path}: {len(problems)} problem(s), nothing was scored:\n{listing(problems)}")
    return outputs


def _text(value: object) -> tuple[str | None, str | None]:
    """(the output as text, None) or (None, what is wrong with it)."""
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str | None):
        return value[0], None
    size = f" of {len(value)}" if isinstance(value, list) else ""
    return None, f"the output is {type(value).__name__}{size} {value!r:.40}, not text (nor a list of one text)"


def _rexrank(records: list, items: pd.DataFrame, chosen: list[str]) -> tuple[Outputs, list[str]]:
    outputs, problems = Outputs(REXRANK), []
    known = set(zip(items["config"], items["item_id"]))
    for where, record in records:
        key = next((k for k in OUTPUT_KEYS if isinstance(record, dict) and k in record), None)
        if not isinstance(record, dict) or not {"config", "item_id"} <= set(record) or key is None:
            problems.append(f"{where}: expected an object with config, item_id and output")
            continue
        try:
            config = config_name(str(record["config"]))
        except InputError as err:
            problems.append(f"{where}: {err}")
            continue
        item = (config, str(record["item_id"]))
        name = f"{where} (item {'/'.join(item)})"
        if chosen and config not in chosen:
            outputs.set_aside[config] += 1
            continue
        text, wrong = _text(record[key])
        if wrong or item in outputs or item not in known:
            problems.append(f"{name}: " + (wrong or (f"given twice (also {outputs.where[item]})" if item in outputs
                                                     else "the test set has no such item")))
            continue
        outputs[item], outputs.where[item] = text, where
    return outputs, problems


def question_key(question: str) -> str:
    """A question as the join compares it (`QUESTION_RULE`)."""
    return " ".join(question.split(INSTRUCTION, 1)[0].split())


def _tail(path: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(path.replace("\\", "/")).parts if p != "/")


def _same_images(given: list[str], published: list[str]) -> bool:
    """Whether the record's (absolute) image paths are the item's (relative) ones, each matched by its tail."""
    if len(given) != len(published):
        return False
    left = [_tail(p) for p in given]
    return all(any(g[len(g) - len(t):] == t for g in left) for t in map(_tail, published))


def _config_of(path: Path, items: pd.DataFrame, chosen: list[str]) -> str:
    """The one config a file in the authors' layout holds: from its name, or --config."""
    try:
        named = config_name(path.stem)
    except InputError:
        named = None
    if len(chosen) > 1:
        raise InputError(f"{path}: a file in ChestX-Reasoner's layout holds one task; give one --config")
    if chosen and named and chosen[0] != named:
        raise InputError(f"{path}: its name says {named}, --config says {chosen[0]}")
    config = chosen[0] if chosen else named
    if config is None:
        raise InputError(f"{path}: cannot tell its task from its name: give --config (e.g. mimic-cxr.binary, or the "
                         "authors' mimic_binary)")
    if config not in set(items["config"]):
        have = ", ".join(sorted(set(items["config"])))
        raise InputError(f"{path}: the test set has no config {config} (it has {have})")
    return config


def _authors(path: Path, records: list, items: pd.DataFrame, chosen: list[str]) -> tuple[Outputs, list[str]]:
    config = _config_of(path, items, chosen)
    pool = items[items["config"] == config]
    by_question: dict[str, list] = {}
    for row in pool.itertuples(index=False):
        by_question.setdefault(question_key(row.question), []).append(row)
    outputs, problems = Outputs(CHESTX_REASONER), []
    for where, record in records:
        question, given_id, images = record.get("question"), record.get("item_id"), record.get("image_path")
        images = [images] if isinstance(images, str) else images
        if not isinstance(question, str) or (images is not None and not isinstance(images, list)):
            problems.append(f"{where}: expected a question (text) and, if any, image_path (a path or a list)")
            continue
        found = by_question.get(question_key(question), [])
        if given_id is not None:
            found = [r for r in found if r.published_item_id == str(given_id)]
        if images:
            found = [r for r in found if _same_images(images, list(r.image_paths))]
        said = " and ".join(w for w, given in (("question", True), ("item_id", given_id is not None),
                                               ("image_path", bool(images))) if given)
        name = f"{where} (question {shown(question_key(question), 80)!r})"
        if len(found) != 1:
            ids = ", ".join(r.item_id for r in found[:4]) + (" ..." if len(found) > 4 else "")
            problems.append(f"{name}: no test item of {config} has this {said}" if not found else
                            f"{name}: {len(found)} test items of {config} have this {said} ({ids}): add the item's "
                            f"{'image_path or item_id' if not images else 'item_id'} to the record")
            continue
        row = found[0]
        item = (config, row.item_id)
        name = f"{where} (item {'/'.join(item)})"
        text, wrong = _text(record["pred"])
        if wrong is None and item in outputs:
            wrong = f"the same test item as {outputs.where[item]}"
        if wrong is None and isinstance(record.get("answer"), str):
            wrong = _other_answer(record["answer"], row)
        if wrong:
            problems.append(f"{name}: {wrong}")
            continue
        outputs[item], outputs.where[item] = text, where
    return outputs, problems


def _other_answer(answer: str, row) -> str | None:
    """Why the record's reference answer is not the test item's (a join gone wrong), or None."""
    options = options_of(row.question)
    try:
        same = parse_reference(answer, row.task, options) == parse_reference(row.answer, row.task, options)
    except InputError as err:
        return str(err)
    return None if same else f"its answer {answer.strip()!r:.30} is not the test item's {row.answer!r:.30}"
