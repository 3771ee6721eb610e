"""JSON from untrusted bytes, parsed with limits: size before parsing, strict UTF-8, no repeated keys, NaN, Infinity
or overflowing numbers, then nesting depth and item count walked with an explicit stack."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rexrank.errors import InputError
from rexrank.rules.layout import MAX_BYTES, KiB, MiB
from rexrank.text import shown as _show


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
# A per-study table's cost, bounded before pyarrow decodes it (rules/parquet.py). rexrank writes study_id, each
# metric's columns (a score, or its sufficient statistics: BLEU-4's ten counts) and the judged metrics' detail
# columns: 42 today; 96 leaves room for metrics to come (tests/rules/test_file_cost.py holds it at twice or more).
MAX_COLUMNS = 96
# What a per-study table records of how it was made (its `rexrank` file metadata: dataset, split, task, each metric's
# signature point key): a key per field and a signature per metric column. rexrank's longest point key (RadCliQ-v1,
# its three model components inside) is under 1 KiB.
ABOUT_JSON = JsonLimits(64 * KiB, max_depth=2, max_items=8 + MAX_COLUMNS)
MAX_ABOUT_TEXT = 128  # a dataset, split or task name, a metric's name, a version
MAX_ABOUT_SIGNATURE = 4 * KiB
MAX_ROW_GROUPS = 64  # pyarrow writes one per million rows; MAX_ROWS in 64 groups is still 1,563 rows each
MAX_FOOTER = 1 * MiB  # the footer pyarrow parses first: a few KiB for rexrank's tables, plus pandas' note (256 KiB)
MAX_PAGES = 2048  # pyarrow cuts a page at 1 MiB or 20,000 rows: 26 columns of MAX_ROWS rows take about 180
MAX_PAGE_HEADER = 16 * KiB  # pyarrow's are under 9 KiB (it drops a page's statistics over 4 KiB)
MAX_UNCOMPRESSED = 128 * MiB  # the pages decompressed, as their own headers say (what the reader allocates)
# The table as Arrow holds it once decoded: a dictionary-encoded column decodes to its values gathered row by row,
# so a short file can decode huge. 128 MiB holds MAX_ROWS rows of 26 numbers (21 MB) and 1 KiB of text each, or
# 2,347 studies (MIMIC-CXR's test set, the largest public one) with 50 KiB each.
MAX_DECODED = 128 * MiB
MAX_TOTAL_DECODED = 256 * MiB  # a pull request's per-study tables together (they are held until checked)
# One text cell: FineRadScore's corrections, as JSON (at most 6 bytes a character), of a reply of 2,048 tokens by
# default, are under 48 KiB; a judge run with its server's own limit may write several times that.
MAX_CELL_TEXT = 256 * KiB
# A table is counted, then read, a batch of rows at a time: a batch's text is at most BATCH_BYTES a column (its
# rows times its dictionary's longest value), and at most MAX_BATCH_ROWS rows. 1 MiB: larger batches cost more than
# their size (the allocator keeps batches of 4 MiB after they are freed: 30 MB for 40 of them), smaller ones time
# (7 us a batch: a column of MAX_ROWS rows of the longest text, 4 a batch, takes 0.2 s).
BATCH_BYTES = 1 * MiB
MAX_BATCH_ROWS = 65_536
MAX_STUDY_ID = 128
MAX_PROBLEMS_PER_FILE = 10


class _Refused(Exception):
    """One problem with one file's contents (internal: becomes a line of SubmissionRejected)."""



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


