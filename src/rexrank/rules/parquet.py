"""A per-study table, read by pyarrow from memory: flat text and number columns only, bounded, nothing in its
metadata that could run or rebuild objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rexrank.errors import InputError
from rexrank.rules.contents import _study_id
from rexrank.rules.limits import MAX_COLUMNS, MAX_ROWS, MAX_UNCOMPRESSED, PANDAS_JSON, _Refused, parse_json
from rexrank.text import shown as _show

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


