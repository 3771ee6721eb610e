"""What a file a pull request carries can cost the maintainers' machine to check: each kind's worst file under the
limits, checked in a child process whose peak memory is measured, and the hostile files that would cost more
(dictionary-encoded text that decodes 1,000 times its size, a footer that lies about its pages, many columns, a huge
footer) refused from their metadata with one line naming the file, the column and the bound."""

import hashlib
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.submissions import (
    BASE,
    SID,
    STUDIES,
    card_json,
    clean_files,
    per_study_parquet,
    predictions_jsonl,
    refused,
    result_json,
    write,
)

from rexrank.errors import InputError
from rexrank.rules import check, check_per_study, limits, parquet
from rexrank.rules.layout import MAX_BYTES, MiB
from rexrank.rules.limits import (
    LINE_JSON,
    MAX_COLUMNS,
    MAX_DECODED,
    MAX_FOOTER,
    MAX_LINES,
    MAX_ROW_GROUPS,
    MAX_ROWS,
    MAX_STUDY_ID,
    MAX_UNCOMPRESSED,
)
from rexrank.scorers import JUDGED, METRICS, spec
from rexrank.text import to_markdown

ROWS = 100_000  # the brief's bomb: one 10 KiB text repeated on every row of a table of MAX_ROWS rows
TEXT = 10 * 1024
PER_STUDY = f"{BASE}/per_study/mimic-cxr.findings.parquet"

# The cost a check may add beyond the interpreter, the modules and the file's own bytes, whatever the file: the
# warm-up check of a small valid file makes pyarrow's pools, lazy imports and caches first, then the peak is reset
# and the check of the hostile file measured alone. What is left is the allocators' keep: pyarrow's (mimalloc)
# holds freed batches a while before it gives their pages back (14 to 20 MB above pyarrow's own peak, measured on
# the bombs below), Python's its 1 MiB arenas; 32 MiB holds it with room. Every bound below is this plus what the
# check must hold for that file, worked out from the limits.
SLACK = 32 * MiB

CHILD = textwrap.dedent("""
    import json, re, sys
    from pathlib import Path

    from rexrank.rules import check, check_card, check_per_study, check_predictions, check_radrbench, check_result

    CHECKS = {"per_study": check_per_study, "predictions": lambda data: check_predictions(check._lines(data)),
              "results": lambda data: check_result(data, "mimic-cxr", "findings"), "card": check_card,
              "radrbench": check_radrbench}
    warm_kind, warm, kind = sys.argv[1], Path(sys.argv[2]).read_bytes(), sys.argv[3]
    hostile = Path(sys.argv[4]).read_bytes()

    def status(key):
        return int(re.search(rf"^{key}:\\s+(\\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1)) * 1024

    def run(data, kind=kind):
        try:
            CHECKS[kind](data)
            return "accepted"
        except Exception as err:  # the outcome is the test's to judge
            return f"{type(err).__name__}: {err}"

    warmed = run(warm, warm_kind)
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) back to the present (VmRSS)
    before = status("VmRSS")
    outcome = run(hostile)
    print(json.dumps({"cost": status("VmHWM") - before, "outcome": outcome, "warm": warmed}))
""")


def _can_measure() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return "VmHWM" in Path("/proc/self/status").read_text()


needs_proc = pytest.mark.skipif(not _can_measure(), reason="peak memory is read from Linux's /proc/self")


