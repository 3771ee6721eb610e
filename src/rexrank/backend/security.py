"""The security rules every submission pull request passes before anything else reads it.

A pull request to the results repo is untrusted input from anyone with a Hub account. These checks are pure
(no network, nothing written) and run on either

- the list of paths the pull request touches, each with its size and change (`Touched`), for the structure only,
  or with `root=` a folder holding those files (downloaded as plain files, not the Hub cache's symlinks) for the
  contents too; or
- a local folder laid out as the repo (`submissions/<id>/...` under it), walked without following links.

Rules (each problem found is reported, by path; contents are quoted only as short escaped snippets):

1. One folder: a pull request touches `submissions/<id>/` and nothing else (never README.md, leaderboard.parquet,
   another submission or anything outside `submissions/`); a folder with a recorded owner changes only when the
   pull request's author is that owner; a new folder adds files only (no edits, no deletions) and has its card.
2. Paths: relative, `/`-separated, no `..`/`.`/empty segments, no hidden names, no backslashes, no control,
   invisible or bidirectional-override characters, NFC and ASCII, and exactly the layout's lower-case names;
   in a folder no symlinks and no special files anywhere.
3. Sizes: bounded per kind of file, in total and in number of files.
4. Contents parsed with limits: JSON bytes bounded before parsing, then nesting depth and item count walked with
   an explicit stack, repeated keys, NaN/Infinity and overflowing numbers refused; the card has known fields only;
   a result passes `Result.from_dict` and matches its file name; JSONL line length, line count and one flat
   `{"study_id", "prediction"}` object per line; parquet read by pyarrow only, plain string/number columns, no
   extension types or unknown metadata, bounded rows and uncompressed size.
5. Nothing from a pull request is ever executed or deserialised into objects: JSON and Arrow only.
6. Text that reaches the board goes through `sanitize_text`, then `to_markdown` or `to_html`; links only through
   `safe_url`.
"""

from __future__ import annotations

import errno
import hashlib
import html
import ipaddress
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rexrank.errors import InputError
from rexrank.reports import TASKS
from rexrank.results import MetricResult, Result
from rexrank.scorers import JUDGED, METRICS, metric_class
from rexrank.submission import CARD, DATASETS, ID, PRIVATE_DATASETS, RADRSCORE_PARTS, SUBMISSIONS

# -- the layout -------------------------------------------------------------------------------------------------

MAINTAINER_FILES = ("README.md", "leaderboard.parquet", "radrbench.parquet")
SUBMISSION_ID = ID
_FOLDERS = {"results": "json", "per_study": "parquet", "predictions": "jsonl"}
_LAYOUT_FILE = re.compile(r"(results|per_study|predictions)/([a-z0-9-]+)\.([a-z_]+)\.(json|parquet|jsonl)")
# RadRBench-CXR accuracy, as `rexrank score-radrbench` writes it (one file: the answers are scored by rule, so the
# numbers need no per-item table to be reviewed; the model's outputs stay with its authors).
RADRBENCH_FILE = "radrbench/radrbench-cxr.accuracy.json"
LAYOUT_HELP = ("submission.json, results|per_study|predictions/<dataset>.<task>.json|parquet|jsonl, "
               f"{RADRBENCH_FILE}")

# -- the bounds -------------------------------------------------------------------------------------------------

KiB, MiB = 1024, 1024 * 1024
MAX_BYTES = {"card": 16 * KiB, "results": 1 * MiB, "per_study": 64 * MiB, "predictions": 64 * MiB,
             "radrbench": 1 * MiB, "private_result": 1 * MiB}
PRIVATE_RESULT = ("{dataset} is private: its result is written by the maintainers' scoring job, a submission carries "
                  "its predictions only")
MAX_FILES = 32  # touched paths in one pull request; the layout has at most 1 + 4 datasets x 2 tasks x 3 + 1 = 26
MAX_TOTAL_BYTES = 256 * MiB
MAX_WALK = 1000  # entries looked at in a local folder before giving up
MAX_PATH_CHARS = 256
MAX_LISTED = 100  # problems listed in the refusal's message

CARD_TEXT = {"name": 100, "institution": 200, "url": 500, "paper": 500, "date": 10, "contact": 200, "rexrank": 32}
CARD_LIST = {"trained_on": (32, 100)}  # field -> (items, characters per item)
CARD_FIELDS = tuple(CARD_TEXT) + tuple(CARD_LIST)


@dataclass(frozen=True)
class JsonLimits:
    max_bytes: int
    max_depth: int  # containers nested in one another, the top one counting 1
    max_items: int  # object members plus array elements, all levels together


CARD_JSON = JsonLimits(MAX_BYTES["card"], max_depth=2, max_items=256)
RESULT_JSON = JsonLimits(MAX_BYTES["results"], max_depth=32, max_items=50_000)
LINE_JSON = JsonLimits(64 * KiB, max_depth=1, max_items=8)  # one predictions line
MAX_LINES = 100_000  # predictions lines (ReXGradient's test set has about 10,000 studies)
RADRBENCH_JSON = JsonLimits(MAX_BYTES["radrbench"], max_depth=5, max_items=20_000)
MAX_RADRBENCH_ROWS = 200  # (source, task) rows: RadRBench-CXR has about a dozen
PANDAS_JSON = JsonLimits(256 * KiB, max_depth=4, max_items=20_000)
MAX_ROWS = 100_000
MAX_COLUMNS = 256
MAX_UNCOMPRESSED = 256 * MiB
MAX_STUDY_ID = 128
MAX_PROBLEMS_PER_FILE = 10


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
class Card:
    """The model card stub, each text sanitised (plain text, not yet escaped for markdown or HTML)."""

    name: str
    institution: str = ""
    url: str = ""  # "" or a URL `safe_url` accepted
    paper: str = ""  # text; `paper_url` when it is a link
    date: str = ""
    trained_on: tuple[str, ...] = ()
    contact: str = ""
    rexrank: str = ""

    @property
    def paper_url(self) -> str | None:
        return safe_url(self.paper)


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


