"""RadRBench-CXR (Hugging Face `byrLLCC/RadRBench-CXR`, ChestX-Reasoner arXiv 2504.20930) as a Hub dataset folder.

    build = read_radrbench([Path("RadRBench-CXR")], image_root=Path("/data/cxr"))
    folder = write_radrbench(build, Path("radrbench"))   # load_dataset(folder, "mimic-cxr.single", split="test")

The published files are JSON lists of items, one file per source and task, named `<source>_<task>_...json`:
`{mimic,chexpert}_{binary,single,multi}_test_option`, `{mimic,chexpert}_multi_test_no_option`,
`{rsna,siim}_binary_test_option`, `temporal_cls_test_option` (the accuracy test set: `question` with its options,
`answer`, `answer_content`, `image_path` (a list), `item_id`, `dataset_name`), and the reasoning subset
`<source>_<task>_gt_reasoning`, `temporal_gt_reasoning` (the same kind of items plus `original_report`,
`reason_steps`, `plan`). `reason_steps` is a string (binary), a list of strings (single, multi) or
`{"reason_steps": str}` (temporal). Files whose name or folder says `train` (`reason_train/`) are not built.

A built dataset has one config per (source, task), named `<source>.<task>` (`mimic-cxr.single`,
`ms-cxr-t.temporal`; a binary/single/multi file without options gets `_no_option`), each with a `test` split of
`COLUMNS`. Files of one config are merged: an item is its (published item id, question); the reasoning files add
their report and steps to the test file's item (a contradicting answer is an error). The published temporal items
repeat an item id for several questions on one image pair; such ids are numbered `<id>#2`, `<id>#3` (ours) so that
`item_id` is unique in a config, and the published one is kept in `published_item_id`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from rexrank import __version__
from rexrank.catalog import RADRBENCH_CXR, DatasetInfo
from rexrank.data.build import replace_folder, sha256
from rexrank.data.split import listing, read_json
from rexrank.errors import InputError
from rexrank.radrbench.answers import MULTI_NO_OPTION, options_of, parse_reference, task_of
from rexrank.radrbench.card import card

NAME = RADRBENCH_CXR.name
SPLIT = "test"

# The first word of a published file name -> the source it was built from.
SOURCES = {"mimic": "mimic-cxr", "chexpert": "chexpert", "rsna": "rsna", "siim": "siim", "openi": "iu-xray",
           "temporal": "ms-cxr-t"}
# Where a relative image path begins in the authors' absolute ones (".../ChestXray/MIMIC-CXR-JPG/files/p10/...",
# ".../CheXpert/small/CheXpert-v1.0-small/test/...", ".../RSNA/train/<id>.jpeg", ".../siim/dicom-images-train/...").
IMAGE_FOLDERS = ("mimic-cxr-jpg", "chexpert", "rsna", "siim", "openi_indiana", "ms-cxr-t")

COLUMNS = ("item_id", "published_item_id", "task", "source", "question", "options", "answer", "answer_content",
           "image_paths", "reason_steps", "reason_steps_json", "original_report", "source_files", "extra_json")
SCHEMA = pa.schema([("item_id", pa.string()), ("published_item_id", pa.string()), ("task", pa.string()),
                    ("source", pa.string()), ("question", pa.string()),
                    ("options", pa.list_(pa.struct([("letter", pa.string()), ("text", pa.string())]))),
                    ("answer", pa.string()), ("answer_content", pa.string()), ("image_paths", pa.list_(pa.string())),
                    ("reason_steps", pa.list_(pa.string())), ("reason_steps_json", pa.string()),
                    ("original_report", pa.string()), ("source_files", pa.list_(pa.string())),
                    ("extra_json", pa.string())])
# Published fields that become columns; any other (dataset_name, plan, process, ...) is kept in extra_json.
_FIELDS = {"item_id", "question", "answer", "answer_content", "image_path", "reason_steps", "original_report"}


@dataclass(frozen=True)
class ItemFile:
    """One published JSON file: where it is, what `build_info.json` calls it, and the config it feeds."""

    path: Path
    key: str  # the path below the folder given (or the file name), as recorded in build_info.json
    source: str
    task: str
    config: str


@dataclass
class ItemBuild:
    info: DatasetInfo
    split: str
    configs: dict[str, list[dict]]  # config -> rows (COLUMNS), in published order
    sources: dict[str, str] = field(default_factory=dict)  # file key -> sha256
    notes: list[str] = field(default_factory=list)
    images: dict[str, dict] = field(default_factory=dict)  # config -> {"images", "missing", "items_missing"}
    images_checked: bool = False


def describe(path: Path, key: str) -> ItemFile | None:
    """The source, task and config of a published file from its name; None for a training file."""
    stem = path.stem.lower()
    if "train" in stem or any("train" in part.lower() for part in PurePosixPath(key).parts[:-1]):
        return None
    try:
        config = config_name(stem)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    source, task = config.split(".", 1)
    return ItemFile(path, key, source, task_of(task), config)


def config_name(name: str) -> str:
    """The config (`<source>.<task>`) a rexrank config name or one of the authors' task or file names stands for:
    `mimic_binary`, `mimic_multi_test_no_option`, `temporal_cls_test_option`, `mimic_binary_evaluation_res` ->
    `mimic-cxr.binary`, `mimic-cxr.multi_no_option`, `ms-cxr-t.temporal`, `mimic-cxr.binary`."""
    if "." in name and name.split(".", 1)[0] in SOURCES.values():
        source, task = name.split(".", 1)
        task_of(task)  # a known task, or the error that says which are
        return name
    stem = name.lower()
    first = stem.split("_", 1)[0]
    if first not in SOURCES:
        raise InputError(f"cannot tell the source of RadRBench-CXR's {name!r}: a config is <source>.<task> "
                         f"({', '.join(sorted(set(SOURCES.values())))}), and an authors' name starts with one of "
                         f"{', '.join(f'{k}_' for k in SOURCES)}")
    task = task_of(stem)
    no_option = "no_option" in stem and task != MULTI_NO_OPTION  # a question asked without its options
    return f"{SOURCES[first]}.{task}{'_no_option' if no_option else ''}"


def find_files(sources: Sequence[Path]) -> tuple[list[ItemFile], list[str]]:
    """The test files among `sources` (files, or folders searched for *.json) and notes on what was left out."""
    found: list[tuple[Path, str]] = []
    for source in sources:
        if source.is_dir():
            found += [(p, p.relative_to(source).as_posix()) for p in sorted(source.rglob("*.json"))
                      if not any(part.startswith(".") for part in p.relative_to(source).parts)]
        elif source.is_file():
            found.append((source, source.name))
        else:
            raise InputError(f"{NAME}: no such source: {source}")
    files, train, other = [], [], []
    named = {path for path in sources if path.is_file()}  # a file named outright must be an item file
    for path, key in found:
        if path not in named and path.stem.lower().split("_", 1)[0] not in SOURCES:
            other.append(key)  # a file beside the items, named for no source (the demo's models.json, metadata)
            continue
        described = describe(path, key)
        if described is None:
            train.append(key)
        else:
            files.append(described)
    notes = [f"{len(train)} training file(s) left out (only the test split is built): {', '.join(train[:5])}"
             f"{' ...' if len(train) > 5 else ''}"] if train else []
    notes += [f"{len(other)} file(s) whose names start with no RadRBench-CXR source left out: {', '.join(other[:5])}"
              f"{' ...' if len(other) > 5 else ''}"] if other else []
    if not files:
        raise InputError(f"{NAME}: no RadRBench-CXR test files in {', '.join(map(str, sources))} (expected JSON "
                         "files named like mimic_single_test_option.json)")
    return files, notes


def _steps(value) -> list[str] | None:
    """Reasoning steps as a list of strings: a string split at line breaks, a list kept, a dict's values in order."""
    if value is None:
        return None
    if isinstance(value, str):
        steps = [line.strip() for line in value.splitlines() if line.strip()]
    elif isinstance(value, list):
        steps = [s.strip() if isinstance(s, str) else json.dumps(s, ensure_ascii=False) for s in value]
    elif isinstance(value, dict):
        steps = [s for v in value.values() for s in (_steps(v) or [])]
    else:
        steps = [json.dumps(value, ensure_ascii=False)]
    return steps or None


