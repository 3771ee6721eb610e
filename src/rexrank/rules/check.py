"""The entry point: a pull request (a folder laid out as the repo, or its touched paths with the folder holding
them) against every rule, each problem reported by path."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rexrank.errors import InputError
from rexrank.inference.contract import MODEL_FOLDER, Model, check_model
from rexrank.results import Result
from rexrank.rules.contents import Card, check_card, check_predictions, check_result, per_study_problems
from rexrank.rules.layout import (
    CARD,
    MAX_BYTES,
    MAX_FILES,
    MAX_LISTED,
    MAX_TOTAL_BYTES,
    MAX_WALK,
    PRIVATE_RESULT,
    RADRBENCH_FILE,
    SUBMISSION_ID,
    SUBMISSIONS,
    VQA_JOB_ONLY,
    _Entry,
    classify,
    path_problems,
)
from rexrank.rules.limits import LINE_JSON, MAX_PROBLEMS_PER_FILE, MAX_TOTAL_DECODED, RESULT_JSON, parse_json
from rexrank.rules.parquet import PerStudy, check_per_study
from rexrank.rules.radrbench import check_radrbench
from rexrank.rules.vqa import check_vqa_result, table_problems
from rexrank.text import shown as _show


class SubmissionRejected(InputError):
    """A pull request that breaks a rule; `problems` lists each, and the message lists them too."""

    def __init__(self, submission_id: str, problems: list[str]):
        self.submission_id = submission_id
        self.problems = tuple(problems)
        lines = [f"  - {p}" for p in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            lines.append(f"  ... and {len(problems) - MAX_LISTED} more")
        super().__init__(f"submission {_show(submission_id)}: refused, {len(problems)} problem(s):\n"
                         + "\n".join(lines))


@dataclass(frozen=True)
class Touched:
    """One path a pull request changes: `added`, `modified` or `deleted`; size in bytes (0 for a deletion)."""

    path: str
    size: int
    change: str = "added"


CHANGES = ("added", "modified", "deleted")


@dataclass(frozen=True)
class Checked:
    """What a pull request holds, parsed and validated. `contents_checked` is False when only paths were given."""

    submission_id: str
    paths: tuple[str, ...]  # added or modified, repo-relative
    deleted: tuple[str, ...]
    contents_checked: bool
    card: Card | None = None  # None when the pull request does not carry submission.json (an update)
    results: dict[tuple[str, str], Result] = field(default_factory=dict)  # (dataset, task) -> result
    predictions: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # study ids, file order
    per_study: dict[tuple[str, str], PerStudy] = field(default_factory=dict)  # ids (table order) and table
    radrbench: dict | None = None  # radrbench/radrbench-cxr.accuracy.json, checked (`check_radrbench`)
    model: Model | None = None  # model/, a code submission checked against its contract (docs/submitting.md)
    vqa: dict[str, dict] = field(default_factory=dict)  # split -> vqa/rexvqa.vqa.<split>.json, as the job wrote it


# -- reading files without following links ----------------------------------------------------------------------

def _read_file(root: Path, path: str, limit: int) -> bytes:
    """The bytes of root/path, a regular file reached through no symlink, at most `limit` bytes."""
    parts = path.split("/")
    here = root
    for part in parts[:-1]:
        here = here / part
        try:
            info = os.lstat(here)
        except FileNotFoundError:
            raise InputError("listed but not in the downloaded folder") from None
        if stat.S_ISLNK(info.st_mode):
            raise InputError(f"{_show('/'.join(here.relative_to(root).parts))} is a symlink")
        if not stat.S_ISDIR(info.st_mode):
            raise InputError(f"{_show('/'.join(here.relative_to(root).parts))} is not a folder")
    try:
        fd = os.open(root / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError("listed but not in the downloaded folder") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise InputError("a symlink") from None
        raise InputError(f"cannot be opened ({errno.errorcode.get(err.errno, err.errno)})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InputError("not a regular file (device, pipe or socket)")
        if info.st_size > limit:
            raise InputError(f"{info.st_size} bytes, more than the {limit} allowed")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"more than the {limit} bytes allowed")
    return data


def _lines(data: bytes, longest: int = LINE_JSON.max_bytes) -> Iterable[bytes]:
    """The lines of `data`, each without its line ending (\\n or \\r\\n); a line longer than `longest` is cut
    just past it (still too long), so a long line is never copied whole."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield data[start:min(end, start + longest + 2)].removesuffix(b"\r")
        start = end + 1