class _Refused(Exception):
    """One problem with one file's contents (internal: becomes a line of SubmissionRejected)."""


# -- text for the board -----------------------------------------------------------------------------------------

_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # Hangul fillers and the braille blank
_MAX_MARKS = 2  # combining marks kept on one character (no "zalgo" text spilling over the table)


def sanitize_text(s: object, max_len: int = 200) -> str:
    """Plain one-line text: NFC, control/format/private/unassigned characters (zero-width, bidirectional
    overrides, NUL...) removed, every run of whitespace one space, at most `max_len` characters (an ellipsis
    marks a cut). Not escaped: use `to_markdown` or `to_html` for a target."""
    if s is None:
        return ""
    text = s if isinstance(s, str) else str(s)
    text = unicodedata.normalize("NFC", text[: max(4 * max_len, 1024)])
    kept: list[str] = []
    marks = 0
    for ch in text:
        category = unicodedata.category(ch)
        if ch.isspace() or category in ("Zs", "Zl", "Zp"):
            kept.append(" ")
            marks = 0
        elif category[0] == "C" or ch in _INVISIBLE_LETTERS:
            continue
        elif category in ("Mn", "Me"):
            marks += 1
            if marks <= _MAX_MARKS:
                kept.append(ch)
        else:
            marks = 0
            kept.append(ch)
    text = " ".join("".join(kept).split())
    if len(text) > max_len:
        text = text[: max(max_len - 1, 0)].rstrip() + "\u2026" if max_len > 0 else ""
    return text


_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_MARKDOWN_ESCAPED = {c: "\\" + c for c in "\\`*_{}[]()#+-.!|~:=^$%@,;/?"} | _ENTITIES


def to_markdown(s: object, max_len: int = 200) -> str:
    """`sanitize_text`, then every markdown-active ASCII punctuation backslash-escaped and & < > " ' as HTML
    entities: safe inside a paragraph or a table cell (`|` escaped), never a link, emphasis, heading or tag."""
    return "".join(_MARKDOWN_ESCAPED.get(c, c) for c in sanitize_text(s, max_len))


def to_html(s: object, max_len: int = 200) -> str:
    """`sanitize_text`, then HTML-escaped (& < > " '): safe as element text or a quoted attribute value."""
    return html.escape(sanitize_text(s, max_len), quote=True)


MAX_URL = 2048
_URL_REFUSED = re.compile(r"[\s\"'<>`\\{}|^]")
_HOST_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9-]{1,63})*\.?$", re.IGNORECASE)
_MARKDOWN_URL = str.maketrans({"(": "%28", ")": "%29", "[": "%5B", "]": "%5D"})