def _text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def read_items(item_file: ItemFile) -> list[dict]:
    """A published file's items, normalised (image paths still as published); every bad item named at once."""
    data = read_json(item_file.path)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{item_file.path}: not a RadRBench-CXR file: expected a JSON list of items "
                         "(question, answer, image_path, item_id)")
    if not data:
        raise InputError(f"{item_file.path}: holds no items")
    items, bad, seen = [], [], set()
    for number, record in enumerate(data, 1):
        item_id = record.get("item_id")
        where = f"item {number} ({item_id!r})"
        if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or not str(item_id).strip():
            bad.append(f"item {number}: no item_id")
            continue
        question, answer, images = record.get("question"), record.get("answer"), record.get("image_path")
        images = [images] if isinstance(images, str) else images
        missing = [name for name, ok in (("question", isinstance(question, str) and question.strip()),
                                         ("answer", isinstance(answer, str) and answer.strip()),
                                         ("image_path", isinstance(images, list) and images
                                          and all(isinstance(p, str) and p for p in images))) if not ok]
        if missing:
            bad.append(f"{where}: no {', '.join(missing)}")
            continue
        report = record.get("original_report")
        if report is not None and not isinstance(report, str):
            bad.append(f"{where}: original_report is {type(report).__name__}, not text")
            continue
        try:
            options = options_of(question)
            parse_reference(answer, item_file.task, options)
        except InputError as err:
            bad.append(f"{where}: {err}")
            continue
        key = (str(item_id).strip(), question)
        if key in seen:
            bad.append(f"{where}: the same item id and question appear more than once")
            continue
        seen.add(key)
        steps = record.get("reason_steps")
        steps = None if steps in ("", [], {}) else steps
        extra = {k: v for k, v in record.items() if k not in _FIELDS}
        items.append({"published_item_id": key[0], "task": item_file.task, "source": item_file.source,
                      "question": question, "options": [{"letter": k, "text": v} for k, v in options.items()],
                      "answer": answer, "answer_content": _text(record.get("answer_content")),
                      "image_paths": list(images), "reason_steps": _steps(steps),
                      "reason_steps_json": None if steps is None else json.dumps(steps, ensure_ascii=False),
                      "original_report": report, "source_files": [item_file.key], "extra": extra})
    if bad:
        raise InputError(f"{item_file.path}: {len(bad)} of {len(data)} item(s) cannot be read as RadRBench-CXR "
                         f"{item_file.task} items:\n{listing(bad)}")
    return items


