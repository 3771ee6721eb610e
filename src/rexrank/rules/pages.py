"""A parquet column chunk's page headers, read from the file's bytes before pyarrow decodes anything: the sizes and
value counts the reader will act on (a footer only claims them). Thrift's compact protocol, read by hand: the
fields a page header may carry are skipped by their wire type, binaries by their length, never copied."""

from __future__ import annotations

from dataclasses import dataclass

from rexrank.rules.limits import MAX_PAGE_HEADER, _Refused

_MAX_NESTING = 8  # structs in structs inside a page header (pyarrow's nest 3 deep)
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = range(4)  # parquet's PageType


@dataclass(frozen=True)
class Page:
    kind: int  # DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE or DATA_PAGE_V2
    header: int  # bytes of the header
    uncompressed: int  # bytes the page decompresses to, as its header says (what the reader allocates)
    compressed: int  # bytes of the page after its header
    values: int  # values (with nulls) in a data page; the dictionary's entries in a dictionary page
    body: int = 0  # where the page's bytes start in the file
    encoding: int | None = None  # the values' encoding (parquet's Encoding: 0 PLAIN, 2 PLAIN_DICTIONARY...)


class _Compact:
    """Thrift compact protocol over data[pos:end], every read bounded by `end`."""

    def __init__(self, data: bytes, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise _Refused("a page header runs past its column chunk or the header bound")
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise _Refused("a page header has a malformed number")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def advance(self, count: int) -> None:
        if count < 0 or self.pos + count > self.end:
            raise _Refused("a page header runs past its column chunk or the header bound")
        self.pos += count

    def struct(self, depth: int = 1) -> dict[int, object]:
        """A struct's integer and struct fields by field id; every other field skipped."""
        if depth > _MAX_NESTING:
            raise _Refused(f"a page header nests more than {_MAX_NESTING} structs")
        fields: dict[int, object] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            kind, delta = head & 0x0F, head >> 4
            last = last + delta if delta else self.zigzag()
            if kind in (_I16, _I32, _I64):
                fields[last] = self.zigzag()
            elif kind == _STRUCT:
                fields[last] = self.struct(depth + 1)
            else:
                self.skip(kind, depth)

    def skip(self, kind: int, depth: int) -> None:
        """Past one value of wire type `kind`, at nesting `depth` (a container inside it counts one more)."""
        if kind in (_TRUE, _FALSE):  # a struct field's boolean is in its type
            return
        if kind in (_LIST, _SET, _MAP) and depth >= _MAX_NESTING:
            raise _Refused(f"a page header nests more than {_MAX_NESTING} containers")
        if kind == _BYTE:
            self.advance(1)
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.advance(8)
        elif kind == _BINARY:
            self.advance(self.varint())
        elif kind in (_LIST, _SET):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            for _ in range(self._count(self.varint() if size == 15 else size)):
                self._element(element, depth + 1)
        elif kind == _MAP:
            size = self._count(self.varint())
            types = self.byte() if size else 0
            for _ in range(size):
                self._element(types >> 4, depth + 1)
                self._element(types & 0x0F, depth + 1)
        elif kind == _STRUCT:
            self.struct(depth + 1)
        else:
            raise _Refused(f"a page header has a field of unknown type {kind}")

    def _count(self, size: int) -> int:
        if size > self.end - self.pos:  # each element takes a byte at least: what is left bounds the loop
            raise _Refused("a page header runs past its column chunk or the header bound")
        return size

    def _element(self, kind: int, depth: int) -> None:
        if kind in (_TRUE, _FALSE):  # in a collection a boolean is a byte
            self.advance(1)
        else:
            self.skip(kind, depth)


def pages(data: bytes, start: int, length: int) -> list[Page]:
    """The pages of the column chunk at data[start:start + length], each header read and its body skipped."""
    end = start + length
    found = []
    pos = start
    while pos < end:
        reader = _Compact(data, pos, min(end, pos + MAX_PAGE_HEADER))
        header = reader.struct()
        kind, uncompressed, compressed = header.get(1), header.get(2), header.get(3)
        if not all(isinstance(v, int) and v >= 0 for v in (kind, uncompressed, compressed)):
            raise _Refused("a page header without its type and sizes")
        sub = header.get({DATA_PAGE: 5, INDEX_PAGE: 6, DICTIONARY_PAGE: 7, DATA_PAGE_V2: 8}.get(kind, 0))
        values = sub.get(1) if isinstance(sub, dict) else None
        if kind != INDEX_PAGE and not (isinstance(values, int) and values >= 0):
            raise _Refused(f"a page header of type {kind} without its value count")
        encoding = sub.get(4 if kind == DATA_PAGE_V2 else 2) if isinstance(sub, dict) else None
        found.append(Page(kind, reader.pos - pos, uncompressed, compressed, values or 0, reader.pos, encoding))
        pos = reader.pos + compressed
        if pos > end:
            raise _Refused("a page runs past its column chunk")
    return found


# Parquet's codecs as pyarrow's `Codec` names them (pyarrow reports LZ4_RAW as LZ4); the others (LZO, Hadoop's LZ4)
# are refused: no writer rexrank uses makes them.
CODECS = {"UNCOMPRESSED": None, "SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "ZSTD": "zstd",
          "LZ4": "lz4_raw", "LZ4_RAW": "lz4_raw"}
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
             6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
TEXT_ENCODINGS = (0, 2, 8)  # what pyarrow writes text as: PLAIN, and indices into a dictionary page
_PLAIN, _PLAIN_DICTIONARY = 0, 2


def longest_value(data: bytes, page: Page, codec: str) -> int:
    """The longest value of a dictionary page of text (PLAIN: each value its 4-byte length, then its bytes), read
    by decompressing the page alone: the bytes one row can decode to."""
    import pyarrow as pa

    if page.encoding not in (_PLAIN, _PLAIN_DICTIONARY):
        raise _Refused(f"a dictionary page encoded as {page.encoding}, not PLAIN")
    body = data[page.body:page.body + page.compressed]
    try:
        raw = memoryview(body if CODECS[codec] is None else
                         pa.Codec(CODECS[codec]).decompress(body, decompressed_size=page.uncompressed))
    except Exception as err:  # noqa: BLE001 -- whatever the codec raises on a hostile page
        raise _Refused(f"a dictionary page that does not decompress ({type(err).__name__})") from None
    if len(raw) != page.uncompressed:
        raise _Refused(f"a dictionary page of {len(raw)} bytes, its header says {page.uncompressed}")
    pos = longest = 0
    for _ in range(page.values):
        if pos + 4 > len(raw):
            raise _Refused(f"a dictionary page shorter than its {page.values} values")
        length = int.from_bytes(raw[pos:pos + 4], "little")
        longest = max(longest, length)
        pos += 4 + length
    if pos > len(raw):
        raise _Refused(f"a dictionary page shorter than its {page.values} values")
    return longest
