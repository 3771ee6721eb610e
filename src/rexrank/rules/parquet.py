"""A per-study table, read by pyarrow from memory: flat text and number columns only, nothing in its metadata that
could run or rebuild objects, and what it costs bounded before anything is decoded (its footer, its page headers,
then its text with the file's own dictionaries kept)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rexrank.errors import InputError
from rexrank.rules.contents import _study_id
from rexrank.rules.limits import (
    ABOUT_JSON,
    BATCH_BYTES,
    MAX_ABOUT_SIGNATURE,
    MAX_ABOUT_TEXT,
    MAX_BATCH_ROWS,
    MAX_CELL_TEXT,
    MAX_COLUMNS,
    MAX_DECODED,
    MAX_FOOTER,
    MAX_PAGES,
    MAX_ROW_GROUPS,
    MAX_ROWS,
    MAX_TOTAL_DECODED,
    MAX_UNCOMPRESSED,
    PANDAS_JSON,
    _Refused,
    parse_json,
)
from rexrank.rules.pages import (
    CODECS,
    DATA_PAGE,
    DATA_PAGE_V2,
    DICTIONARY_PAGE,
    ENCODINGS,
    TEXT_ENCODINGS,
    Page,
    longest_value,
    pages,
)
from rexrank.scorers import METRICS, spec
from rexrank.text import shown as _show

_PANDAS_KEYS = {"index_columns", "column_indexes", "columns", "creator", "pandas_version", "attributes"}
_PANDAS_TYPES = {"unicode", "string", "object", "empty", "bytes"} | {f"int{b}" for b in (8, 16, 32, 64)} | {
    f"uint{b}" for b in (8, 16, 32, 64)} | {f"float{b}" for b in (16, 32, 64)}
_NUMPY_TYPES = {"object", "str", "string", "float16", "float32", "float64", "Float32", "Float64"} | {
    f"{kind}{b}" for kind in ("int", "uint", "Int", "UInt") for b in (8, 16, 32, 64)}
ABOUT_KEY = b"rexrank"  # how the table was made: `About`, written by rexrank.per_study
_FILE_METADATA = {b"pandas", b"ARROW:schema", ABOUT_KEY}
_FIELD_METADATA = {b"PARQUET:field_id"}
_ABOUT_TEXTS = ("dataset", "split", "task")


@dataclass(frozen=True)
class About:
    """What a per-study table records of how it was made: the dataset, split and task its studies are of, and each
    metric column's signature point key (what made its per-study values). Two tables are compared only when these
    agree (`rexrank.significance`)."""

    dataset: str
    split: str
    task: str
    signatures: dict[str, str]  # metric column -> Signature.point_key
    rexrank: str = ""  # the version that wrote it

    def to_json(self) -> bytes:
        written = {"dataset": self.dataset, "split": self.split, "task": self.task, "signatures": self.signatures}
        return json.dumps(written | ({"rexrank": self.rexrank} if self.rexrank else {}), ensure_ascii=False).encode()


def _about_text(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value or len(value) > limit or not value.isprintable():
        raise _Refused(f"rexrank metadata: {what} is not a printable text of 1 to {limit} characters "
                       f"({_show(repr(value), 40)})")
    return value


def check_about(raw: bytes, columns: set[str] | None = None) -> About:
    """The `rexrank` file metadata of a per-study table, from untrusted bytes: JSON parsed with ABOUT_JSON's limits,
    exactly the keys `About` writes, each a bounded printable text, a signature only for a column of the table."""
    try:
        value = parse_json(raw, ABOUT_JSON)
    except InputError as err:
        raise _Refused(f"rexrank metadata: {err}") from None
    if not isinstance(value, dict):
        raise _Refused(f"rexrank metadata: expected a JSON object, got {type(value).__name__}")
    keys = {*_ABOUT_TEXTS, "signatures", "rexrank"}
    if set(value) - keys or set(_ABOUT_TEXTS) - set(value) or "signatures" not in value:
        odd = sorted(set(value) - keys) or sorted({*_ABOUT_TEXTS, "signatures"} - set(value))
        raise _Refused(f"rexrank metadata: expected the keys {', '.join(sorted(keys))} (rexrank optional), "
                       f"not {_show(', '.join(map(str, odd)), 80)}")
    texts = {key: _about_text(value[key], key, MAX_ABOUT_TEXT) for key in _ABOUT_TEXTS}
    signatures = value["signatures"]
    if not isinstance(signatures, dict):
        raise _Refused("rexrank metadata: signatures is not an object of metric -> signature")
    for metric, signature in signatures.items():
        _about_text(metric, "a metric's name", MAX_ABOUT_TEXT)
        _about_text(signature, f"{_show(metric, 40)}'s signature", MAX_ABOUT_SIGNATURE)
        if columns is not None and metric not in columns:
            raise _Refused(f"rexrank metadata: a signature for {_show(metric, 40)!r}, which is no column of the table")
    version = _about_text(value["rexrank"], "rexrank", MAX_ABOUT_TEXT) if "rexrank" in value else ""
    return About(**texts, signatures=dict(signatures), rexrank=version)


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


def _footer(data: bytes) -> None:
    """The magic and the footer's length, before pyarrow parses the footer (its structs outweigh its bytes)."""
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise InputError("not a readable parquet file (no PAR1 at its start and end; encrypted footers are refused)")
    length = int.from_bytes(data[-8:-4], "little")
    if length > MAX_FOOTER:
        raise InputError(f"parquet footer of {length} bytes, more than {MAX_FOOTER}")