def cost(tmp_path: Path, kind: str, warm: bytes, hostile: bytes, warm_kind: str | None = None) -> tuple[int, str]:
    """(bytes the check of `hostile` as a `kind` file took beyond what the process held before it, its outcome),
    in a child that checked `warm` (a valid file of `warm_kind`, by default the same kind) first."""
    (tmp_path / "warm").write_bytes(warm)
    (tmp_path / "hostile").write_bytes(hostile)
    done = subprocess.run([sys.executable, "-c", CHILD, warm_kind or kind, str(tmp_path / "warm"), kind,
                           str(tmp_path / "hostile")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["warm"] == "accepted", found["warm"]
    return found["cost"], found["outcome"]


def to_parquet(table: pa.Table, **options) -> bytes:
    buffer = io.BytesIO()
    # store_schema=False: the column reads back as plain text, its dictionary only in the pages (as any writer's
    # dictionary-encoded text column looks); the table is written from indices and one value, never decoded here
    pq.write_table(table, buffer, store_schema=False, **options)
    return buffer.getvalue()


def ids(rows: int = ROWS) -> pa.Array:
    return pa.array([f"s{i}" for i in range(rows)])


def repeated(value: str, rows: int = ROWS) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), pa.array([value]))


def dictionary_bomb(columns: int = 1, rows: int = ROWS, text: int = TEXT) -> bytes:
    value = "x" * text
    return to_parquet(pa.table({"study_id": ids(rows), **{f"text{i}": repeated(value, rows) for i in range(columns)}}),
                      compression="zstd")


def warm_per_study() -> bytes:
    return per_study_parquet(**{"fineradscore.corrections": ["[]"] * len(STUDIES)})


def declared(data: bytes) -> int:
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))


def text_decoded(lengths: list[int] | int, rows: int = ROWS) -> int:
    """What a text column of `rows` rows takes in Arrow: its validity bitmap, 4-byte offsets and its values."""
    values = lengths if isinstance(lengths, int) else sum(lengths)
    return (rows + 7) // 8 + 4 * (rows + 1) + values


STUDY_IDS = text_decoded([len(f"s{i}") for i in range(ROWS)])


# -- the brief's bomb: 10 KiB repeated 100,000 times ------------------------------------------------------------

def test_the_dictionary_bomb_is_small_declares_little_and_would_decode_to_a_gigabyte():
    data = dictionary_bomb()
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert len(data) < MiB and declared(data) < 2 * MiB  # it passes the checks that read only the footer
    assert meta.num_rows == ROWS <= MAX_ROWS and declared(data) < MAX_UNCOMPRESSED
    assert ROWS * TEXT > 10**9 > MAX_DECODED  # what pyarrow makes of it: 1 GB (its check took 1.7 GB before)


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_the_dictionary_bomb_is_refused_before_it_is_decoded(tmp_path):
    data = dictionary_bomb()
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    assert outcome == f"InputError: column 'text0': the table decodes to more than the {MAX_DECODED} bytes allowed"
    # What the check holds for it, beyond the file: the footer's structs and the page headers, the dictionary page
    # decompressed alone (10 KiB), then one batch of rows at a time (BATCH_BYTES of text, the 4-byte lengths of its
    # rows, pyarrow's builder doubling it at most) and the page it decodes (at most the declared size): twice
    # BATCH_BYTES and the declared size: 3.2 MiB, 35 MiB with SLACK. Decoding the table takes 1 GB: the check
    # took 1,658 MiB, measured the same way, before it was bounded.
    bound = 2 * limits.BATCH_BYTES + declared(data) + SLACK
    assert took < bound < 10**9 // 25, (took, bound)


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_many_columns_each_under_the_bound_are_refused_one_batch_at_a_time(tmp_path):
    columns, text = MAX_COLUMNS - 4, 40  # each a 40-byte text repeated: 4.4 MB a column, 265 MB together
    data = dictionary_bomb(columns, text=text)
    fixed = (columns + 1) * text_decoded(0)  # validity and offsets, counted first
    assert fixed + ROWS * text * columns > MAX_DECODED > fixed + ROWS * text
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    study_ids = STUDY_IDS - text_decoded(0)
    passing = next(i for i in range(columns) if fixed + study_ids + (i + 1) * ROWS * text > MAX_DECODED)
    assert outcome == (f"InputError: column 'text{passing}': the table decodes to more than the {MAX_DECODED} bytes "
                       "allowed")
    bound = 2 * limits.BATCH_BYTES + declared(data) + SLACK  # one batch at a time: the single-column bomb's bound
    assert took < bound, (took, bound)