def safe_url(url: object) -> str | None:
    """`url` if it is an absolute http(s) URL with a host and no credentials, in printable ASCII without
    whitespace, quotes, angle brackets, backslashes or braces; else None. Brackets and parentheses after the
    host come back percent-encoded, so the URL cannot end a markdown link `[text](url)` early. Put it in HTML
    through `html.escape`."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or not url.isascii() or not url.isprintable():
        return None
    if _URL_REFUSED.search(url) or not url.lower().startswith(("https://", "http://")):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number in range
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc or not host:
        return None
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    elif not _HOST_NAME.match(host):
        return None
    head = f"{parts.scheme}://{parts.netloc}"
    return head + url[len(head):].translate(_MARKDOWN_URL)


def _show(text: object, limit: int = 120) -> str:
    """A path or snippet fit for a message: non-printable characters escaped, at most `limit` characters."""
    text = text if isinstance(text, str) else repr(text)
    shown = "".join(ch if ch.isprintable() and unicodedata.category(ch) != "Cf" else ascii(ch)[1:-1] for ch in
                    text[: limit * 2])
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"


# -- rule 2: one path -------------------------------------------------------------------------------------------

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


# -- rule 4: contents -------------------------------------------------------------------------------------------

def _no_repeats(pairs: list[tuple[str, Any]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"key {_show(key, 40)!r} appears more than once")
        seen[key] = value
    return seen


def _constant(name: str) -> float:
    raise _Refused(f"{name} is not a JSON number (no NaN or Infinity)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {_show(text, 40)} overflows")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 32:
        raise _Refused(f"integer of {len(text)} digits")
    return int(text)


def parse_json(data: bytes, limits: JsonLimits) -> Any:
    """JSON from untrusted bytes: size checked before parsing, strict UTF-8, repeated keys, NaN, Infinity and
    overflowing numbers refused, then depth and item count walked with an explicit stack. Raises InputError."""
    if len(data) > limits.max_bytes:
        raise InputError(f"{len(data)} bytes of JSON, more than the {limits.max_bytes} allowed")
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_constant, parse_float=_float,
                           parse_int=_int)
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({_show(err.msg, 60)}: line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise InputError(f"JSON nested deeper than {limits.max_depth} levels") from None
    except _Refused as err:
        raise InputError(str(err)) from None
    except ValueError as err:  # an integer past Python's digit limit, and the like
        raise InputError(f"not valid JSON ({_show(str(err), 60)})") from None
    _check_shape(value, limits)
    return value


def _check_shape(value: Any, limits: JsonLimits) -> None:
    items = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limits.max_depth:
                raise InputError(f"JSON nested deeper than {limits.max_depth} levels")
            items += len(node)
            if items > limits.max_items:
                raise InputError(f"more than {limits.max_items} JSON members and elements")
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))


def _text_field(card: dict, key: str, problems: list[str]) -> str:
    value = card.get(key, "")
    if not isinstance(value, str):
        problems.append(f"{key}: expected text, got {type(value).__name__}")
        return ""
    if len(value) > CARD_TEXT[key]:
        problems.append(f"{key}: {len(value)} characters, more than {CARD_TEXT[key]}")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        problems.append(f"{key}: control or invisible formatting characters (zero-width, right-to-left "
                        "override, newline...)")
    return sanitize_text(value, CARD_TEXT[key])


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        Date.fromisoformat(text)
    except ValueError:
        return False
    return True


def check_card(data: bytes) -> Card:
    """submission.json: a JSON object of the card's fields only, each text bounded and clean, the URL safe."""
    card = parse_json(data, CARD_JSON)
    if not isinstance(card, dict):
        raise InputError(f"expected a JSON object, got {type(card).__name__}")
    problems = [f"unknown field {_show(k, 40)!r} (fields: {', '.join(CARD_FIELDS)})" for k in card
                if k not in CARD_FIELDS]
    texts = {key: _text_field(card, key, problems) for key in CARD_TEXT}
    if "name" not in card:
        problems.append("name: missing")
    elif not texts["name"]:
        problems.append("name: empty")
    if card.get("url") and safe_url(card["url"]) is None:
        problems.append("url: not an http(s) URL with a host (no credentials, spaces, quotes or brackets)")
    if texts["date"] and not _is_date(texts["date"]):
        problems.append(f"date: {_show(texts['date'], 20)!r} is not YYYY-MM-DD")
    lists = {}
    for key, (max_items, max_chars) in CARD_LIST.items():
        items = card.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.append(f"{key}: expected a list of text")
            items = []
        if len(items) > max_items:
            problems.append(f"{key}: {len(items)} entries, more than {max_items}")
        if any(len(i) > max_chars for i in items):
            problems.append(f"{key}: an entry longer than {max_chars} characters")
        lists[key] = tuple(t for t in (sanitize_text(i, max_chars) for i in items[:max_items]) if t)
    if problems:
        raise InputError("; ".join(problems))
    return Card(**{**texts, "url": safe_url(texts["url"]) or ""}, **lists)


def check_result(data: bytes, dataset: str, task: str) -> Result:
    """A result JSON: parsed with limits, `Result.from_dict` (strict), for the dataset and task its name says,
    its model text bounded and its model URL safe."""
    value = parse_json(data, RESULT_JSON)
    try:
        result = Result.from_dict(value, source="result")
    except InputError as err:
        raise InputError(_show(str(err).removeprefix("result: "), 160)) from None
    except Exception as err:  # noqa: BLE001 -- hostile input must give a message, never a crash of the checker
        raise InputError(f"malformed result ({type(err).__name__})") from None
    problems = []
    if result.provenance != "scored":  # an imported row carries no CI and no signature: maintainers import them
        problems.append(f"provenance {_show(result.provenance, 20)!r}: a submission carries scored results only")
    if result.dataset != dataset or result.task != task:
        problems.append(f"holds {_show(result.dataset, 40)}.{_show(result.task, 40)}, but the file name says "
                        f"{dataset}.{task}")
    model = result.model
    for key, value, limit in (("name", model.name, 100), ("institution", model.institution, 200),
                              ("url", model.url, 500)):
        if not isinstance(value, str):
            problems.append(f"model.{key}: expected text, got {type(value).__name__}")
        elif len(value) > limit:
            problems.append(f"model.{key}: {len(value)} characters, more than {limit}")
    if isinstance(model.url, str) and model.url and safe_url(model.url) is None:
        problems.append("model.url: not an http(s) URL with a host (no credentials, spaces, quotes or brackets)")
    problems += [f"counts.{_show(k, 40)}: {v} is negative" for k, v in result.counts.items() if v < 0]
    if not result.metrics:
        problems.append("metrics: none")
    for name, metric in result.metrics.items():
        problems += metric_problems(name, metric, result.counts.get("scored"))
    if problems:
        raise InputError("; ".join(problems[:MAX_PROBLEMS_PER_FILE]))
    return result


# Slack on a metric's bounds: a cosine of float32 vectors may pass 1 by a few float32 ulps (about 1e-7 each).
BOUND_SLACK = 1e-6
# Slack between a stated mean and its recomputation from the per-study column, or between value and mean: float64
# sums of at most MAX_ROWS values of magnitude under 13 (BERTScore's floor is about -12.1) differ by at most
# MAX_ROWS x 2^-53 x 13, about 1.4e-10, whatever order they are added in.
MEAN_SLACK = 1e-9