def _chunks(meta) -> list[tuple[int, int, str, object]]:
    """(row group, column, name, column chunk metadata) of every column chunk, bounded by the footer's claims."""
    if meta.num_rows > MAX_ROWS:
        raise _Refused(f"{meta.num_rows} rows, more than {MAX_ROWS}")
    if meta.num_row_groups > MAX_ROW_GROUPS:
        raise _Refused(f"{meta.num_row_groups} row groups, more than {MAX_ROW_GROUPS}")
    if meta.num_columns > MAX_COLUMNS:
        raise _Refused(f"{meta.num_columns} columns, more than {MAX_COLUMNS}")
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    if sum(g.num_rows for g in groups) != meta.num_rows:
        raise _Refused(f"its row groups hold {sum(g.num_rows for g in groups)} rows, its footer says "
                       f"{meta.num_rows}")
    chunks = [(i, j, g.column(j).path_in_schema, g.column(j)) for i, g in enumerate(groups)
              for j in range(g.num_columns)]
    size = sum(g.total_byte_size for g in groups)
    declared = sum(c.total_uncompressed_size for *_, c in chunks)
    if max(size, declared) > MAX_UNCOMPRESSED:
        raise _Refused(f"{max(size, declared)} bytes uncompressed, more than {MAX_UNCOMPRESSED}")
    return chunks