def test_more_columns_than_rexrank_writes_are_refused_from_the_footer(tmp_path):
    # rexrank writes study_id, each metric's columns (its score, or its sufficient statistics) and the judged
    # metrics' detail columns (and, counted here to be safe, a problem column each): MAX_COLUMNS leaves room to double
    written = 1 + len({c for m in METRICS for c in {**spec(m).columns, **spec(m).details}}) + len(JUDGED)
    assert 2 * written <= MAX_COLUMNS
    data = dictionary_bomb(256, rows=10)  # the old limit's 256 columns: at 100,000 rows each would decode to a GB
    err = refused(write(tmp_path, clean_files() | {PER_STUDY: data}), SID)
    assert f"{PER_STUDY}: 257 columns, more than {MAX_COLUMNS}" in err.problems


# -- a footer that lies, and the footer itself ------------------------------------------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _zigzag(value: int) -> bytes:  # thrift compact's i32 and i64
    return _varint(value << 1)


def repeated_plainly(groups: int = 50, rows: int = ROWS // 50, **options) -> bytes:
    """study_id and a 10 KiB text repeated on 100,000 rows, not dictionary-encoded, in 50 row groups (20 MB at a
    time in this process), zstd-compressed to a few hundred KiB."""
    buffer = io.BytesIO()
    schema = pa.schema([("study_id", pa.string()), ("t", pa.string())])
    with pq.ParquetWriter(buffer, schema, store_schema=False, use_dictionary=False, compression="zstd",
                          **options) as writer:
        for group in range(groups):
            writer.write_table(pa.table({"study_id": [f"s{group * rows + i:06d}" for i in range(rows)],
                                         "t": ["x" * TEXT] * rows}, schema=schema))
    return buffer.getvalue()


def lying_footer(groups: int = 50) -> tuple[bytes, int]:
    """`repeated_plainly`, its footer saying each chunk of the text holds 1,000 bytes instead of 20 MB (the pages'
    own headers keep the truth, and pyarrow allocates by them); the size of one chunk."""
    data = repeated_plainly(groups)
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - length:-8]
    true = meta.row_group(0).column(1).total_uncompressed_size
    for claim in (true, meta.row_group(0).total_byte_size):  # the same in every row group
        assert footer.count(_zigzag(claim)) == groups
        footer = footer.replace(_zigzag(claim), _zigzag(1000))
    return data[:-8 - length] + footer + len(footer).to_bytes(4, "little") + b"PAR1", true


@pytest.mark.slow
def test_a_footer_that_understates_its_pages_is_refused_by_the_pages_own_headers():
    data, true = lying_footer()
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert declared(data) < MiB and meta.row_group(0).column(1).total_uncompressed_size == 1000  # the lie reads
    with pytest.raises(InputError) as err:
        check_per_study(data)
    assert str(err.value) == f"column 't': its pages decompress to {true} bytes, its footer says 1000"


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_a_lying_footer_costs_its_pages_headers_not_its_pages(tmp_path):
    data, true = lying_footer()
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    assert outcome == f"InputError: column 't': its pages decompress to {true} bytes, its footer says 1000"
    # the pages' headers are read where they lie in the file; nothing is decompressed
    assert took < SLACK, took


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_delta_encoded_text_is_refused_from_its_page_headers(tmp_path):
    # DELTA_BYTE_ARRAY stores each value as the length of the prefix it shares with the one before and the rest:
    # 10 KiB repeated is two bytes a row, and no dictionary to count it by
    data = repeated_plainly(column_encoding={"t": "DELTA_BYTE_ARRAY"})
    assert len(data) < MiB and declared(data) < 2 * MiB
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    assert outcome == ("InputError: column 't': a page of text encoded as DELTA_BYTE_ARRAY (text is read PLAIN or "
                       "PLAIN_DICTIONARY or RLE_DICTIONARY)")
    assert took < SLACK, took  # 1,979 MiB before, measured the same way


