"""The results repo's layout as a submission may write it: which paths a pull request may touch, each path's kind
(card, results, per-study table, predictions, RadRBench-CXR accuracy, a private result the maintainers wrote, a
ReXVQA result and its per-question table the inference job wrote), and the bounds on sizes and counts."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rexrank.catalog import DATASETS, PRIVATE_DATASETS, REXVQA, VQA_PRIVATE, VQA_TASK
from rexrank.errors import InputError
from rexrank.inference.contract import MAX_DEPTH as MODEL_DEPTH
from rexrank.inference.contract import MAX_FILE_BYTES as MODEL_FILE_BYTES
from rexrank.inference.contract import MAX_FILES as MODEL_FILES
from rexrank.inference.contract import MODEL_FOLDER, TEXT_SUFFIXES
from rexrank.reports import TASKS

SUBMISSIONS = "submissions"  # submissions/<id>/: one folder per submission
CARD = "submission.json"  # its model card
SUBMISSION_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")  # a folder's name
MAINTAINER_FILES = ("README.md", "leaderboard.parquet", "radrbench.parquet")
_FOLDERS = {"results": "json", "per_study": "parquet", "predictions": "jsonl"}
_LAYOUT_FILE = re.compile(r"(results|per_study|predictions)/([a-z0-9-]+)\.([a-z_]+)\.(json|parquet|jsonl)")
# RadRBench-CXR accuracy, as `rexrank score-radrbench` writes it (one file: the answers are scored by rule, so the
# numbers need no per-item table to be reviewed; the model's outputs stay with its authors).
RADRBENCH_RESULT = "radrbench-cxr.accuracy.json"
RADRBENCH_FILE = f"radrbench/{RADRBENCH_RESULT}"
# ReXVQA, as the inference job writes it (rexrank.backend.vqa; `rexrank score-vqa` names a file for its model where
# this names it for its split): vqa/rexvqa.vqa.<split>.json, and for a public split its per-question table beside it.
VQA_FOLDER = "vqa"
VQA_STEM = f"{REXVQA.name}.{VQA_TASK}"
VQA_PRIVATE_SPLIT = VQA_PRIVATE["split"]
_VQA_FILE = re.compile(rf"{VQA_FOLDER}/{re.escape(VQA_STEM)}\.([a-z]{{1,20}})\.(json|per_question\.parquet)")
LAYOUT_HELP = ("submission.json, results|per_study|predictions/<dataset>.<task>.json|parquet|jsonl, "
               f"{RADRBENCH_FILE}, {MODEL_FOLDER}/... (a code submission: docs/submitting.md)")

# -- the bounds -------------------------------------------------------------------------------------------------

KiB, MiB = 1024, 1024 * 1024
MAX_BYTES = {"card": 16 * KiB, "results": 1 * MiB, "per_study": 64 * MiB, "predictions": 64 * MiB,
             "radrbench": 1 * MiB, "private_result": 1 * MiB, "model": MODEL_FILE_BYTES,
             # a per-question table: 41,007 answers of at most 4 KiB each (rexrank.inference.runner.MAX_VQA_ANSWER)
             "vqa_result": 1 * MiB, "vqa_per_question": 192 * MiB}
VQA_JOB_ONLY = ("a ReXVQA result is written by the maintainers' inference job, which runs the submitted model "
                "(docs/submitting.md): a pull request does not carry one")
PRIVATE_RESULT = ("{dataset} is private: its result is written by the maintainers' scoring job, a submission carries "
                  "its predictions only")
# touched paths in one pull request: the results layout has at most 1 + 4 datasets x 2 tasks x 3 + 1 = 26, and a
# code submission's model/ folder up to MODEL_FILES more
MAX_FILES = 32 + MODEL_FILES
MAX_TOTAL_BYTES = 256 * MiB
MAX_WALK = 1000  # entries looked at in a local folder before giving up
MAX_PATH_CHARS = 256
MAX_LISTED = 100  # problems listed in the refusal's message


def path_problems(path: object) -> list[str]:
    """What is wrong with a repo path as text, before the layout is looked at (empty when nothing)."""
    if not isinstance(path, str):
        return [f"path is {type(path).__name__}, not text"]
    if not path:
        return ["empty path"]
    if len(path) > MAX_PATH_CHARS:
        return [f"path longer than {MAX_PATH_CHARS} characters"]
    problems = []
    categories = {unicodedata.category(ch) for ch in path}
    if "\x00" in path:
        problems.append("NUL character in path")
    elif "Cc" in categories:
        problems.append("control character in path")
    if "Cf" in categories:
        problems.append("invisible or bidirectional formatting character in path (zero-width, right-to-left "
                        "override...)")
    if "Cs" in categories:
        problems.append("undecodable bytes in path")
    if unicodedata.normalize("NFC", path) != path:
        problems.append("path is not NFC-normalised unicode")
    if not path.isascii():
        problems.append("non-ASCII characters in path")
    if "\\" in path:
        problems.append("backslash in path")
    absolute = path.startswith("/") or re.match(r"^[A-Za-z]:", path) is not None
    if absolute:
        problems.append("absolute path")
    segments = path.lstrip("/").split("/")
    if "" in segments:
        problems.append("empty path segment (// or a trailing /)")
    if ".." in segments:
        problems.append("'..' segment in path")
    if "." in segments:
        problems.append("'.' segment in path")
    if any(s.startswith(".") and s not in (".", "..") for s in segments):
        problems.append("hidden file or folder (a name starting with '.')")
    return problems


@dataclass(frozen=True)
class _Entry:
    path: str
    kind: str  # card, results, per_study, predictions, radrbench
    dataset: str | None
    task: str | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset or "", self.task or "")


def classify(path: str, submission_id: str) -> _Entry:
    """The layout's kind of a clean path inside `submissions/<submission_id>/`, or InputError saying why not."""
    if path in MAINTAINER_FILES:
        raise InputError("maintainers only: a pull request never changes it")
    parts = path.split("/")
    if parts[0] != SUBMISSIONS or len(parts) < 3:
        raise InputError(f"outside {SUBMISSIONS}/{submission_id}/ (a pull request changes its own submission "
                         "folder only)")
    if parts[1] != submission_id:
        raise InputError(f"in another submission's folder {SUBMISSIONS}/{parts[1]}/ (this pull request is "
                         f"for {submission_id})")
    rel = "/".join(parts[2:])
    if rel == CARD:
        return _Entry(path, "card", None, None)
    if rel == RADRBENCH_FILE:
        return _Entry(path, "radrbench", "radrbench-cxr", "radrbench")
    if rel.startswith(f"{VQA_FOLDER}/"):
        vqa = _VQA_FILE.fullmatch(rel)
        if vqa is None:
            raise InputError(f"not a file of the submission layout: {VQA_FOLDER}/ holds {VQA_STEM}.<split>.json and, "
                             f"for a public split, {VQA_STEM}.<split>.per_question.parquet")
        if vqa.group(2) != "json" and vqa.group(1) == VQA_PRIVATE_SPLIT:
            raise InputError(f"{REXVQA.name} {VQA_PRIVATE_SPLIT} is private: its per-question results are never "
                             "published")
        return _Entry(path, "vqa_result" if vqa.group(2) == "json" else "vqa_per_question", REXVQA.name,
                      f"{VQA_TASK}.{vqa.group(1)}")
    if rel.startswith(f"{MODEL_FOLDER}/"):  # a code submission: its script, configs and environment file
        name = rel.rsplit("/", 1)[-1]
        if rel.count("/") > MODEL_DEPTH:
            raise InputError(f"deeper than {MODEL_DEPTH} folders in {MODEL_FOLDER}/")
        if "." not in name or f".{name.rsplit('.', 1)[-1].lower()}" not in TEXT_SUFFIXES:
            raise InputError(f"{MODEL_FOLDER}/ holds code and text configs ({', '.join(TEXT_SUFFIXES)}); weights "
                             "and data go to the Hub, pinned in model.yaml")
        return _Entry(path, "model", None, None)
    match = _LAYOUT_FILE.fullmatch(rel)
    if not match:
        hint = " (names are lower case)" if rel.lower() != rel else ""
        raise InputError(f"not a file of the submission layout{hint}: expected {LAYOUT_HELP}")
    folder, dataset, task, ext = match.groups()
    if _FOLDERS[folder] != ext:
        raise InputError(f"{folder}/ holds .{_FOLDERS[folder]} files, not .{ext}")
    if dataset not in DATASETS:
        raise InputError(f"unknown dataset {dataset!r}: expected one of {', '.join(DATASETS)}")
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}: expected one of {', '.join(TASKS)}")
    if dataset in PRIVATE_DATASETS and folder == "per_study":
        raise InputError(f"{dataset} is private: its per-study scores are never published")
    if dataset in PRIVATE_DATASETS and folder == "results":  # allowed only as the private job wrote it
        return _Entry(path, "private_result", dataset, task)
    return _Entry(path, folder, dataset, task)




def result_file(submission_id: str, key: str) -> str:
    """The repo path of the result a job wrote for `submission_id` under the ledger's key: `<dataset>.<task>` in
    results/, `rexvqa.vqa.<split>` in vqa/."""
    folder = VQA_FOLDER if key.startswith(f"{VQA_STEM}.") else "results"
    return f"{SUBMISSIONS}/{submission_id}/{folder}/{key}.json"