def _walk(folder: Path, problems: list[str]) -> list[Touched]:
    """Every regular file under `folder` (repo-relative), with symlinks and special files reported, never
    followed; stops after MAX_WALK entries."""
    found: list[Touched] = []
    stack = [folder]
    seen = 0
    while stack:
        here = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as err:
            problems.append(f"{_show(here.relative_to(folder).as_posix())}: cannot be listed ({type(err).__name__})")
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_WALK:
                problems.append(f"more than {MAX_WALK} files and folders (stopped looking)")
                return found
            rel = Path(entry.path).relative_to(folder).as_posix()
            if entry.is_symlink():
                problems.append(f"{_show(rel)}: a symlink (symlinks are never followed or accepted)")
            elif entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                found.append(Touched(rel, entry.stat(follow_symlinks=False).st_size))
            else:
                problems.append(f"{_show(rel)}: not a regular file (device, pipe or socket)")
    return sorted(found, key=lambda t: t.path)


def _touched(item: object) -> Touched:
    if isinstance(item, Touched):
        return item
    if isinstance(item, tuple | list) and len(item) in (2, 3):
        return Touched(*item)
    raise InputError(f"expected Touched(path, size, change) or (path, size[, change]), got {type(item).__name__}")


# -- rule 7: the entry point ------------------------------------------------------------------------------------

def check_submission(folder_or_paths: str | os.PathLike | Iterable[Touched | tuple], submission_id: str,
                     owner: str | None = None, *, author: str | None = None,
                     root: str | os.PathLike | None = None, maintained: dict[str, str] | None = None) -> Checked:
    """Check a pull request for `submissions/<submission_id>/` against every rule; return what it holds.

    `folder_or_paths`: a local folder laid out as the repo (walked, contents checked), or the touched paths
    (`Touched` or `(path, size[, change])`), whose contents are checked when `root` is the folder holding them.
    `owner`: the author recorded for `submission_id`, None when the id is new; `author`: the pull request's
    author, who must be the owner for any change to an existing submission. `maintained`: repo path -> sha256 of
    the files a maintainers' job wrote into the pull request (the ledger's); a private set's result is accepted only
    there and, with `root`, only with those bytes, and so is a result whose provenance is `generated` (the inference
    job's: it ran the submitted model), wherever it is.
    Raises SubmissionRejected listing every problem found."""
    maintained = maintained or {}
    problems: list[str] = []
    if not isinstance(submission_id, str) or not SUBMISSION_ID.match(submission_id):
        raise SubmissionRejected(str(submission_id), [
            f"submission id {_show(submission_id, 70)!r} is not 1-64 lower-case letters, digits and inner hyphens"])
    touched, root = _listed(folder_or_paths, root, submission_id, problems)
    entries = _entries(touched, submission_id, maintained, problems)
    if not touched and not problems:
        problems.append("the pull request changes nothing")
    problems += _ownership(submission_id, touched, entries, owner, author)
    parsed, model = _contents(root, entries, submission_id, maintained, problems) if root is not None else (
        {kind: {} for kind in MAX_BYTES}, None)
    if problems:
        raise SubmissionRejected(submission_id, problems)
    return Checked(submission_id, tuple(t.path for t, _ in entries if t.change != "deleted"),
                   tuple(t.path for t, _ in entries if t.change == "deleted"), root is not None,
                   card=next(iter(parsed["card"].values()), None), results=parsed["results"],
                   predictions=parsed["predictions"], per_study=parsed["per_study"],
                   radrbench=next(iter(parsed["radrbench"].values()), None), model=model,
                   vqa={task.split(".", 1)[1]: r for (_, task), r in parsed["vqa_result"].items()})


def _listed(folder_or_paths, root, submission_id: str, problems: list[str]) -> tuple[list[Touched], Path | None]:
    """The touched paths (a local folder walked, or the list given) and the folder holding their contents."""
    if isinstance(folder_or_paths, str | os.PathLike):
        folder = Path(folder_or_paths)
        if folder.is_symlink() or not folder.is_dir():
            raise SubmissionRejected(submission_id, [f"{_show(str(folder))}: not a folder (or a symlink)"])
        if root is not None:
            raise InputError("root= goes with a list of touched paths; a folder is its own root")
        return _walk(folder, problems), folder
    touched = []
    for number, item in enumerate(folder_or_paths):
        if number >= MAX_FILES * 4:
            problems.append(f"more than {MAX_FILES * 4} touched paths listed (stopped looking)")
            break
        touched.append(_touched(item))
    return touched, Path(root) if root is not None else None