@pytest.mark.parametrize("compression", ["snappy", "gzip", "brotli", "zstd", "lz4", "none"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_what_pyarrow_writes_passes_whatever_its_codec_and_page_version(compression, version):
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(3000)], "bleu2": np.linspace(0, 1, 3000),
                          "fineradscore.corrections": ["[]", "x" * 3000, None] * 1000})
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, compression=compression, data_page_version=version)
    checked = check_per_study(buffer.getvalue())
    assert checked.table.to_pandas().equals(frame) and len(checked.ids) == 3000


def test_a_footer_is_bounded_before_pyarrow_parses_it():
    table = pa.table({"study_id": ["a"]}).replace_schema_metadata({b"pandas": b" " * MAX_FOOTER})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(InputError, match=rf"^parquet footer of \d+ bytes, more than {MAX_FOOTER}$"):
        check_per_study(buffer.getvalue())
    with pytest.raises(InputError, match="not a readable parquet file .no PAR1"):
        check_per_study(buffer.getvalue()[:-1] + b"E")  # PARE: an encrypted footer


def many_row_groups(groups: int, columns: int = MAX_COLUMNS - 1) -> bytes:
    buffer = io.BytesIO()
    schema = pa.schema([("study_id", pa.string())] + [(f"c{i}", pa.float64()) for i in range(columns)])
    with pq.ParquetWriter(buffer, schema, store_schema=False, write_statistics=False) as writer:
        row = pa.table({"study_id": ["a"], **{f"c{i}": [0.0] for i in range(columns)}}, schema=schema)
        for _ in range(groups):
            writer.write_table(row)
    return buffer.getvalue()


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_the_largest_footer_allowed_costs_a_bounded_parse(tmp_path):
    # row groups of one row and MAX_COLUMNS columns, as many as a footer under MAX_FOOTER holds: pyarrow parses the
    # footer whole before its row groups can be counted
    def footer(data: bytes) -> int:
        return int.from_bytes(data[-8:-4], "little")

    per_group = (footer(many_row_groups(20)) - footer(many_row_groups(10))) / 10  # offsets grow with the file
    groups = int(0.95 * MAX_FOOTER / per_group)
    data = many_row_groups(groups)
    length = footer(data)
    assert 0.85 * MAX_FOOTER < length <= MAX_FOOTER
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    assert outcome == f"InputError: {groups} row groups, more than {MAX_ROW_GROUPS}"
    # pyarrow holds a column chunk's thrift struct (path, encodings, offsets, page encoding stats: about 800 bytes,
    # measured) for the 58 bytes or so the footer spends on it: 14 times the footer; 32 times bounds it
    assert took < 32 * length + SLACK, (took, length)


def test_pages_are_bounded_in_number(monkeypatch):
    monkeypatch.setattr(parquet, "MAX_PAGES", 1)
    with pytest.raises(InputError, match="^more than 1 pages$"):
        check_per_study(per_study_parquet())


def test_a_page_header_that_is_not_one_is_refused_naming_its_column():
    data = bytearray(per_study_parquet())
    chunk = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.row_group(0).column(1)  # bleu2
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    data[start:start + 4] = b"\xff\xff\xff\xff"
    with pytest.raises(InputError, match="^column 'bleu2': a page header has a field of unknown type 15$"):
        check_per_study(bytes(data))


def test_a_text_longer_than_a_cell_may_be_is_refused():
    data = per_study_parquet(**{"fineradscore.corrections": ["[]"] * 5 + ["x" * (limits.MAX_CELL_TEXT + 1)]})
    with pytest.raises(InputError) as err:
        check_per_study(data)
    assert str(err.value) == (f"column 'fineradscore.corrections': a text of {limits.MAX_CELL_TEXT + 1} bytes, more "
                              f"than {limits.MAX_CELL_TEXT}")