# Fields two files must agree on when both give them for one item.
_AGREE = ("answer", "answer_content", "image_paths", "reason_steps_json", "original_report")


def _merge(config: str, into: dict, item: dict) -> str | None:
    """Add `item`'s fields to the same item read from another file; a disagreement, or None."""
    for name in _AGREE:
        if item[name] is not None and into[name] is not None and item[name] != into[name]:
            return (f"{config}: item {into['published_item_id']!r} has a different {name} in "
                    f"{into['source_files'][0]} and {item['source_files'][0]}")
    for name in _AGREE + ("reason_steps",):
        if into[name] is None:
            into[name] = item[name]
    into["source_files"] = into["source_files"] + item["source_files"]
    into["extra"] = item["extra"] | into["extra"]
    return None


def relative_image(path: str, root: Path | None) -> tuple[str, bool | None]:
    """(the image's path relative to the image root, whether it is there; None when no root was given).

    The longest tail of the published path that exists under `root` wins, so a root holding the authors' folders
    (`MIMIC-CXR-JPG/files/...`, `CheXpert/...`) and a root that is one dataset's own folder (`files/p10/...`) both
    work. Otherwise the path keeps the published layout from the dataset's folder on (`IMAGE_FOLDERS`)."""
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p != "/"]
    if root is not None:
        for start in range(len(parts)):
            if root.joinpath(*parts[start:]).is_file():
                return "/".join(parts[start:]), True
    lowered = [p.lower() for p in parts]
    start = next((i for i, p in enumerate(lowered) if p in IMAGE_FOLDERS), 0)
    return "/".join(parts[start:]), (None if root is None else False)


def read_radrbench(sources: Sequence[Path], split: str | None = None, image_root: Path | None = None) -> ItemBuild:
    """The test items of the published files in `sources`, one config per (source, task)."""
    split = split or SPLIT
    if split != SPLIT:
        raise InputError(f"{NAME}: only the {SPLIT} split is built (the training files are not a benchmark); "
                         f"drop --split {split}")
    if image_root is not None and not image_root.is_dir():
        raise InputError(f"{NAME}: --image-root {image_root} is not a folder")
    files, notes = find_files(sources)
    build = ItemBuild(RADRBENCH_CXR, split, {}, notes=notes, images_checked=image_root is not None)
    by_digest: dict[str, ItemFile] = {}
    stems: dict[tuple[str, str], ItemFile] = {}
    # Test files first, so an item keeps the test file's order and the reasoning subset only adds to it.
    for item_file in sorted(files, key=lambda f: (f.config, not _is_test_file(f.path.name), f.key)):
        digest = sha256(item_file.path)
        if digest in by_digest:
            build.notes.append(f"{item_file.key}: a second copy of {by_digest[digest].key}, read once")
            continue
        stem = (item_file.config, item_file.path.name.lower())
        if stem in stems:
            raise InputError(f"{NAME}: two different files named {item_file.path.name} for {item_file.config} "
                             f"({stems[stem].path}, {item_file.path}); give one of them")
        by_digest[digest] = stems[stem] = item_file
        build.sources[item_file.key] = digest
        rows = build.configs.setdefault(item_file.config, [])
        index = {(r["published_item_id"], r["question"]): r for r in rows}
        for item in read_items(item_file):
            key = (item["published_item_id"], item["question"])
            if key in index:
                if problem := _merge(item_file.config, index[key], item):
                    raise InputError(problem)
            else:
                rows.append(item)
                index[key] = item
    for config, rows in build.configs.items():
        _finish(build, config, rows, image_root)
    return build