def _entries(touched: list[Touched], submission_id: str, maintained: dict[str, str],
             problems: list[str]) -> list[tuple[Touched, _Entry]]:
    """Each touched path that is a clean path of the layout, of an allowed size, with its kind; the count and size
    bounds on them all."""
    entries: list[tuple[Touched, _Entry]] = []
    seen: set[str] = set()
    total = 0
    for item in touched:
        where = _show(item.path) if isinstance(item.path, str) else "path"
        found = path_problems(item.path)
        if item.change not in CHANGES:
            found.append(f"unknown change {_show(item.change, 20)!r} (expected {', '.join(CHANGES)})")
        if isinstance(item.size, bool) or not isinstance(item.size, int) or item.size < 0:
            found.append(f"size {_show(repr(item.size), 20)} is not a byte count")
        elif item.path in seen:
            found.append("listed more than once")
        if found:
            problems += [f"{where}: {p}" for p in found]
            continue
        seen.add(item.path)
        try:
            entry = classify(item.path, submission_id)
        except InputError as err:
            problems.append(f"{where}: {err}")
            continue
        if entry.kind == "private_result" and item.path not in maintained:
            problems.append(f"{where}: {PRIVATE_RESULT.format(dataset=entry.dataset)}")
            continue
        if entry.kind == "vqa_result" and item.path not in maintained and item.change != "deleted":
            problems.append(f"{where}: {VQA_JOB_ONLY}")
            continue
        if item.change != "deleted":
            total += item.size
            limit = MAX_BYTES[entry.kind]
            if item.size > limit:
                problems.append(f"{where}: {item.size} bytes, more than the {limit} allowed for {entry.kind}")
                continue
            if item.size == 0:
                problems.append(f"{where}: empty file")
                continue
        entries.append((item, entry))
    if len(touched) > MAX_FILES:
        problems.append(f"{len(touched)} paths touched, more than the {MAX_FILES} a submission can have")
    if total > MAX_TOTAL_BYTES:
        problems.append(f"{total} bytes in all, more than the {MAX_TOTAL_BYTES} allowed")
    return entries


def _contents(root: Path, entries: list[tuple[Touched, _Entry]], submission_id: str, maintained: dict[str, str],
              problems: list[str]) -> tuple[dict[str, dict], Model | None]:
    """Each file read with its limits and checked, then checked against the others (a per-study table against its
    result and predictions); kind -> key -> what was read, and the code submission's model, if any."""
    parsed: dict[str, dict] = {kind: {} for kind in MAX_BYTES}
    decoded_left = MAX_TOTAL_DECODED  # the per-study tables are held together until checked against results
    for item, entry in entries:
        if item.change == "deleted":
            continue
        try:
            parsed[entry.kind][entry.key] = found = _read_entry(root, item, entry, maintained.get(item.path),
                                                                decoded_left)
        except InputError as err:
            problems.append(f"{_show(item.path)}: {_show(str(err), 600)}")
        else:
            decoded_left -= found.decoded if isinstance(found, PerStudy) else 0
    for key, table in parsed["per_study"].items():
        where = f"per_study/{key[0]}.{key[1]}.parquet"
        if key not in parsed["results"] or key not in parsed["predictions"]:
            problems.append(f"{where}: without results/{key[0]}.{key[1]}.json and its predictions")
            continue
        found = per_study_problems(parsed["results"][key], table.table, parsed["predictions"][key], table.about)
        problems += [f"{where}: {p}" for p in found[:MAX_PROBLEMS_PER_FILE]]
    problems += _vqa_tables(parsed)
    model = _model(root, submission_id, entries, problems) if any(e.kind == "model" for _, e in entries) else None
    for key in parsed["results"]:
        if key not in parsed["per_study"] or key not in parsed["predictions"]:
            problems.append(f"results/{key[0]}.{key[1]}.json: without its per-study table and predictions "
                            "(a result is checked against both)")
    return parsed, model