def _check_pages(data: bytes, meta, schema, chunks) -> dict[tuple[int, str], list[Page]]:
    """Every page header of every column chunk, read before anything is decoded: the sizes the reader allocates
    are the ones the footer declared (so within MAX_UNCOMPRESSED), the pages bounded in number, each chunk's values
    its row group's rows (a flat column has one value a row, null or not), text plain or dictionary-encoded (a
    delta-encoded text repeats a prefix at two bytes a value: a short page decodes huge, as a dictionary does, and
    only dictionaries are counted before decoding). The pages by (row group, column)."""
    end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    found: dict[tuple[int, str], list[Page]] = {}
    count = 0
    for group, _, name, chunk in chunks:
        where = f"column {_show(name, 40)!r}"
        if chunk.compression not in CODECS:
            raise _Refused(f"{where}: compressed with {_show(chunk.compression, 20)}, not one of "
                           f"{', '.join(sorted(CODECS))}")
        start = chunk.data_page_offset  # where pyarrow starts reading the chunk, as it decides it
        if chunk.has_dictionary_page and 0 < (chunk.dictionary_page_offset or 0) < start:
            start = chunk.dictionary_page_offset
        if start < 4 or chunk.total_compressed_size < 0 or start + chunk.total_compressed_size > end:
            raise _Refused(f"{where}: its pages lie outside the file's data")
        try:
            found[group, name] = listed = pages(data, start, chunk.total_compressed_size)
        except _Refused as err:
            raise _Refused(f"{where}: {err}") from None
        count += len(listed)
        if count > MAX_PAGES:
            raise _Refused(f"more than {MAX_PAGES} pages")
        if _text(schema.field(name).type):
            for page in listed:
                if page.kind in (DATA_PAGE, DATA_PAGE_V2) and page.encoding not in TEXT_ENCODINGS:
                    raise _Refused(f"{where}: a page of text encoded as {ENCODINGS.get(page.encoding, page.encoding)}"
                                   f" (text is read {' or '.join(ENCODINGS[e] for e in TEXT_ENCODINGS)})")
        unpacked = sum(p.header + p.uncompressed for p in listed)
        if unpacked != chunk.total_uncompressed_size:
            raise _Refused(f"{where}: its pages decompress to {unpacked} bytes, its footer says "
                           f"{chunk.total_uncompressed_size}")
        values = sum(p.values for p in listed if p.kind in (DATA_PAGE, DATA_PAGE_V2))
        rows = meta.row_group(group).num_rows
        if values != rows or chunk.num_values != rows:
            raise _Refused(f"{where}: its pages hold {values} values, its row group {rows} rows")
        if sum(p.values for p in listed if p.kind == DICTIONARY_PAGE) > rows:
            raise _Refused(f"{where}: a dictionary of more values than its {rows} rows")
    return found