def metric_problems(name: str, metric: MetricResult, scored: int | None) -> list[str]:
    """One metric of a submitted result against what rexrank would have written: a known name, this rexrank's
    version of it and of its components, its statistic, n, the value from its mean, the value inside its CI, and
    mean and CI inside the metric's range."""
    where = f"metrics.{_show(name, 40)}"
    if name not in METRICS:
        return [f"{where}: unknown metric (known: {', '.join(METRICS)})"]
    kind, sig = metric_class(name), metric.signature
    problems = []
    if sig is None or sig.metric != name:
        problems.append(f"{where}: its signature is not {name}'s")
    else:
        for part in (sig, *sig.components):
            current = metric_class(part.metric).version if part.metric in METRICS else None
            if part.version != current:
                problems.append(f"{where}: made by {_show(part.metric, 40)} version {_show(part.version, 20)}, this "
                                f"rexrank's is {current or 'none'}: re-score")
    if metric.statistic != kind.statistic:
        problems.append(f"{where}: statistic {metric.statistic}, {name}'s is {kind.statistic}")
    if metric.n is None or metric.n < 1 or (scored is not None and metric.n > scored):
        problems.append(f"{where}: n {metric.n} is not from 1 to the {scored} studies scored")
    low, high = kind.bounds
    mean, value = metric.mean, metric.value
    if mean is not None and not low - BOUND_SLACK <= mean <= high + BOUND_SLACK:
        problems.append(f"{where}: mean {mean} is outside [{low}, {high}], the range of {name}")
    if kind.statistic == "mean":
        if value is None or mean is None or abs(value - mean) > MEAN_SLACK:
            problems.append(f"{where}: value {value} is not its mean {mean}")
        elif metric.low is not None and metric.high is not None and not (
                low - BOUND_SLACK <= metric.low and metric.high <= high + BOUND_SLACK):
            problems.append(f"{where}: CI [{metric.low}, {metric.high}] is outside [{low}, {high}], the range of "
                            f"{name}")
    elif not metric.non_positive_mean:
        if mean is None or mean <= 0 or value is None or abs(value - 1 / mean) > MEAN_SLACK * max(1.0, abs(value)):
            problems.append(f"{where}: value {value} is not 1 / its mean {mean} (a mean <= 0 must be flagged)")
    if not metric.non_positive_mean and value is not None and None not in (metric.low, metric.high) and not (
            metric.low - MEAN_SLACK <= value <= metric.high + MEAN_SLACK):
        problems.append(f"{where}: value {value} is outside its own CI [{metric.low}, {metric.high}]")
    return problems


def per_study_problems(result: Result, table, predicted: tuple[str, ...]) -> list[str]:
    """A per-study table against its result: exactly the columns rexrank writes (study_id, one float64 column per
    metric, the judged metrics' detail columns), its studies the predicted ones, and each metric's n and mean those
    of its column (a judged metric's NaN is a study it could not score)."""
    import numpy as np
    import pyarrow as pa

    expected = {"study_id": "text", **{m: "score" for m in result.metrics},
                **{c: k for m in result.metrics if m in JUDGED for c, k in JUDGED[m].details.items()}}
    names = set(table.column_names)
    problems = [f"unexpected column {_show(c, 40)!r}" for c in sorted(names - set(expected))]
    problems += [f"missing column {c!r}" for c in sorted(set(expected) - names)]
    for column, kind in expected.items():
        if column not in names:
            continue
        found = table.schema.field(column).type
        fits = {"score": pa.types.is_float64(found),
                "number": pa.types.is_integer(found) or pa.types.is_floating(found) or pa.types.is_null(found),
                "text": pa.types.is_string(found) or pa.types.is_large_string(found) or pa.types.is_null(found)}[kind]
        if not fits:
            problems.append(f"column {column!r} is {_show(str(found), 30)}, expected "
                            f"{ {'score': 'double', 'number': 'a number', 'text': 'text'}[kind]}")
    if problems:
        return problems
    ids = table.column("study_id").to_pylist()
    if sorted(ids) != sorted(predicted):
        problems.append(f"its {len(ids)} studies are not the {len(predicted)} predicted ones")
    if len(ids) != result.counts.get("scored", len(ids)):
        problems.append(f"{len(ids)} rows, but the result scored {result.counts.get('scored')} studies")
    for name, metric in result.metrics.items():
        values = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        scored = values[~np.isnan(values)] if name in JUDGED else values
        low, high = metric_class(name).bounds
        if len(scored) != metric.n:
            problems.append(f"{name}: {len(scored)} scored studies in the table, n is {metric.n}")
        elif np.isnan(scored).any() or not len(scored):
            problems.append(f"{name}: studies without a score")
        elif abs(float(scored.mean()) - (metric.mean or 0.0)) > MEAN_SLACK:
            problems.append(f"{name}: the table's mean {float(scored.mean())!r} is not the result's {metric.mean!r}")
        elif scored.min() < low - BOUND_SLACK or scored.max() > high + BOUND_SLACK:
            problems.append(f"{name}: per-study scores outside [{low}, {high}], the range of {name}")
    return problems