def test_the_decoded_size_is_counted_before_decoding_as_arrow_holds_it():
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(1000)], "bleu2": np.linspace(0, 1, 1000),
                          "green.matched": np.arange(1000, dtype=np.int32),
                          "fineradscore.corrections": ["[]", None] * 500})
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    checked = check_per_study(buffer.getvalue())
    whole = pq.read_table(io.BytesIO(buffer.getvalue()))  # one chunk a column, as the count supposes
    # what Arrow holds: its buffers; it may leave out a validity bitmap when a column has no nulls, the count never
    held = sum(b.size if b is not None else (1000 + 7) // 8 if i == 0 else 0
               for column in whole.columns for i, b in enumerate(column.chunks[0].buffers()))
    assert checked.decoded == held
    assert checked.table.equals(whole)


# -- what rexrank writes, at the bound: accepted, and its cost is its size -------------------------------------

@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_a_table_near_the_bound_is_accepted_and_costs_about_what_it_decodes_to(tmp_path):
    rows = 20_000
    text = ["x" * 1500 + f"{i:08d}" for i in range(rows)]  # unique texts: no dictionary to shrink them
    data = per_study_parquet([f"s{i}" for i in range(rows)], bleu2=np.linspace(0, 1, rows),
                             **{"fineradscore.corrections": text})
    decoded = text_decoded([len(t) for t in text], rows) + text_decoded([len(f"s{i}") for i in range(rows)], rows) \
        + 8 * rows + (rows + 7) // 8
    assert 28 * MiB < decoded < MAX_DECODED
    took, outcome = cost(tmp_path, "per_study", warm_per_study(), data)
    assert outcome == "accepted"
    # the table, built from its batches (its decoded size); while counting, then reading, pyarrow's builders and
    # the batches the allocator keeps a while once freed (at most as much again); the pages on the way (their
    # declared size); the study ids as Python text (about 60 bytes each)
    bound = 2 * decoded + declared(data) + 64 * rows + SLACK
    assert took < bound, (took, bound)


def test_a_pull_requests_tables_together_are_bounded(tmp_path, monkeypatch):
    files = clean_files() | {f"{BASE}/results/mimic-cxr.findings_impression.json": result_json(
        task="findings_impression"), f"{BASE}/per_study/mimic-cxr.findings_impression.parquet": per_study_parquet(),
        f"{BASE}/predictions/mimic-cxr.findings_impression.jsonl": predictions_jsonl()}
    one = check_per_study(per_study_parquet()).decoded
    monkeypatch.setattr(check, "MAX_TOTAL_DECODED", 2 * one - 1)  # room for one table, and not quite a second
    err = refused(write(tmp_path, files), SID)
    second = f"{BASE}/per_study/mimic-cxr.findings_impression.parquet"
    assert [p for p in err.problems if p.startswith(f"{BASE}/per_study/")] == [
        f"{second}: column 'study_id': the table decodes to more than the {one - 1} bytes allowed (what is left of the "
        f"{limits.MAX_TOTAL_DECODED} a pull request's tables may take)"]


# -- every other file a pull request carries ---------------------------------------------------------------------