def _text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _batch_rows(data: bytes, schema, chunks, found) -> dict[str, int]:
    """Rows a batch of each text column may hold so that it decodes to at most BATCH_BYTES: a row takes at most its
    dictionary's longest value, read from the dictionary page alone (a plain page holds its values as they are)."""
    longest: dict[str, int] = {}
    for group, _, name, chunk in chunks:
        if not _text(schema.field(name).type):
            continue
        longest.setdefault(name, 1)
        for page in found[group, name]:
            if page.kind == DICTIONARY_PAGE:
                try:
                    value = longest_value(data, page, chunk.compression)
                except _Refused as err:
                    raise _Refused(f"column {_show(name, 40)!r}: {err}") from None
                if value > MAX_CELL_TEXT:
                    raise _Refused(f"column {_show(name, 40)!r}: a text of {value} bytes, more than {MAX_CELL_TEXT}")
                longest[name] = max(longest[name], value)
    return {name: max(1, min(MAX_BATCH_ROWS, BATCH_BYTES // value)) for name, value in longest.items()}


def _count_decoded(parquet, schema, chunks, rows: dict[str, int], limit: int, left: str) -> int:
    """What the table takes once decoded, counted before it is: numbers from their width and text (offsets, then
    its values' lengths, decoded `rows[column]` rows at a time and let go), each row group's column as Arrow holds
    it. Refused, naming the column, as soon as the count passes `limit`; each text bounded by MAX_CELL_TEXT."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for group, _, name, _chunk in chunks:
        kind, count = schema.field(name).type, parquet.metadata.row_group(group).num_rows
        total += (count + 7) // 8  # the validity bitmap
        if _text(kind):
            total += (8 if pa.types.is_large_string(kind) else 4) * (count + 1)
        elif not pa.types.is_null(kind):
            total += kind.bit_width // 8 * count
    if total > limit:
        raise _Refused(f"the table decodes to more than the {limit} bytes allowed{left}")
    for name, batch_rows in rows.items():
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=[name], use_threads=False):
            lengths = pc.binary_length(batch.column(0))
            longest = pc.max(lengths).as_py() or 0
            if longest > MAX_CELL_TEXT:
                raise _Refused(f"column {_show(name, 40)!r}: a text of {longest} bytes, more than {MAX_CELL_TEXT}")
            total += pc.sum(lengths).as_py() or 0
            if total > limit:
                raise _Refused(f"column {_show(name, 40)!r}: the table decodes to more than the {limit} bytes "
                               f"allowed{left}")
    return total


def check_per_study(data: bytes, budget: int | None = None) -> PerStudy:
    """A per-study table: parquet read by pyarrow from memory, flat string/number columns only (no extension
    types, no dictionary, nested or binary columns), metadata limited to pandas' plain column notes and rexrank's
    record of how the table was made (`check_about`); a `study_id`
    text column, no nulls or repeats. What it costs is bounded before it is decoded: footer, rows, row groups,
    columns and pages; the sizes its page headers declare; each text's length; the size it decodes to (at most
    MAX_DECODED, or `budget` when smaller: what a pull request has left), counted in batches of bounded size before
    the table is read, in such batches. Returns its ids and table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _footer(data)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data), arrow_extensions_enabled=False)
        meta, schema = parquet.metadata, parquet.schema_arrow
    except Exception as err:  # noqa: BLE001 -- a hostile file must give a message, whatever pyarrow raises
        raise InputError(f"not a readable parquet file ({type(err).__name__})") from None
    try:
        chunks = _chunks(meta)
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
            plain = _text(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)
            if isinstance(kind, pa.ExtensionType) or not plain:
                raise _Refused(f"column {_show(name, 40)!r} is {_show(str(kind), 40)}, not text or a number")
            if set(column.metadata or {}) - _FIELD_METADATA:
                raise _Refused(f"column {_show(name, 40)!r} carries metadata (extension types are refused)")
        if len(schema) != meta.num_columns or {name for *_, name, _ in chunks} != names:
            raise _Refused("its columns are not its footer's column chunks (nested columns are refused)")
        # A metric of sufficient statistics has no column of its own name: its numbers are its spec's columns.
        signed = names | {m for m in METRICS if spec(m).sufficient and spec(m).carried_by(names)}
        about = check_about(meta.metadata[ABOUT_KEY], signed) if ABOUT_KEY in (meta.metadata or {}) else None
        if "study_id" not in names:
            raise _Refused("no study_id column")
        if not _text(schema.field("study_id").type):
            raise _Refused("study_id is not a text column")
        found = _check_pages(data, meta, schema, chunks)
        rows = _batch_rows(data, schema, chunks, found)
        limit = MAX_DECODED if budget is None else min(MAX_DECODED, budget)
        left = f" (what is left of the {MAX_TOTAL_DECODED} a pull request's tables may take)" \
            if limit < MAX_DECODED else ""
        try:
            decoded = _count_decoded(parquet, schema, chunks, rows, limit, left)
            # every column decodes (a corrupt page is refused here, not later on the board), in bounded batches
            batches = parquet.iter_batches(batch_size=min(rows.values(), default=MAX_BATCH_ROWS), use_threads=False)
            table = pa.Table.from_batches(list(batches), schema)
            ids = table.column("study_id").to_pylist()
        except _Refused:
            raise
        except Exception as err:  # noqa: BLE001 -- a corrupt page, whatever pyarrow raises
            raise InputError(f"not a readable parquet file ({type(err).__name__})") from None
    except _Refused as err:
        raise InputError(str(err)) from None
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
    return PerStudy(tuple(ids), table, decoded, about)


@dataclass(frozen=True)
class PerStudy:
    """A per-study table that passed `check_per_study`: its study ids in table order, and the table."""

    ids: tuple[str, ...]
    table: Any  # pyarrow.Table
    decoded: int = 0  # bytes the table takes decoded, as `check_per_study` counted them before decoding it
    about: About | None = None  # what it records of how it was made (None: written by an older rexrank, or by hand)

    def __eq__(self, other: object) -> bool:  # compared by its studies, as the tuple of ids it replaces was
        return self.ids == (other.ids if isinstance(other, PerStudy) else other)

    def __hash__(self) -> int:
        return hash(self.ids)