_RADRBENCH_KEYS = {"dataset", "model", "signature", "missing_outputs", "rows", "radrscore", "ratescore"}
_OPTIONAL_BLOCKS = {"radrscore", "ratescore"}  # absent in files of earlier rexranks, null when not computed
_RADRBENCH_ROW = ("source", "task", "items", "correct", "accuracy", "low", "high", "failures")
_RADRBENCH_TASKS = ("binary", "single", "multi", "multi_no_option", "temporal")
_RADRBENCH_SOURCE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_FAILURE_NAME = re.compile(r"[a-z_]{1,40}")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fraction(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def _radrbench_row(number: int, row: object) -> list[str]:
    where = f"rows[{number}]"
    if not isinstance(row, dict):
        return [f"{where}: expected an object, got {type(row).__name__}"]
    if set(row) != set(_RADRBENCH_ROW):
        extra, missing = sorted(set(row) - set(_RADRBENCH_ROW)), sorted(set(_RADRBENCH_ROW) - set(row))
        said = (f"unknown field(s) {_show(', '.join(extra), 80)}" if extra else "",
                f"missing {', '.join(missing)}" if missing else "")
        return [f"{where}: " + "; ".join(p for p in said if p)]
    problems = []
    source, task = row["source"], row["task"]
    if not isinstance(source, str) or not _RADRBENCH_SOURCE.fullmatch(source):
        problems.append(f"{where}: source {_show(source, 40)!r} is not a lower-case name")
    if task not in (*_RADRBENCH_TASKS, "all") or (task == "all" and source != "all"):
        problems.append(f"{where}: task {_show(task, 40)!r} is not one of {', '.join(_RADRBENCH_TASKS)} (or all "
                        "with source all)")
    if not _count(row["items"]) or row["items"] == 0:
        problems.append(f"{where}: items is not a positive whole number")
    elif not _count(row["correct"]) or row["correct"] > row["items"]:
        problems.append(f"{where}: correct is not a whole number from 0 to items")
    elif not all(_fraction(row[k]) for k in ("accuracy", "low", "high")):
        problems.append(f"{where}: accuracy, low and high must be numbers from 0 to 1")
    elif not row["low"] - 1e-9 <= row["accuracy"] <= row["high"] + 1e-9:
        problems.append(f"{where}: accuracy {row['accuracy']} is outside its CI [{row['low']}, {row['high']}]")
    elif abs(row["accuracy"] - row["correct"] / row["items"]) > 1e-9:
        problems.append(f"{where}: accuracy {row['accuracy']} is not correct / items")
    failures = row["failures"]
    try:
        counts = parse_json(failures.encode("utf-8"), JsonLimits(4 * KiB, 1, 16)) if isinstance(failures, str) \
            else None
    except (InputError, UnicodeEncodeError):
        counts = None
    if not isinstance(counts, dict) or not all(isinstance(k, str) and _FAILURE_NAME.fullmatch(k) and _count(v)
                                               for k, v in counts.items()):
        problems.append(f"{where}: failures is not a JSON object of answer failure -> count")
    return problems


_RADRSCORE_KEYS = {"signature", "unparseable", "failed", "rows"}
_RADRSCORE_ROW = {"source", "task", "items", *(f"{p}{e}" for p in RADRSCORE_PARTS for e in ("", "_low", "_high", "_n"))}


def _radrscore_row(number: int, row: object) -> list[str]:
    where = f"radrscore.rows[{number}]"
    if not isinstance(row, dict) or set(row) != _RADRSCORE_ROW:
        fields = sorted(set(row) ^ _RADRSCORE_ROW) if isinstance(row, dict) else []
        return [f"{where}: expected an object with the fields `rexrank score-radrbench` writes"
                + (f" (differs in {_show(', '.join(fields), 120)})" if fields else "")]
    problems = []
    if not isinstance(row["source"], str) or not (row["source"] == "all" or _RADRBENCH_SOURCE.fullmatch(row["source"])):
        problems.append(f"{where}: source {_show(row['source'], 40)!r} is not a lower-case name")
    if row["task"] not in (*_RADRBENCH_TASKS, "all"):
        problems.append(f"{where}: task {_show(row['task'], 40)!r} is not a RadRBench-CXR task")
    if not _count(row["items"]) or row["items"] == 0:
        return [*problems, f"{where}: items is not a positive whole number"]
    for part in RADRSCORE_PARTS:
        value, low, high, n = (row[f"{part}{e}"] for e in ("", "_low", "_high", "_n"))
        if not _count(n) or n > row["items"]:
            problems.append(f"{where}: {part}_n is not a whole number from 0 to items")
        elif n == 0 and (value, low, high) != (None, None, None):
            problems.append(f"{where}: {part} has a value over no scored item")
        elif n and not all(_fraction(x) for x in (value, low, high)):
            problems.append(f"{where}: {part}, {part}_low and {part}_high must be numbers from 0 to 1")
        elif n and not low - 1e-9 <= value <= high + 1e-9:
            problems.append(f"{where}: {part} {value} is outside its CI [{low}, {high}]")
    return problems


def _radrscore_problems(block: object) -> list[str]:
    """The `radrscore` part of the RadRBench-CXR file (RadRScore per source and task, where a judge scored it)."""
    if not isinstance(block, dict):
        return ["radrscore: expected null or an object"]
    if set(block) != _RADRSCORE_KEYS:
        return [f"radrscore: expected the fields {', '.join(sorted(_RADRSCORE_KEYS))}"]
    problems = []
    if not isinstance(block["signature"], str) or not block["signature"].startswith("radrscore:") \
            or len(block["signature"]) > 300:
        problems.append("radrscore.signature: expected a radrscore signature")
    if not (_count(block["unparseable"]) and _count(block["failed"])):
        problems.append("radrscore: unparseable and failed must be whole numbers")
    rows = block["rows"]
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_RADRBENCH_ROWS:
        return [*problems, f"radrscore.rows: expected a list of 1 to {MAX_RADRBENCH_ROWS} rows"]
    for number, row in enumerate(rows):
        problems += _radrscore_row(number, row)
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            return problems
    keys = [(r["source"], r["task"]) for r in rows] if not problems else []
    if keys and (len(set(keys)) != len(keys) or keys.count(("all", "all")) != 1):
        problems.append("radrscore.rows: each (source, task) once, and one row with source and task all")
    return problems


_RATESCORE_ROW = {"source", "task", "items", "ratescore", "low", "high"}


def _ratescore_problems(block: object, rows: list) -> list[str]:
    """The `ratescore` part of the RadRBench-CXR file: RaTEScore of the free-text task per source and over all."""
    if not isinstance(block, dict) or set(block) != {"signature", "rows"}:
        return ["ratescore: expected null or an object with signature and rows"]
    problems = []
    current = f"ratescore:{metric_class('ratescore').version}|"
    if not isinstance(block["signature"], str) or not block["signature"].startswith(current) \
            or len(block["signature"]) > 300:
        problems.append(f"ratescore.signature: expected a signature of this rexrank's RaTEScore ({current}...)")
    found = block["rows"]
    if not isinstance(found, list) or not 1 <= len(found) <= MAX_RADRBENCH_ROWS:
        return [*problems, f"ratescore.rows: expected a list of 1 to {MAX_RADRBENCH_ROWS} rows"]
    items = {(r["source"], r["task"]): r["items"] for r in rows}
    for number, row in enumerate(found):
        where = f"ratescore.rows[{number}]"
        if not isinstance(row, dict) or set(row) != _RATESCORE_ROW:
            problems.append(f"{where}: expected the fields {', '.join(sorted(_RATESCORE_ROW))}")
            continue
        numbers = [row[k] for k in ("ratescore", "low", "high")]
        if row["task"] != "multi_no_option":
            problems.append(f"{where}: task {_show(row['task'], 40)!r}: RaTEScore is for the free-text task only")
        elif items and items.get((row["source"], row["task"])) != row["items"]:
            problems.append(f"{where}: {_show(row['source'], 40)} has no accuracy row of {row['items']!r} items")
        elif not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in numbers):
            problems.append(f"{where}: ratescore, low and high must be numbers")
        elif not row["low"] - MEAN_SLACK <= row["ratescore"] <= row["high"] + MEAN_SLACK:
            problems.append(f"{where}: ratescore {row['ratescore']} is outside its CI [{row['low']}, {row['high']}]")
    return problems


