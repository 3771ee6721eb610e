"""ReXVQA's questions as a Hub dataset, built from the Hub's own files (`rexrank build-dataset rexvqa`).

rajpurkarlab/ReXVQA ships `metadata/<split>_vqa_data.json` (train, valid, test): one object keyed by question id,
each record with `question`, `options` (`["A. ...", "B. ...", ...]`), `correct_answer` (the letter), `task_name` (one
of the five categories ReXrank scores), `category` and `subcategory` (finer topics), `study_id` and `ImagePath` (the
study's images in rajpurkarlab/ReXGradient-160K), with the report and patient fields beside them, which the build
leaves out. The challenge's private set has the same layout (41,007 questions on 10,000 studies); rexrank knows it by
its ids and counts only.

The built folder holds one config, `default/<split>-00000-of-00001.parquet`, one row per question (`COLUMNS`), so
`load_dataset(folder, split=...)` reads it; `build_info.json` has the sources' sha256 and the counts by category.
Known splits are known by their question ids as the report splits are by study ids: where rexrank ships
`resources/splits/rexvqa.<split>.txt` the build names the questions missing or extra.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank import __version__
from rexrank.catalog import REXVQA, VQA_CATEGORIES, VQA_PRIVATE, VQA_TOTAL_QUESTIONS, DatasetInfo
from rexrank.data.build import front_matter, replace_folder, sha256
from rexrank.data.known import official_ids, split_name
from rexrank.data.split import listing, read_json
from rexrank.errors import InputError
from rexrank.scorers.rexvqa_accuracy import options_of

NAME = REXVQA.name
CONFIG = "default"
COLUMNS = ("question_id", "study_id", "question", "options", "correct_answer", "category", "source_category",
           "subcategory", "image_paths")
_FILE = re.compile(r"^(?P<split>[A-Za-z_]+?)_vqa_data\.json$")
_CATEGORY_KEYS = {re.sub(r"[^a-z]", "", c.lower()): c for c in VQA_CATEGORIES}
HELP = "rajpurkarlab/ReXVQA's metadata files, `metadata/<split>_vqa_data.json`, or the folder holding them"


def category(text: object) -> str | None:
    """One of the five categories as ReXrank's table names it, from how a file spells it ("presence_assessment",
    "Presence Assessment"); None when it is none of them."""
    key = re.sub(r"[^a-z]", "", text.lower()) if isinstance(text, str) else ""
    return _CATEGORY_KEYS.get(key)


@dataclass
class QuestionBuild:
    info: DatasetInfo
    split: str
    questions: pd.DataFrame
    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def find_files(sources: Sequence[Path]) -> dict[str, Path]:
    """Each split's metadata file among the sources (files, or folders searched below), by rexrank's split name."""
    files: dict[str, Path] = {}
    for source in sources:
        for path in sorted(source.rglob("*_vqa_data.json")) if source.is_dir() else [source]:
            match = _FILE.match(path.name)
            if match is None:
                raise InputError(f"{path}: expected ReXVQA's metadata file, <split>_vqa_data.json")
            split = split_name(match.group("split"))
            if split in files and files[split] != path:
                raise InputError(f"two {split} files: {files[split]} and {path}")
            files[split] = path
    return files


def _text(record: dict, key: str) -> str | None:
    value = record.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _row(question_id: str, record: object, where: str) -> dict:
    if not isinstance(record, dict):
        raise InputError(f"{where}: question {question_id}: expected an object, got {type(record).__name__}")
    here = f"{where}: question {question_id}: "
    question = _text(record, "question")
    if question is None:
        raise InputError(f"{here}no question text")
    options = record.get("options")
    letters = options_of(options if isinstance(options, list) else None, here)
    if len(letters) < 2:
        raise InputError(f"{here}expected a list of options `A. ...`, got {options!r:.60}")
    answer = _text(record, "correct_answer")
    if answer is not None and answer.upper() not in letters:
        raise InputError(f"{here}correct_answer {answer!r:.20} is not one of its options ({', '.join(letters)})")
    chosen = category(record.get("task_name"))
    if chosen is None:
        raise InputError(f"{here}task_name {record.get('task_name')!r:.60} is none of the five categories "
                         f"({', '.join(VQA_CATEGORIES)})")
    images = record.get("ImagePath") or record.get("image_path") or []
    return {"question_id": question_id, "study_id": str(record.get("study_id") or ""), "question": question,
            "options": list(options), "correct_answer": None if answer is None else answer.upper(),
            "category": chosen, "source_category": _text(record, "category"),
            "subcategory": _text(record, "subcategory"),
            "image_paths": [str(p) for p in images] if isinstance(images, list) else [str(images)]}


def read_rexvqa(sources: Sequence[Path], split: str | None = None, image_root: Path | None = None) -> QuestionBuild:
    """The questions of one split (default test) from the Hub's metadata files."""
    files = find_files(sources)
    split = split_name(split) or "test"
    if split not in files:
        raise InputError(f"{NAME}: no {split} file among the sources (found: {', '.join(sorted(files)) or 'none'}); "
                         f"give {HELP}")
    path = files[split]
    data = read_json(path, "an object keyed by question id")
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: expected an object keyed by question id")
    frame = pd.DataFrame([_row(str(qid), record, str(path)) for qid, record in data.items()], columns=list(COLUMNS))
    notes = []
    if (unanswered := int(frame["correct_answer"].isna().sum())):
        notes.append(f"{unanswered:,} question(s) without correct_answer: they cannot be scored")
    if image_root is not None:
        absent = [p for paths in frame["image_paths"] for p in paths if not (image_root / p.lstrip("./")).is_file()]
        if absent:
            notes.append(f"{len(absent):,} image path(s) not found under {image_root}, e.g. {absent[0]}")
    return QuestionBuild(REXVQA, split, frame, {path.name: sha256(path)}, notes)


