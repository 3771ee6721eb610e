"""The submission rules accept exactly one file metadata key beside pandas' in a per-study table, `rexrank` (what the
table's scores are of), parsed as untrusted JSON with limits; a hostile value there is refused naming the file, and
a record that disagrees with its result is refused too."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.submissions import BASE, SID, VALUES, clean_files, refused, result_json, write

from rexrank.errors import InputError
from rexrank.results import Result
from rexrank.rules import check_submission
from rexrank.rules.limits import ABOUT_JSON
from rexrank.rules.parquet import ABOUT_KEY, About, check_per_study

STUDIES = [f"s{i}" for i in range(6)]
KEY = Result.from_dict(json.loads(result_json())).metrics["bleu2"].signature.point_key


def table(metadata: bytes | None) -> bytes:
    """The clean fixture table with `metadata` as its `rexrank` file metadata (None: none)."""
    arrow = pa.table({"study_id": STUDIES, "bleu2": VALUES})
    if metadata is not None:
        arrow = arrow.replace_schema_metadata({ABOUT_KEY: metadata})
    buffer = io.BytesIO()
    pq.write_table(arrow, buffer)
    return buffer.getvalue()


def record(**changes) -> bytes:
    made = {"dataset": "mimic-cxr", "split": "test", "task": "findings", "signatures": {"bleu2": KEY},
            "rexrank": "0.1.0"} | changes
    return json.dumps(made).encode()


def test_the_record_rexrank_writes_is_read_back():
    checked = check_per_study(table(record()))
    assert checked.about == About("mimic-cxr", "test", "findings", {"bleu2": KEY}, "0.1.0")
    assert check_per_study(table(None)).about is None  # an older table: accepted, nothing recorded


@pytest.mark.parametrize(("metadata", "message"), [
    (b"not json", "rexrank metadata: not valid JSON"),
    (b"\xff\xfe", "rexrank metadata: not UTF-8 text"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b'{"dataset": "a", "dataset": "b"}', "key 'dataset' appears more than once"),
    (record(signatures={"bleu2": {"nested": {"deeper": KEY}}}), "nested deeper than 2 levels"),
    (record(signatures={f"m{i}": "x" for i in range(ABOUT_JSON.max_items)}),
     f"more than {ABOUT_JSON.max_items} JSON members"),
    (b'{"dataset": NaN}', "NaN is not a JSON number"),
    (b" " * (ABOUT_JSON.max_bytes + 1), f"more than the {ABOUT_JSON.max_bytes} allowed"),
    (record(hook="os.system('x')"), "expected the keys dataset, rexrank, signatures, split, task"),
    (json.dumps({"dataset": "mimic-cxr", "split": "test", "signatures": {}}).encode(), "not task"),
    (record(dataset=7), "dataset is not a printable text"),
    (record(task="findings\x1b[2J"), "task is not a printable text"),
    (record(split="t" * 129), "split is not a printable text of 1 to 128 characters"),
    (record(signatures=[KEY]), "signatures is not an object"),
    (record(signatures={"bleu2": 1}), "bleu2's signature is not a printable text"),
    (record(signatures={"bleu2": "k" * 4097}), "bleu2's signature is not a printable text of 1 to 4096"),
    (record(signatures={"bleu2": KEY, "ghost": "k"}), "a signature for 'ghost', which is no column of the table"),
    (record(rexrank=""), "rexrank is not a printable text"),
])
def test_a_hostile_record_is_refused_naming_the_file(tmp_path, metadata, message):
    with pytest.raises(InputError, match="rexrank metadata") as err:
        check_per_study(table(metadata))
    assert message in str(err.value)
    files = clean_files() | {f"{BASE}/per_study/mimic-cxr.findings.parquet": table(metadata)}
    rejected = refused(write(tmp_path, files), SID)
    assert f"{BASE}/per_study/mimic-cxr.findings.parquet: rexrank metadata" in str(rejected)


@pytest.mark.parametrize(("changes", "message"), [
    ({"task": "findings_impression"}, "records task 'findings_impression', its result 'findings'"),
    ({"dataset": "iu-xray"}, "records dataset 'iu-xray', its result 'mimic-cxr'"),
    ({"split": "valid"}, "records split 'valid', its result 'test'"),
    ({"signatures": {"bleu2": "bleu2:1|another"}}, "bleu2: the table records another signature than its result's"),
])
def test_a_record_that_disagrees_with_its_result_is_refused(tmp_path, changes, message):
    files = clean_files() | {f"{BASE}/per_study/mimic-cxr.findings.parquet": table(record(**changes))}
    rejected = refused(write(tmp_path, files), SID)
    assert f"- per_study/mimic-cxr.findings.parquet: {message}" in str(rejected)


def test_a_table_with_the_record_of_its_own_result_passes(tmp_path):
    files = clean_files() | {f"{BASE}/per_study/mimic-cxr.findings.parquet": table(record())}
    checked = check_submission(write(tmp_path, files), SID)
    assert checked.per_study[("mimic-cxr", "findings")].about.signatures == {"bleu2": KEY}