def _vqa_tables(parsed: dict[str, dict]) -> list[str]:
    """Each ReXVQA per-question table beside the result that names it, and each public result beside its table."""
    problems = []
    for key, data in parsed["vqa_per_question"].items():
        where = f"vqa/{key[0]}.{key[1]}.per_question.parquet"
        if key not in parsed["vqa_result"]:
            problems.append(f"{where}: without vqa/{key[0]}.{key[1]}.json (the job writes the two together)")
            continue
        problems += [f"{where}: {p}" for p in table_problems(parsed["vqa_result"][key], data)[:MAX_PROBLEMS_PER_FILE]]
    for key, result in parsed["vqa_result"].items():
        if result.get("per_question") is not None and key not in parsed["vqa_per_question"]:
            problems.append(f"vqa/{key[0]}.{key[1]}.json: without its per-question table (the job writes the two "
                            "together)")
    return problems


def _ownership(submission_id: str, touched: list[Touched], entries: list[tuple[Touched, _Entry]],
               owner: str | None, author: str | None) -> list[str]:
    folder = f"{SUBMISSIONS}/{submission_id}/"
    problems = []
    if owner is None:
        for item, _ in entries:
            if item.change != "added":
                problems.append(f"{_show(item.path)}: {item.change}, but {folder} is a new submission (no owner "
                                "recorded): a new submission only adds files")
        kinds = {e.kind for t, e in entries if t.change == "added"}
        if touched and "card" not in kinds:
            problems.append(f"{folder}{CARD}: missing (a new submission needs its card)")
        if touched and not kinds & {"results", "predictions", "radrbench", "model", "vqa_result"}:
            problems.append(f"{folder}: no results/ or predictions/ file, nor {RADRBENCH_FILE} or {MODEL_FOLDER}/ "
                            "(nothing to put on the board)")
    elif author is None or author != owner:
        problems.append(f"{folder} belongs to {_show(owner, 60)!r}; the pull request's author "
                        f"{_show(author, 60)!r} may not change it (an update comes from the same author)")
    for item, entry in entries:
        if item.change == "deleted" and entry.kind == "card":
            problems.append(f"{_show(item.path)}: the card can be replaced, not deleted")
    return problems


def _model(root: Path, submission_id: str, entries: list[tuple[Touched, _Entry]], problems: list[str]) -> Model | None:
    """A pull request's model/ folder against the contract; it carries the folder whole (model.yaml with it)."""
    prefix = f"{SUBMISSIONS}/{submission_id}/{MODEL_FOLDER}/"
    carried = {t.path for t, e in entries if e.kind == "model" and t.change != "deleted"}
    if f"{prefix}model.yaml" not in carried:
        problems.append(f"{prefix}: without model.yaml (a pull request that changes the model carries its folder "
                        "whole)")
        return None
    try:
        return check_model(root / prefix)
    except InputError as err:
        problems.append(f"{prefix}: {_show(str(err).split(': ', 1)[-1], 1200)}")
        return None


def _read_entry(root: Path, item: Touched, entry: _Entry, maintained: str | None, decoded_left: int
                ) -> Card | Result | dict | tuple[str, ...] | PerStudy | bytes:
    data = _read_file(root, item.path, MAX_BYTES[entry.kind])
    if len(data) != item.size:
        raise InputError(f"{len(data)} bytes, but the pull request lists {item.size}")
    if entry.kind == "model":  # code and text configs, read as text; the folder is checked whole after
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text (model/ holds code and text configs)") from None
        return data
    if entry.kind == "private_result":
        if hashlib.sha256(data).hexdigest() != maintained:
            raise InputError(PRIVATE_RESULT.format(dataset=entry.dataset) + " (this file is not the one it wrote)")
        return Result.from_dict(parse_json(data, RESULT_JSON), source="result")
    if entry.kind == "card":
        return check_card(data)
    if entry.kind == "results":  # a generated result only as the bytes a maintainers' job wrote
        return check_result(data, entry.dataset, entry.task, maintained)
    if entry.kind == "radrbench":
        return check_radrbench(data)
    if entry.kind == "vqa_result":  # the inference job's, as the ledger records its bytes
        return check_vqa_result(data, entry.task.split(".", 1)[1], maintained)
    if entry.kind == "vqa_per_question":  # checked with its result, whose sha256 names these bytes
        return data
    if entry.kind == "predictions":
        return check_predictions(_lines(data))
    return check_per_study(data, budget=decoded_left)