@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_the_largest_predictions_file_costs_its_study_ids(tmp_path):
    # MAX_LINES lines, each a study id of MAX_STUDY_ID characters outside the BMP (4 bytes each in UTF-8, and in
    # Python), within the file's bound: the ids are what the check keeps (each line is parsed and let go)
    def line(i: int) -> str:
        return json.dumps({"study_id": f"{i:06d}" + "\U0001f600" * (MAX_STUDY_ID - 6), "prediction": ""},
                          ensure_ascii=False) + "\n"

    data = "".join(line(i) for i in range(MAX_LINES)).encode()
    assert len(data) <= MAX_BYTES["predictions"]
    took, outcome = cost(tmp_path, "predictions", predictions_jsonl(), data)
    assert outcome == "accepted"
    # each id: a Python str of 4 bytes a character and its 80-byte header, its slot in the dict of ids (at most 3
    # words a slot, the dict at most a third empty: about 50 bytes), its line number (a 32-byte int), its place in
    # the tuple returned (8 bytes): under 4 x MAX_STUDY_ID + 256 bytes a line
    bound = MAX_LINES * (4 * MAX_STUDY_ID + 256) + SLACK
    assert took < bound, (took, bound)


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
def test_a_predictions_file_of_one_long_line_is_never_copied_whole(tmp_path):
    first = predictions_jsonl(["a"])
    data = first + b'{"study_id": "b", "prediction": "' + b"x" * (MAX_BYTES["predictions"] - 64 - len(first)) + b'"}'
    took, outcome = cost(tmp_path, "predictions", predictions_jsonl(), data)
    assert outcome == f"InputError: line 2: longer than {LINE_JSON.max_bytes} bytes"
    assert took < SLACK, took  # the line cut past its bound, not a 64 MiB copy of the file (as it was)


def test_lines_are_cut_past_their_bound_and_nothing_else_changes():
    data = b"a\r\n" + b"b" * 10 + b"\r\n" + b"c" * 11 + b"\n" + b"d" * 50 + b"\r"
    assert list(check._lines(data, longest=10)) == [b"a", b"b" * 10, b"c" * 11, b"d" * 12]


def empty_objects(size: int) -> bytes:
    """The JSON that costs Python the most per byte: empty objects, each 3 bytes with its comma."""
    return b"[" + b"{}," * ((size - 4) // 3) + b"{}]"


@pytest.mark.subprocess
@pytest.mark.slow
@needs_proc
@pytest.mark.parametrize(("kind", "bounds"), [("card", limits.CARD_JSON), ("results", limits.RESULT_JSON),
                                              ("radrbench", limits.RADRBENCH_JSON)])
def test_the_costliest_json_a_file_may_hold_costs_at_most_32_times_its_bytes(tmp_path, kind, bounds):
    data = empty_objects(MAX_BYTES[kind])
    assert len(data) <= MAX_BYTES[kind] == bounds.max_bytes
    warm = card_json() if kind == "card" else result_json()
    took, outcome = cost(tmp_path, kind, warm, data, warm_kind="card" if kind == "card" else "results")
    assert outcome == f"InputError: more than {bounds.max_items} JSON members and elements"
    # json.loads builds it whole before its items can be counted: an empty object becomes a dict (64 bytes, a
    # 16-byte GC header, an 8-byte pointer in its list: 88 bytes for 3 of text, 29 times; an empty array 27, a
    # number at most 8, a string at most 12), beside the file decoded to text (once more): under 32 times
    bound = 32 * len(data) + SLACK
    assert took < bound, (took, bound)


# -- after the check: every later read of a submission's per-study table goes the same way -----------------------

@pytest.mark.slow
def test_the_boards_compare_tab_reads_a_table_as_the_check_does(tmp_path):
    from rexrank.board.aggregate import aggregate
    from rexrank.board.compare import compare
    from rexrank.demo.board import demo_keys, demo_results_repo

    repo = demo_results_repo(tmp_path / "results")
    board = aggregate(repo, demo_keys())
    bomb = dictionary_bomb()
    (repo / "submissions/demo-template/per_study/mimic-cxr.findings.parquet").write_bytes(bomb)
    row = (board["model"] == "Demo-Template") & (board["dataset"] == "mimic-cxr") & (board["task"] == "findings")
    board.loc[row, "per_study_sha256"] = hashlib.sha256(bomb).hexdigest()  # as if a job had written it
    heading, table = compare(board, str(repo), "mimic-cxr", "findings", "Demo-Careful", "Demo-Template", trials=50)
    why = to_markdown(f"column 'text0': the table decodes to more than the {MAX_DECODED} bytes allowed", 200)
    assert table.empty and heading.endswith(f"Demo\\-Template's per-study table is refused: {why}.")