def compare_with_known(split: str, questions: pd.DataFrame) -> dict:
    """The counts beside what rexrank knows of the split: the private set's counts, shipped question ids."""
    ids = questions["question_id"].tolist()
    report: dict = {"questions": len(ids), "studies": int(questions["study_id"].nunique())}
    if split == VQA_PRIVATE["split"]:
        report["expected"] = {k: VQA_PRIVATE[k] for k in ("questions", "studies")}
    known = official_ids(NAME, split)
    if known is not None:
        have, want = set(ids), set(known)
        report["missing"] = [i for i in known if i not in have]
        report["extra"] = [i for i in ids if i not in want]
    expected = report.get("expected", {})
    report["matches"] = (all(report[k] == v for k, v in expected.items())
                         and not report.get("missing") and not report.get("extra"))
    return report


def counts(questions: pd.DataFrame) -> dict:
    return {"questions": len(questions), "studies": int(questions["study_id"].nunique()),
            "answered": int(questions["correct_answer"].notna().sum()),
            "categories": {c: int((questions["category"] == c).sum()) for c in VQA_CATEGORIES}}


def write_rexvqa(build: QuestionBuild, out: str | os.PathLike) -> Path:
    """The dataset folder, written beside `out` and moved into place whole."""
    repeated = build.questions["question_id"][build.questions["question_id"].duplicated()].unique().tolist()
    if repeated:
        raise InputError(f"{NAME}: question id(s) appear more than once:\n{listing(repeated)}")
    info = {"rexrank": __version__, "dataset": NAME, "split": build.split, "sources": build.sources,
            "counts": counts(build.questions), "known": compare_with_known(build.split, build.questions),
            "notes": build.notes}

    def fill(staging: Path) -> None:
        (staging / CONFIG).mkdir()
        build.questions.to_parquet(staging / CONFIG / f"{build.split}-00000-of-00001.parquet", index=False)
        (staging / "build_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        (staging / "README.md").write_text(card(build, info), encoding="utf-8")

    return replace_folder(Path(out), fill)


def card(build: QuestionBuild, info: dict) -> str:
    d, c = build.info, info["counts"]
    yaml = front_matter(d, ("radiology", "chest-x-ray", "visual-question-answering", "rexrank"), (CONFIG,),
                        build.split, default=CONFIG)
    rows = "\n".join(f"| {name} | {n:,} |" for name, n in c["categories"].items())
    return "\n".join(yaml) + f"""
# {d.title}: the {build.split} split, for rexrank

{d.description}

Built by `rexrank build-dataset {NAME}` (rexrank {info['rexrank']}) from the user's own copy of
`rajpurkarlab/ReXVQA`; the questions and options are the source's, unchanged. Homepage: {d.homepage}

## Counts

{c['questions']:,} questions on {c['studies']:,} studies ({c['answered']:,} with their correct answer).

| category | questions |
|---|---:|
{rows}

## Columns

- `question_id`: the source's key; `study_id`: the ReXGradient-160K study.
- `question`, `options` (`["A. ...", ...]`), `correct_answer` (the letter; null where the source has none).
- `category`: one of the five ReXrank scores (the source's `task_name`); `source_category`, `subcategory`: the
  source's finer topics.
- `image_paths`: the study's images as the source names them (ReXGradient-160K's `deid_png/...`).

```python
from datasets import load_dataset
questions = load_dataset("PATH_OR_ORG/NAME", split="{build.split}")
```

## Licence and access

{d.access}

## Citation

```bibtex
{d.citation.strip()}
```
"""


def load_questions(folder: str | os.PathLike, split: str | None = None) -> tuple[pd.DataFrame, str]:
    """A folder built by `rexrank build-dataset rexvqa`: its questions and split."""
    folder = Path(folder)
    info_path = folder / "build_info.json"
    if not info_path.is_file():
        raise InputError(f"{folder}: not a ReXVQA dataset built by rexrank (no build_info.json)")
    info = read_json(info_path)
    if not isinstance(info, dict) or info.get("dataset") != NAME:
        raise InputError(f"{folder}: built for {info.get('dataset') if isinstance(info, dict) else '?'}, not {NAME}")
    split = split_name(split) or info.get("split")
    files = sorted((folder / CONFIG).glob(f"{split}-*.parquet"))
    if not files:
        raise InputError(f"{folder}: no {split} questions")
    return pd.concat([pd.read_parquet(p) for p in files], ignore_index=True), split


@dataclass(frozen=True)
class QuestionBuilder:
    """`rexrank build-dataset rexvqa`: what the catalog's report builders do, for a dataset of questions."""

    info: DatasetInfo = REXVQA
    default_split: str = "test"
    always_private: bool = True
    originals_help: str = HELP
    rexrank_file: str = ""  # ReXrank publishes no split file for it: the Hub's metadata is the source
    written: str = (f"one config, `{CONFIG}/<split>-00000-of-00001.parquet`, one row per question (`load_dataset(OUT, "
                    "split=...)`), its options and correct letter as the source has them")
    sizes: str = (f"| set | questions | studies |\n|---|---:|---:|\n| ReXVQA, every split | {VQA_TOTAL_QUESTIONS:,} | "
                  f"160,000 |\n| the challenge's private set (ids and counts only) | {VQA_PRIVATE['questions']:,} | "
                  f"{VQA_PRIVATE['studies']:,} |\n")

    def read(self, sources: Sequence[Path], split: str | None = None, image_root: Path | None = None):
        missing = [str(p) for p in sources if not p.exists()]
        if missing:
            raise InputError(f"{NAME}: no such source: {', '.join(missing)}")
        return read_rexvqa(sources, split, image_root)

    def write(self, build: QuestionBuild, out: str | os.PathLike) -> Path:
        return write_rexvqa(build, out)

    def summary(self, info: dict, folder: Path) -> str:
        c = info["counts"]
        return (f"{NAME} {info['split']}: {c['questions']:,} questions on {c['studies']:,} studies ("
                + ", ".join(f"{k} {v:,}" for k, v in c["categories"].items()) + f") -> {folder}")


BUILDER = QuestionBuilder()