def _finish(build: ItemBuild, config: str, rows: list[dict], image_root: Path | None) -> None:
    """Unique item ids, relative image paths, extra fields as JSON; the config's image check and notes."""
    uses: Counter = Counter()
    images = missing = items_missing = 0
    first_missing = None
    for row in rows:
        published = row["published_item_id"]
        uses[published] += 1
        row["item_id"] = published if uses[published] == 1 else f"{published}#{uses[published]}"
        paths, found = zip(*(relative_image(p, image_root) for p in row["image_paths"]))
        row["image_paths"] = list(paths)
        images += len(paths)
        lost = sum(f is False for f in found)
        missing += lost
        items_missing += lost > 0
        if lost and first_missing is None:
            first_missing = next(p for p, f in zip(paths, found) if f is False)
        extra = row.pop("extra")
        row["extra_json"] = json.dumps(extra, ensure_ascii=False) if extra else None
    repeated = sum(n - 1 for n in uses.values() if n > 1)
    if repeated:
        build.notes.append(f"{config}: {repeated} item(s) share a published item id with an earlier item (several "
                           "questions on one study); numbered <id>#2, <id>#3 in item_id")
    if image_root is not None and missing:
        build.notes.append(f"{config}: {missing} of {images} image(s) not found under the image root "
                           f"({items_missing} item(s); first: {first_missing}); their paths keep the published layout")
    build.images[config] = {"images": images, "missing": missing if image_root is not None else None,
                            "items_missing": items_missing if image_root is not None else None}


def _is_test_file(key: str) -> bool:
    """A file of the accuracy test set (`*_test_option.json`), not of the reasoning subset (`*_gt_reasoning.json`)."""
    return "test" in PurePosixPath(key).stem.lower()


def counts(build: ItemBuild) -> dict:
    configs = {}
    for config, rows in build.configs.items():
        configs[config] = {"task": rows[0]["task"], "source": rows[0]["source"], "items": len(rows),
                           "with_reasoning": sum(r["reason_steps"] is not None for r in rows),
                           "with_report": sum(r["original_report"] is not None for r in rows),
                           "repeated_ids": sum(r["item_id"] != r["published_item_id"] for r in rows),
                           "only_in_reasoning_files": sum(not any(_is_test_file(f) for f in r["source_files"])
                                                          for r in rows),
                           **build.images[config]}
    return {"items": sum(c["items"] for c in configs.values()), "configs": configs}


def write_radrbench(build: ItemBuild, out: str | os.PathLike) -> Path:
    """The dataset folder: `<config>/test-00000-of-00001.parquet` per config, README.md, build_info.json; written
    beside `out` and moved into place whole."""
    names = sorted(build.configs)
    info = {"rexrank": __version__, "dataset": build.info.name, "split": build.split, "sources": build.sources,
            "counts": counts(build), "images_checked": build.images_checked,
            "files": {c: sorted({f for r in build.configs[c] for f in r["source_files"]}) for c in names},
            "notes": build.notes}

    def fill(staging: Path) -> None:
        for config in names:
            (staging / config).mkdir()
            table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in build.configs[config]], schema=SCHEMA)
            pq.write_table(table, staging / config / f"{build.split}-00000-of-00001.parquet")
        (staging / "build_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        (staging / "README.md").write_text(card(info), encoding="utf-8")

    return replace_folder(Path(out), fill)


@dataclass(frozen=True)
class ItemBuilder:
    """`rexrank build-dataset radrbench-cxr`: what the catalog's report builders do, for a dataset of items."""

    info: DatasetInfo = RADRBENCH_CXR
    default_split: str = SPLIT
    always_private: bool = True
    originals_help: str = "the published JSON files (test files and the *_gt_reasoning files) or their folder"
    rexrank_file: str = ""  # ReXrank has no split file for it

    def read(self, sources: Sequence[Path], split: str | None = None, image_root: Path | None = None) -> ItemBuild:
        return read_radrbench(sources, split, image_root)

    def write(self, build: ItemBuild, out: str | os.PathLike) -> Path:
        return write_radrbench(build, out)

    def summary(self, info: dict, folder: Path) -> str:
        configs = info["counts"]["configs"]
        return (f"{info['dataset']} {info['split']}: {info['counts']['items']:,} items in {len(configs)} configs ("
                + ", ".join(f"{name} {c['items']:,}" for name, c in sorted(configs.items())) + f") -> {folder}")


BUILDER = ItemBuilder()
