"""A submitted script's save file, read at a bounded cost whatever it holds.

The file is the script's: any size the output bound allows (1 GiB), any nesting. Parsed whole, 200 MB of small
numbers or deep lists take gigabytes, and a deep one ends in RecursionError. So it is read a study at a time: one
pass over the bytes in 1 MiB pieces, strings skipped whole by a regular expression, brackets and commas counted,
refusing past MAX_DEPTH levels, past `max_members` studies or a study's record past `record_bytes`; each top-level
member (`"study": {...}`) is parsed alone once it ends. What it costs: one record and a piece, never the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

PIECE = 1024 * 1024
MAX_DEPTH = 16  # {study: {field: [paths]}} is 3; room for a script's own bookkeeping, not for a bomb
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*'
# a whole string, a string the piece's end cut (read again with the next piece), or one structural byte
_TOKEN = re.compile(_STRING + rb'"|(?P<cut>' + _STRING + rb'\\?\Z)|[\[\]{},]', re.S)
_SPACE = b" \t\r\n"


class SaveFileRefused(ValueError):
    """The save file is not one object of study records within the bounds: the message says which rule."""


def members(path: Path, record_bytes: int, max_members: int) -> Iterator[tuple[str, object]]:
    """Each top-level member of the JSON object in `path`, as (key, value), in file order."""
    depth, count, record = 0, 0, bytearray()
    with open(path, "rb") as handle:
        data = b""
        while not data and (more := handle.read(PIECE)):
            data = more.lstrip(_SPACE)
        if not data.startswith(b"{"):
            raise SaveFileRefused("it is not a JSON object of studies")
        while data:
            mark, cut = 0, len(data)  # mark: where the record's unread bytes begin in `data`
            for match in _TOKEN.finditer(data):
                if match["cut"] is not None:
                    cut = match.start()
                    break
                token = match.group()
                if token in (b"{", b"["):
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise SaveFileRefused(f"it nests deeper than {MAX_DEPTH} levels")
                    if depth == 1:
                        mark = match.end()
                    continue
                if token in (b"}", b"]"):
                    depth -= 1
                if not (depth == 1 and token == b"," or depth == 0):
                    continue
                record += data[mark:match.start()]
                mark = match.end()
                if len(record) > record_bytes:
                    raise SaveFileRefused(f"a study's record is longer than {record_bytes:,} bytes")
                if record.strip(_SPACE):
                    count += 1
                    if count > max_members:
                        raise SaveFileRefused(f"it holds more than {max_members:,} studies")
                    yield _member(bytes(record))
                record = bytearray()
                if depth == 0:
                    _only_space(data[match.end():], handle, token)
                    return
            record += data[mark:cut]
            if len(record) + len(data) - cut > record_bytes:
                raise SaveFileRefused(f"a study's record is longer than {record_bytes:,} bytes")
            more = handle.read(PIECE)
            if not more:
                break
            data = data[cut:] + more
    raise SaveFileRefused("it ends before its closing bracket")


def _only_space(rest: bytes, handle, closing: bytes) -> None:
    if closing != b"}":
        raise SaveFileRefused("its object is closed by ']'")
    while rest:
        if rest.strip(_SPACE):
            raise SaveFileRefused("it holds more than one JSON value")
        rest = handle.read(PIECE)


def _member(text: bytes) -> tuple[str, object]:
    def unique(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) < len(keys):
            raise SaveFileRefused("a key appears twice in one record")
        return dict(pairs)

    try:
        [(key, value)] = json.loads(b"{" + text + b"}", object_pairs_hook=unique).items()
    except SaveFileRefused:
        raise
    except (ValueError, RecursionError) as err:
        raise SaveFileRefused(f"it is not JSON ({str(err)[:80]})") from None
    return key, value