def check_radrbench(data: bytes) -> dict:
    """`radrbench/radrbench-cxr.accuracy.json` (what `rexrank score-radrbench` writes): parsed with limits, known
    fields only, each row's numbers consistent, one `all` row; its model text bounded. Returns the parsed object."""
    value = parse_json(data, RADRBENCH_JSON)
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}")
    extra = sorted(set(value) - _RADRBENCH_KEYS)
    missing = sorted(_RADRBENCH_KEYS - set(value) - _OPTIONAL_BLOCKS)
    if extra or missing:
        raise InputError("; ".join(p for p in (f"unknown field(s) {_show(', '.join(extra), 80)}" if extra else "",
                                               f"missing {', '.join(missing)}" if missing else "") if p))
    problems = []
    if value["dataset"] != "radrbench-cxr":
        problems.append(f"dataset {_show(value['dataset'], 40)!r}, expected radrbench-cxr")
    model = value["model"]
    if not isinstance(model, str) or not model.strip() or len(model) > 100:
        problems.append("model: expected text of 1 to 100 characters")
    sig = value["signature"]
    if not isinstance(sig, str) or not sig.startswith("radrbench-accuracy:") or len(sig) > 300:
        problems.append("signature: expected a radrbench-accuracy signature")
    if not _count(value["missing_outputs"]):
        problems.append("missing_outputs: expected a whole number")
    rows = value["rows"]
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_RADRBENCH_ROWS:
        problems.append(f"rows: expected a list of 1 to {MAX_RADRBENCH_ROWS} rows")
        rows = []
    for number, row in enumerate(rows):
        problems += _radrbench_row(number, row)
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            break
    if not problems:
        keys = [(r["source"], r["task"]) for r in rows]
        if len(set(keys)) != len(keys):
            problems.append("rows: a (source, task) appears more than once")
        if keys.count(("all", "all")) != 1:
            problems.append("rows: expected one row with source and task all")
        elif sum(r["items"] for r in rows if r["source"] != "all") != rows[keys.index(("all", "all"))]["items"]:
            problems.append("rows: the all row's items is not the sum of the per-source rows")
    if value.get("radrscore") is not None:
        problems += _radrscore_problems(value["radrscore"])
    if value.get("ratescore") is not None:
        problems += _ratescore_problems(value["ratescore"], rows if not problems else [])
    if problems:
        raise InputError("; ".join(problems[:MAX_PROBLEMS_PER_FILE]))
    return value


def _study_id(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Refused(f"study_id must be text or an integer, got {type(value).__name__}")
    text = str(value)
    if not text.strip() or len(text) > MAX_STUDY_ID:
        raise _Refused(f"study_id must be 1 to {MAX_STUDY_ID} characters")
    if not text.isprintable():
        raise _Refused(f"study_id {_show(text, 40)!r} has control or invisible characters")
    return text


def check_predictions(lines: Iterable[bytes]) -> tuple[str, ...]:
    """Predictions JSONL: each non-blank line one flat JSON object {"study_id", "prediction"} (text), within
    the line length; at most MAX_LINES lines; every study once. Returns the study ids in file order."""
    ids: dict[str, int] = {}
    problems: list[str] = []
    number = 0
    for number, line in enumerate(lines, 1):
        if number > MAX_LINES:
            problems.append(f"more than {MAX_LINES} lines")
            break
        if len(line) > LINE_JSON.max_bytes:
            problems.append(f"line {number}: longer than {LINE_JSON.max_bytes} bytes")
        elif line.strip():
            try:
                ids_line = _prediction_line(line)
            except (InputError, _Refused) as err:
                problems.append(f"line {number}: {err}")
            else:
                if ids_line in ids:
                    problems.append(f"line {number}: study {_show(ids_line, 40)} already on line {ids[ids_line]}")
                else:
                    ids[ids_line] = number
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            problems[-1] = "... and more (stopped looking)"
            break
    if not problems and not ids:
        problems.append("no predictions")
    if problems:
        raise InputError("; ".join(problems))
    return tuple(ids)


def _prediction_line(line: bytes) -> str:
    record = parse_json(line, LINE_JSON)
    if not isinstance(record, dict):
        raise _Refused(f"expected a JSON object, got {type(record).__name__}")
    unknown = [k for k in record if k not in ("study_id", "prediction")]
    if unknown:
        raise _Refused(f"unknown field {_show(unknown[0], 40)!r} (fields: study_id, prediction)")
    if "study_id" not in record or "prediction" not in record:
        raise _Refused("needs study_id and prediction")
    if not isinstance(record["prediction"], str):
        raise _Refused(f"prediction must be text, got {type(record['prediction']).__name__}")
    return _study_id(record["study_id"])


_PANDAS_KEYS = {"index_columns", "column_indexes", "columns", "creator", "pandas_version", "attributes"}
_PANDAS_TYPES = {"unicode", "string", "object", "empty", "bytes"} | {f"int{b}" for b in (8, 16, 32, 64)} | {
    f"uint{b}" for b in (8, 16, 32, 64)} | {f"float{b}" for b in (16, 32, 64)}
_NUMPY_TYPES = {"object", "str", "string", "float16", "float32", "float64", "Float32", "Float64"} | {
    f"{kind}{b}" for kind in ("int", "uint", "Int", "UInt") for b in (8, 16, 32, 64)}
_FILE_METADATA = {b"pandas", b"ARROW:schema"}
_FIELD_METADATA = {b"PARQUET:field_id"}


def _check_pandas_metadata(raw: bytes) -> None:
    """pandas' JSON note on how to rebuild the frame: known keys, plain column types, no per-column extras."""
    meta = parse_json(raw, PANDAS_JSON)
    if not isinstance(meta, dict) or set(meta) - _PANDAS_KEYS:
        raise _Refused("pandas metadata with unexpected entries")
    if meta.get("attributes") not in (None, {}):
        raise _Refused("pandas metadata carries frame attributes")
    for column in (meta.get("columns") or []) + (meta.get("column_indexes") or []):
        if not isinstance(column, dict):
            raise _Refused("pandas metadata: a column entry is not an object")
        if column.get("pandas_type") not in _PANDAS_TYPES or column.get("numpy_type") not in _NUMPY_TYPES:
            raise _Refused(f"pandas metadata: column type {_show(column.get('pandas_type'), 30)}/"
                           f"{_show(column.get('numpy_type'), 30)} is not text or a number")
        if column.get("metadata") not in (None, {"encoding": "UTF-8"}):
            raise _Refused("pandas metadata: a column carries extra metadata")
    for index in meta.get("index_columns") or []:
        if not (isinstance(index, str) or (isinstance(index, dict) and index.get("kind") == "range")):
            raise _Refused("pandas metadata: an index that is neither a column nor a range")


def check_per_study(data: bytes) -> tuple[str, ...]:
    """A per-study table: parquet read by pyarrow from memory, flat string/number columns only (no extension
    types, no dictionary, nested or binary columns), metadata limited to pandas' plain column notes, bounded rows,
    columns and uncompressed size; a `study_id` text column, no nulls or repeats. Returns the study ids."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(pa.BufferReader(data), arrow_extensions_enabled=False)
        meta, schema = parquet.metadata, parquet.schema_arrow
    except Exception as err:  # noqa: BLE001 -- a hostile file must give a message, whatever pyarrow raises
        raise InputError(f"not a readable parquet file ({type(err).__name__})") from None
    try:
        if meta.num_rows > MAX_ROWS:
            raise _Refused(f"{meta.num_rows} rows, more than {MAX_ROWS}")
        if len(schema) > MAX_COLUMNS:
            raise _Refused(f"{len(schema)} columns, more than {MAX_COLUMNS}")
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if size > MAX_UNCOMPRESSED:
            raise _Refused(f"{size} bytes uncompressed, more than {MAX_UNCOMPRESSED}")
        extra = set(meta.metadata or {}) - _FILE_METADATA
        if extra:
            raise _Refused(f"unexpected file metadata {_show(sorted(extra)[0].decode('utf-8', 'replace'), 40)!r}")
        if b"pandas" in (meta.metadata or {}):
            _check_pandas_metadata(meta.metadata[b"pandas"])
        names = set()
        for column in schema:
            name = column.name
            if not name or len(name) > 128 or not name.isprintable() or name in names:
                raise _Refused(f"column name {_show(name, 40)!r} is empty, too long, repeated or not printable")
            names.add(name)
            kind = column.type
            plain = (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)
                     or pa.types.is_floating(kind) or pa.types.is_null(kind))
            if isinstance(kind, pa.ExtensionType) or not plain:
                raise _Refused(f"column {_show(name, 40)!r} is {_show(str(kind), 40)}, not text or a number")
            if set(column.metadata or {}) - _FIELD_METADATA:
                raise _Refused(f"column {_show(name, 40)!r} carries metadata (extension types are refused)")
        if "study_id" not in names:
            raise _Refused("no study_id column")
        if not (pa.types.is_string(schema.field("study_id").type)
                or pa.types.is_large_string(schema.field("study_id").type)):
            raise _Refused("study_id is not a text column")
    except _Refused as err:
        raise InputError(str(err)) from None
    try:
        table = parquet.read()  # every column decodes (a corrupt page is refused here, not later on the board)
        ids = table.column("study_id").to_pylist()
    except Exception as err:  # noqa: BLE001
        raise InputError(f"not a readable parquet file ({type(err).__name__})") from None
    seen: set[str] = set()
    for row, study in enumerate(ids):
        if study is None:
            raise InputError(f"row {row}: study_id is null")
        try:
            _study_id(study)
        except _Refused as err:
            raise InputError(f"row {row}: {err}") from None
        if study in seen:
            raise InputError(f"row {row}: study {_show(study, 40)} listed twice")
        seen.add(study)
    return PerStudy(tuple(ids), table)


@dataclass(frozen=True)
class PerStudy:
    """A per-study table that passed `check_per_study`: its study ids in table order, and the table."""

    ids: tuple[str, ...]
    table: Any  # pyarrow.Table

    def __eq__(self, other: object) -> bool:  # compared by its studies, as the tuple of ids it replaces was
        return self.ids == (other.ids if isinstance(other, PerStudy) else other)

    def __hash__(self) -> int:
        return hash(self.ids)


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


def _lines(data: bytes) -> Iterable[bytes]:
    """The lines of `data`, each without its line ending (\\n or \\r\\n)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield data[start:end].removesuffix(b"\r")
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
    there and, with `root`, only with those bytes.
    Raises SubmissionRejected listing every problem found."""
    maintained = maintained or {}
    problems: list[str] = []
    if not isinstance(submission_id, str) or not SUBMISSION_ID.match(submission_id):
        raise SubmissionRejected(str(submission_id), [
            f"submission id {_show(submission_id, 70)!r} is not 1-64 lower-case letters, digits and inner hyphens"])
    if isinstance(folder_or_paths, str | os.PathLike):
        folder = Path(folder_or_paths)
        if folder.is_symlink() or not folder.is_dir():
            raise SubmissionRejected(submission_id, [f"{_show(str(folder))}: not a folder (or a symlink)"])
        if root is not None:
            raise InputError("root= goes with a list of touched paths; a folder is its own root")
        touched, root = _walk(folder, problems), folder
    else:
        touched = []
        for number, item in enumerate(folder_or_paths):
            if number >= MAX_FILES * 4:
                problems.append(f"more than {MAX_FILES * 4} touched paths listed (stopped looking)")
                break
            touched.append(_touched(item))
    root = Path(root) if root is not None else None

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
    if not touched and not problems:
        problems.append("the pull request changes nothing")
    problems += _ownership(submission_id, touched, entries, owner, author)

    parsed: dict[str, dict] = {"card": {}, "results": {}, "predictions": {}, "per_study": {}, "radrbench": {},
                               "private_result": {}}
    if root is not None:
        for item, entry in entries:
            if item.change == "deleted":
                continue
            try:
                parsed[entry.kind][entry.key] = _read_entry(root, item, entry, maintained.get(item.path))
            except InputError as err:
                problems.append(f"{_show(item.path)}: {_show(str(err), 600)}")
        for key, table in parsed["per_study"].items():
            where = f"per_study/{key[0]}.{key[1]}.parquet"
            if key not in parsed["results"] or key not in parsed["predictions"]:
                problems.append(f"{where}: without results/{key[0]}.{key[1]}.json and its predictions")
                continue
            found = per_study_problems(parsed["results"][key], table.table, parsed["predictions"][key])
            problems += [f"{where}: {p}" for p in found[:MAX_PROBLEMS_PER_FILE]]
        for key in parsed["results"]:
            if key not in parsed["per_study"] or key not in parsed["predictions"]:
                problems.append(f"results/{key[0]}.{key[1]}.json: without its per-study table and predictions "
                                "(a result is checked against both)")
    if problems:
        raise SubmissionRejected(submission_id, problems)
    return Checked(submission_id, tuple(t.path for t, _ in entries if t.change != "deleted"),
                   tuple(t.path for t, _ in entries if t.change == "deleted"), root is not None,
                   card=next(iter(parsed["card"].values()), None), results=parsed["results"],
                   predictions=parsed["predictions"], per_study=parsed["per_study"],
                   radrbench=next(iter(parsed["radrbench"].values()), None))


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
        if touched and not kinds & {"results", "predictions", "radrbench"}:
            problems.append(f"{folder}: no results/ or predictions/ file, nor {RADRBENCH_FILE} (nothing to put "
                            "on the board)")
    elif author is None or author != owner:
        problems.append(f"{folder} belongs to {_show(owner, 60)!r}; the pull request's author "
                        f"{_show(author, 60)!r} may not change it (an update comes from the same author)")
    for item, entry in entries:
        if item.change == "deleted" and entry.kind == "card":
            problems.append(f"{_show(item.path)}: the card can be replaced, not deleted")
    return problems


def _read_entry(root: Path, item: Touched, entry: _Entry, maintained: str | None
                ) -> Card | Result | dict | tuple[str, ...]:
    data = _read_file(root, item.path, MAX_BYTES[entry.kind])
    if len(data) != item.size:
        raise InputError(f"{len(data)} bytes, but the pull request lists {item.size}")
    if entry.kind == "private_result":
        if hashlib.sha256(data).hexdigest() != maintained:
            raise InputError(PRIVATE_RESULT.format(dataset=entry.dataset) + " (this file is not the one it wrote)")
        return Result.from_dict(parse_json(data, RESULT_JSON), source="result")
    if entry.kind == "card":
        return check_card(data)
    if entry.kind == "results":
        return check_result(data, entry.dataset, entry.task)
    if entry.kind == "radrbench":
        return check_radrbench(data)
    if entry.kind == "predictions":
        return check_predictions(_lines(data))
    return check_per_study(data)
