"""The rules for submission pull requests (rexrank.rules, rexrank.text), each against a hostile PR."""

import ast
import io
import json
import os
import random
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
    VALUES,
    card_json,
    clean_files,
    per_study_parquet,
    predictions_jsonl,
    refused,
    result_json,
    touched,
    write,
)

from rexrank.errors import InputError
from rexrank.results import ModelInfo, Result
from rexrank.rules import (
    Checked,
    SubmissionRejected,
    Touched,
    check_per_study,
    check_predictions,
    check_result,
    check_submission,
    contents,
    layout,
    limits,
    parquet,
    parse_json,
)
from rexrank.scorers.bleu import Bleu2
from rexrank.text import safe_url, sanitize_text, to_html, to_markdown


def sizes(paths: list[str], size: int = 100) -> list[tuple[str, int]]:
    return [(p, size) for p in paths]


# -- a clean submission passes, in each form ---------------------------------------------------------------------

def test_a_clean_folder_passes_and_comes_back_parsed(tmp_path):
    checked = check_submission(write(tmp_path, clean_files()), SID)
    assert isinstance(checked, Checked) and checked.contents_checked
    assert checked.card.name == "Model" and checked.card.url == "https://example.org/model"
    assert checked.card.trained_on == ("mimic-cxr",) and checked.card.paper_url is None
    assert checked.results[("mimic-cxr", "findings")].model.name == "Model"
    assert checked.predictions[("mimic-cxr", "findings")] == tuple(STUDIES)
    assert checked.predictions[("rexgradient", "findings_impression")] == ("g1", "g2")
    assert checked.per_study[("mimic-cxr", "findings")] == tuple(STUDIES)
    assert set(checked.paths) == set(clean_files()) and checked.deleted == ()


def test_a_clean_path_list_passes_without_and_with_its_files(tmp_path):
    files = clean_files()
    structure = check_submission(touched(files), SID)
    assert not structure.contents_checked and structure.card is None and structure.results == {}
    assert set(structure.paths) == set(files)
    as_tuples = check_submission([(p, len(d)) for p, d in files.items()], SID)
    assert as_tuples.paths == structure.paths
    full = check_submission(touched(files), SID, root=write(tmp_path, files))
    assert full.contents_checked and full.card.name == "Model"
    assert full.predictions[("mimic-cxr", "findings")] == tuple(STUDIES)


# -- rule 1: one submission folder, its owner -------------------------------------------------------------------

@pytest.mark.parametrize(("path", "message"), [
    ("README.md", "README.md: maintainers only"),
    ("leaderboard.parquet", "leaderboard.parquet: maintainers only"),
    ("submissions/other-lab/submission.json", "in another submission's folder submissions/other-lab/"),
    ("submissions/other-lab/results/mimic-cxr.findings.json", "another submission's folder"),
    ("imported/mimic-cxr.findings.json", "outside submissions/lab-model/"),
    ("space/app.py", "outside submissions/lab-model/"),
    ("submissions/submission.json", "outside submissions/lab-model/"),
    (f"{SID}/submission.json", "outside submissions/lab-model/"),
])
def test_a_pr_touches_its_own_folder_only(path, message):
    files = touched(clean_files()) + [Touched(path, 100)]
    err = refused(files, SID)
    assert message in str(err)
    assert len(err.problems) == 1  # the clean files are not blamed


@pytest.mark.parametrize("path", ["README.md", "leaderboard.parquet", "submissions/other-lab/submission.json",
                                  "submissions/other-lab/predictions/iu-xray.findings.jsonl"])
def test_no_deletion_outside_its_folder(path):
    err = refused(touched(clean_files()) + [Touched(path, 0, "deleted")], SID, owner="alice", author="alice")
    assert f"{path}: " in str(err)
    assert "maintainers only" in str(err) or "another submission's folder" in str(err)


def test_an_existing_folder_changes_only_by_its_owner():
    update = [Touched(f"{BASE}/results/iu-xray.findings.json", 900, "added"),
              Touched(f"{BASE}/submission.json", 300, "modified"),
              Touched(f"{BASE}/predictions/mimic-cxr.findings.jsonl", 0, "deleted")]
    checked = check_submission(update, SID, owner="alice", author="alice")
    assert checked.deleted == (f"{BASE}/predictions/mimic-cxr.findings.jsonl",)
    for author in ("mallory", None, "Alice"):
        err = refused(update, SID, owner="alice", author=author)
        assert "belongs to 'alice'" in str(err) and "may not change it" in str(err)


def test_a_new_folder_only_adds_files_and_carries_its_card():
    files = touched(clean_files())
    files[0] = Touched(files[0].path, files[0].size, "modified")
    files.append(Touched(f"{BASE}/results/iu-xray.findings.json", 0, "deleted"))
    err = refused(files, SID)  # owner None: the id is new
    assert f"{BASE}/submission.json: modified, but {BASE}/ is a new submission" in str(err)
    assert "iu-xray.findings.json: deleted, but" in str(err)
    err = refused([Touched(f"{BASE}/predictions/iu-xray.findings.jsonl", 10)], SID)
    assert "submission.json: missing (a new submission needs its card)" in str(err)
    err = refused([Touched(f"{BASE}/submission.json", 10)], SID)
    assert "no results/ or predictions/ file" in str(err)


def test_the_card_is_never_deleted_and_an_empty_pr_is_refused():
    err = refused([Touched(f"{BASE}/submission.json", 0, "deleted")], SID, owner="alice", author="alice")
    assert "the card can be replaced, not deleted" in str(err)
    assert "changes nothing" in str(refused([], SID))


def test_a_bad_submission_id_is_refused_before_anything():
    for bad in ("Lab-Model", "-lab", "lab-", "a" * 65, "../x", "lab_model", "", "la\u202eb"):
        err = refused(touched(clean_files()), bad)
        assert "is not 1-64 lower-case letters" in str(err)
        assert "\u202e" not in str(err)


# -- rule 2: paths -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "message"), [
    (f"{BASE}/../other-lab/submission.json", "'..' segment"),
    (f"{BASE}/results/../submission.json", "'..' segment"),
    (f"{BASE}/./submission.json", "'.' segment"),
    ("/etc/passwd", "absolute path"),
    (f"/{BASE}/submission.json", "absolute path"),
    ("C:/submissions/x", "absolute path"),
    (f"{BASE}\\submission.json", "backslash"),
    (f"submissions//{SID}/submission.json", "empty path segment"),
    (f"{BASE}/results/", "empty path segment"),
    (f"{BASE}/.gitattributes", "hidden file"),
    (f"{BASE}/results/.x/mimic-cxr.findings.json", "hidden file"),
    (f"{BASE}/submission.json\x00.txt", "NUL character"),
    (f"{BASE}/sub\x1bmission.json", "control character"),
    (f"{BASE}/results/mimic-cxr.findings\u202enosj.json", "bidirectional formatting character"),
    (f"{BASE}/submission\u200b.json", "invisible or bidirectional formatting"),
    (f"{BASE}/results/mimic-cxr.finde\u0301ings.json", "not NFC-normalised"),
    (f"{BASE}/submissi\u043en.json", "non-ASCII"),  # a Cyrillic o
    (f"{BASE}/Submission.json", "names are lower case"),
    (f"{BASE}/results/MIMIC-CXR.findings.json", "names are lower case"),
    (f"{BASE}/submission.json.bak", "not a file of the submission layout"),
    (f"{BASE}/model.safetensors", "not a file of the submission layout"),
    (f"{BASE}/results/mimic-cxr.findings.json/x", "not a file of the submission layout"),
    (f"{BASE}/results/no-such-set.findings.json", "unknown dataset 'no-such-set'"),  # not a plausible next set
    (f"{BASE}/results/mimic-cxr.impression.json", "unknown task 'impression'"),
    (f"{BASE}/results/mimic-cxr.findings.jsonl", "results/ holds .json files, not .jsonl"),
    (f"{BASE}/per_study/mimic-cxr.findings.pkl", "not a file of the submission layout"),
    (f"{BASE}/per_study/rexgradient.findings.parquet", "rexgradient is private: its per-study scores"),
    (f"{BASE}/results/rexgradient.findings.json", "rexgradient is private: its result is written"),
    ("a" * 300, "path longer than 256"),
])
def test_hostile_paths_are_refused(path, message):
    err = refused(touched(clean_files()) + [Touched(path, 100)], SID)
    assert message in str(err)
    for raw in ("\x00", "\x1b", "\u202e", "\u200b"):  # the message shows them escaped, never raw
        assert raw not in str(err)


def test_every_problem_is_listed():
    paths = ["README.md", f"{BASE}/../x", f"{BASE}/.env", "submissions/other-lab/submission.json"]
    err = refused(touched(clean_files()) + [Touched(p, 10) for p in paths], SID)
    assert "4 problem(s)" in str(err) and len(err.problems) == 4
    assert [p.split(":")[0] for p in err.problems] == paths
    assert isinstance(err, InputError)


def test_symlinks_in_a_folder_are_refused_and_never_followed(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text('{"name": "TOP-SECRET-TOKEN"}')
    root = write(tmp_path / "pr", {k: v for k, v in clean_files().items() if not k.endswith("submission.json")})
    (root / BASE / "submission.json").symlink_to(secret)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, {"iu-xray.findings.json": result_json("iu-xray")})
    (root / BASE / "results").rename(tmp_path / "moved")
    (root / BASE / "results").symlink_to(elsewhere, target_is_directory=True)
    err = refused(root, SID)
    assert f"{BASE}/submission.json: a symlink" in str(err)
    assert f"{BASE}/results: a symlink" in str(err)
    assert "TOP-SECRET-TOKEN" not in str(err) and "iu-xray" not in str(err)


def test_symlinks_under_a_root_are_refused(tmp_path):
    files = clean_files()
    root = write(tmp_path / "pr", files)
    secret = tmp_path / "secret.json"
    secret.write_bytes(files[f"{BASE}/results/mimic-cxr.findings.json"])
    (root / BASE / "results" / "mimic-cxr.findings.json").unlink()
    (root / BASE / "results" / "mimic-cxr.findings.json").symlink_to(secret)
    err = refused(touched(files), SID, root=root)
    assert f"{BASE}/results/mimic-cxr.findings.json: a symlink" in str(err)
    (root / BASE / "predictions").rename(tmp_path / "predictions")
    (root / BASE / "predictions").symlink_to(tmp_path / "predictions", target_is_directory=True)
    err = refused(touched(files), SID, root=root)
    assert f"{BASE}/predictions is a symlink" in str(err)


def test_special_files_are_refused_without_blocking(tmp_path):
    files = clean_files()
    root = write(tmp_path / "pr", files)
    fifo = root / BASE / "predictions" / "iu-xray.findings.jsonl"
    os.mkfifo(fifo)
    assert "iu-xray.findings.jsonl: not a regular file" in str(refused(root, SID))
    listed = touched(files) + [Touched(f"{BASE}/predictions/iu-xray.findings.jsonl", 10)]
    err = refused(listed, SID, root=root)  # opening a pipe would wait for a writer: it must not
    assert "iu-xray.findings.jsonl: not a regular file" in str(err)


def test_a_listed_file_missing_from_the_root_is_refused(tmp_path):
    files = clean_files()
    root = write(tmp_path / "pr", {k: v for k, v in files.items() if "rexgradient" not in k})
    err = refused(touched(files), SID, root=root)
    assert "rexgradient.findings_impression.jsonl: listed but not in the downloaded folder" in str(err)


# -- rule 3: sizes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "size", "limit"), [
    ("submission.json", 16 * 1024 + 1, 16 * 1024),
    ("results/mimic-cxr.findings.json", 1024 * 1024 + 1, 1024 * 1024),
    ("per_study/iu-xray.findings.parquet", 64 * 1024 * 1024 + 1, 64 * 1024 * 1024),
    ("predictions/iu-xray.findings.jsonl", 64 * 1024 * 1024 + 1, 64 * 1024 * 1024),
])
def test_each_kind_of_file_has_a_size_bound(name, size, limit):
    err = refused([Touched(f"{BASE}/{name}", size)] + [t for t in touched(clean_files()) if not t.path.endswith(name)],
                  SID)
    assert f"{BASE}/{name}: {size} bytes, more than the {limit} allowed" in str(err)


def test_total_bytes_and_file_count_are_bounded():
    every = [f"{BASE}/predictions/{d}.{t}.jsonl" for d in layout.DATASETS for t in layout.TASKS]
    err = refused(sizes([f"{BASE}/submission.json"], 100) + sizes(every, 60 * 1024 * 1024), SID)
    assert "bytes in all, more than the 268435456 allowed" in str(err)
    assert layout.MAX_FILES == 32 + 200  # the results layout's 26 with room, and a code submission's model/ folder
    many = sizes([f"{BASE}/submission.json"]) + sizes([f"{BASE}/x{i}" for i in range(layout.MAX_FILES + 8)])
    assert any(f"{layout.MAX_FILES + 9} paths touched, more than the {layout.MAX_FILES}" in p
               for p in refused(many, SID).problems)
    flood = refused(sizes([f"{BASE}/x{i}" for i in range(100_000)]), SID)
    assert f"more than {4 * layout.MAX_FILES} touched paths listed (stopped looking)" in str(flood)
    lines = str(flood).splitlines()  # a flood of paths does not make a flood of a message: MAX_LISTED short lines
    assert len(lines) <= layout.MAX_LISTED + 2 and max(map(len, lines)) < 300


def test_sizes_must_be_byte_counts_and_match_the_files(tmp_path):
    files = clean_files()
    err = refused([Touched(f"{BASE}/submission.json", -1), Touched(f"{BASE}/predictions/iu-xray.findings.jsonl", 0),
                   (f"{BASE}/results/iu-xray.findings.json", "12")], SID)
    assert "submission.json: size -1 is not a byte count" in str(err)
    assert "iu-xray.findings.jsonl: empty file" in str(err)
    assert "iu-xray.findings.json: size '12' is not a byte count" in str(err)
    listed = [Touched(t.path, 50 if t.path.endswith("submission.json") else t.size) for t in touched(files)]
    err = refused(listed, SID, root=write(tmp_path, files))
    assert f"{BASE}/submission.json: {len(files[f'{BASE}/submission.json'])} bytes, but the pull request lists 50" \
        in str(err)


def test_an_oversized_file_on_disk_is_refused_before_parsing(tmp_path):
    files = clean_files() | {f"{BASE}/results/iu-xray.findings.json": b"[" * (1024 * 1024 + 1)}
    err = refused(write(tmp_path, files), SID)
    assert "iu-xray.findings.json: 1048577 bytes, more than the 1048576 allowed" in str(err)
    assert "nested" not in str(err)


# -- rule 4: contents parsed with limits --------------------------------------------------------------------------

def folder_with(tmp_path, name: str, data: bytes) -> SubmissionRejected:
    return refused(write(tmp_path, clean_files() | {f"{BASE}/{name}": data}), SID)


@pytest.mark.parametrize(("data", "message"), [
    (b'{"name": "A", "name": "B"}', "key 'name' appears more than once"),
    (card_json(url="javascript:alert(1)"), "url: not an http(s) URL"),
    (card_json(url="https://user:pw@example.org"), "url: not an http(s) URL"),
    (card_json(name="A\nB"), "name: control or invisible formatting characters"),
    (card_json(name="Model\u202e"), "name: control or invisible formatting characters"),
    (card_json(name="x" * 10_000), "name: 10000 characters, more than 100"),
    (card_json(name="   "), "name: empty"),
    (card_json(name=7), "name: expected text, got int"),
    (card_json(date="yesterday"), "date: 'yesterday' is not YYYY-MM-DD"),
    (card_json(date="2025-02-30"), "is not YYYY-MM-DD"),
    (card_json(trained_on="mimic-cxr"), "trained_on: expected a list of text"),
    (card_json(trained_on=["x"] * 40), "trained_on: 40 entries, more than 32"),
    (card_json(trained_on=[1, "x"]), "trained_on: expected a list of text"),
    (card_json(trained_on=[["nested"]]), "nested deeper than 2 levels"),
    (card_json(script="<script>alert(1)</script>"), "unknown field 'script'"),
    (card_json(code="javascript:alert(1)"), "code: not an http(s) URL"),
    (card_json(access="open"), "access: 'open' is not one of open-weights, api"),
    (card_json(access="<b>api</b>"), "access: '<b>api</b>' is not one of open-weights, api"),
    (json.dumps({"institution": "Lab"}).encode(), "name: missing"),
    (b'["name"]', "expected a JSON object, got list"),
    (b'{"name": NaN}', "NaN is not a JSON number"),
    (b'{"name": "A", "x": [' + b"1," * 300 + b"1]}", "more than 256 JSON members"),
    (b'{"name": [[["deep"]]]}', "nested deeper than 2 levels"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b'\xef\xbb\xbf{"name": "A"}', "not valid JSON"),
    (b'{"name": "A"', "not valid JSON"),
])
def test_card_contents_are_checked(tmp_path, data, message):
    err = folder_with(tmp_path, "submission.json", data)
    assert f"{BASE}/submission.json: " in str(err) and message in str(err)


def test_card_text_is_sanitised_on_the_way_in(tmp_path):
    card = card_json(institution="Lab\u00a0\u00a0of   Things", paper="https://arxiv.org/abs/2401.00001",
                     trained_on=["  mimic-cxr ", "iu\u3000xray", ""], code="https://github.com/lab/model",
                     access="open-weights")
    checked = check_submission(write(tmp_path, clean_files() | {f"{BASE}/submission.json": card}), SID)
    assert checked.card.code == "https://github.com/lab/model" and checked.card.access == "open-weights"
    assert checked.card.institution == "Lab of Things"
    assert checked.card.trained_on == ("mimic-cxr", "iu xray")
    assert checked.card.paper_url == "https://arxiv.org/abs/2401.00001"


def result_with(edit) -> bytes:
    data = json.loads(result_json())
    edit(data)
    return json.dumps(data).encode()


@pytest.mark.parametrize(("data", "message"), [
    (result_json().replace(b'"n": 6', b'"n": NaN', 1), "NaN is not a JSON number"),
    (result_json().replace(b'"n": 6', b'"n": -Infinity', 1), "-Infinity is not a JSON number"),
    (result_json().replace(b'"n": 6', b'"n": 1e999', 1), "number 1e999 overflows"),
    (result_json().replace(b'"n": 6', b'"n": ' + b"9" * 5000, 1), "integer of 5000 digits"),
    (result_json().replace(b'"split": "test"', b'"split": "test", "split": "train"', 1),
     "key 'split' appears more than once"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 32 levels"),
    (b"[" * 40 + b"]" * 40, "nested deeper than 32 levels"),
    (b"[" + b"0," * 60_000 + b"0]", "more than 50000 JSON members"),
    (result_json("iu-xray"), "holds iu-xray.findings, but the file name says mimic-cxr.findings"),
    (result_json(task="findings_impression"), "holds mimic-cxr.findings_impression, but the file name says"),
    (result_with(lambda d: d["metrics"]["bleu2"].pop("signature_detail")), "a scored number must carry"),
    (result_with(lambda d: d.update(schema_version=2)), "schema_version 2 is not 1"),
    (result_with(lambda d: d.update(provenance="imported")), "provenance 'imported': a submission carries scored"),
    (result_with(lambda d: d["metrics"]["bleu2"]["signature_detail"].update(settings=[1])),
     "malformed result (AttributeError)"),
    (result_with(lambda d: d["model"].update(url="javascript:alert(1)")), "model.url: not an http(s) URL"),
    (result_with(lambda d: d["model"].update(institution={"x": 1})), "model.institution: expected text, got dict"),
    (result_with(lambda d: d["model"].update(name="n" * 5000)), "model.name: 5000 characters, more than 100"),
])
def test_result_contents_are_checked(tmp_path, data, message):
    err = folder_with(tmp_path, "results/mimic-cxr.findings.json", data)
    assert f"{BASE}/results/mimic-cxr.findings.json: " in str(err) and message in str(err)


def test_result_messages_quote_short_escaped_snippets_only(tmp_path):
    secret = "SECRET" * 2000 + "\u202e\x1b"
    err = folder_with(tmp_path, "results/mimic-cxr.findings.json", result_with(lambda d: d.update(task=secret)))
    assert "task: " in str(err)
    assert "SECRET" * 30 not in str(err) and "\u202e" not in str(err) and "\x1b" not in str(err)
    assert len(str(err)) < 2000


def test_hostile_results_give_a_message_never_a_crash():
    base = json.loads(result_json())
    rng = random.Random(7)
    values = [None, True, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"a": None}, "javascript:alert(1)"]
    outcomes = set()
    for _ in range(400):
        data = json.loads(json.dumps(base))
        for _ in range(rng.randint(1, 3)):  # replace or delete a node somewhere in the tree
            parent, key = data, None
            node = data
            while isinstance(node, dict | list) and node and rng.random() < 0.7:
                key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
                parent, node = node, node[key]
            if key is None:
                continue
            if isinstance(parent, dict) and rng.random() < 0.3:
                parent.pop(key)
            else:
                parent[key] = rng.choice(values)
        try:
            check_result(json.dumps(data).encode(), "mimic-cxr", "findings")
            outcomes.add("passed")
        except InputError:
            outcomes.add("refused")
    assert outcomes == {"passed", "refused"}


@pytest.mark.parametrize(("text", "message"), [
    ('{"study_id": "a", "prediction": "x"}\n{"study_id": "a", "prediction": "y"}\n',
     "line 2: study a already on line 1"),
    ('{"study_id": "a", "prediction": 3}\n', "line 1: prediction must be text, got int"),
    ('{"study_id": "a", "prediction": null}\n', "prediction must be text, got NoneType"),
    ('{"study_id": "a", "prediction": NaN}\n', "NaN is not a JSON number"),
    ('{"study_id": true, "prediction": "x"}\n', "study_id must be text or an integer, got bool"),
    ('{"study_id": "", "prediction": "x"}\n', "study_id must be 1 to 128 characters"),
    ('{"study_id": "a\\u202e", "prediction": "x"}\n', "has control or invisible characters"),
    ('{"study_id": "a", "prediction": "x", "model": "y"}\n', "unknown field 'model'"),
    ('{"study_id": "a", "prediction": "x", "study_id": "b"}\n', "key 'study_id' appears more than once"),
    ('{"study_id": "a"}\n', "needs study_id and prediction"),
    ('{"study_id": "a", "prediction": {"text": "x"}}\n', "nested deeper than 1 levels"),
    ('["a", "x"]\n', "expected a JSON object, got list"),
    ('{"study_id": "a", "prediction": "x"\n', "line 1: not valid JSON"),
    ("\n\n", "no predictions"),
])
def test_predictions_lines_are_checked(tmp_path, text, message):
    err = folder_with(tmp_path, "predictions/mimic-cxr.findings.jsonl", text.encode())
    assert f"{BASE}/predictions/mimic-cxr.findings.jsonl: " in str(err) and message in str(err)


def test_predictions_line_length_and_count_are_bounded(monkeypatch):
    long = json.dumps({"study_id": "a", "prediction": "x" * 70_000}).encode()
    with pytest.raises(InputError, match="line 2: longer than 65536 bytes"):
        check_predictions([b'{"study_id": "b", "prediction": "x"}', long])
    monkeypatch.setattr(contents, "MAX_LINES", 5)
    with pytest.raises(InputError, match="more than 5 lines"):
        check_predictions(predictions_jsonl([f"s{i}" for i in range(6)]).splitlines())
    assert check_predictions(predictions_jsonl([f"s{i}" for i in range(5)]).splitlines())[-1] == "s4"


def test_predictions_problems_are_capped_per_file():
    with pytest.raises(InputError) as err:
        check_predictions([b'{"study_id": "a", "prediction": 1}'] * 1000)
    assert str(err.value).count("prediction must be text") == limits.MAX_PROBLEMS_PER_FILE
    assert str(err.value).endswith("... and more (stopped looking)")


def test_predictions_tolerate_blank_lines_crlf_and_integer_ids(tmp_path):
    text = b'{"study_id": 12, "prediction": ""}\r\n\r\n{"study_id": "b", "prediction": "x"}'
    files = clean_files() | {f"{BASE}/predictions/iu-xray.findings.jsonl": text}
    assert check_submission(write(tmp_path, files), SID).predictions[("iu-xray", "findings")] == ("12", "b")


class Evil(pa.ExtensionType):
    def __init__(self):
        super().__init__(pa.int64(), "rexrank.test.evil")

    def __arrow_ext_serialize__(self):
        return b"payload"

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return Evil()


def evil_parquet() -> bytes:
    table = pa.table({"study_id": ["a", "b"], "x": pa.ExtensionArray.from_storage(Evil(), pa.array([1, 2]))})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def test_parquet_extension_types_are_refused_registered_or_not():
    pa.register_extension_type(Evil())
    try:
        data = evil_parquet()
        with pytest.raises(InputError, match="column 'x' is extension<rexrank.test.evil"):
            check_per_study(data)
    finally:
        pa.unregister_extension_type("rexrank.test.evil")
    with pytest.raises(InputError, match="column 'x' carries metadata"):
        check_per_study(data)


def arrow_parquet(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def with_pandas_meta(edit) -> bytes:
    table = pq.read_table(io.BytesIO(per_study_parquet()))
    meta = json.loads(table.schema.metadata[b"pandas"])
    edit(meta)
    return arrow_parquet(table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}))


def with_attrs() -> bytes:
    frame = pd.DataFrame({"study_id": ["a"], "bleu2": [0.5]})
    frame.attrs["callback"] = "os.system('x')"
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


@pytest.mark.parametrize(("data", "message"), [
    (arrow_parquet(pa.table({"study_id": ["a"], "scores": [[1.0, 2.0]]})), "column 'scores' is list<"),
    (arrow_parquet(pa.table({"study_id": ["a"], "blob": [b"\x80\x04K\x01."]})), "column 'blob' is binary"),
    (arrow_parquet(pa.table({"study_id": ["a"], "flag": [True]})), "column 'flag' is bool"),
    (arrow_parquet(pa.table({"study_id": ["a"], "s": pa.array([{"x": 1}])})), "column 's' is struct"),
    (arrow_parquet(pa.table({"study_id": pa.array(["a"]).dictionary_encode()})), "is dictionary"),
    (arrow_parquet(pa.table({"study_id": [1, 2]})), "study_id is not a text column"),
    (arrow_parquet(pa.table({"id": ["a"]})), "no study_id column"),
    (arrow_parquet(pa.table({"study_id": ["a", "a"]})), "row 1: study a listed twice"),
    (arrow_parquet(pa.table({"study_id": ["a", None]})), "row 1: study_id is null"),
    (arrow_parquet(pa.table({"study_id": ["a\x1b"]})), "has control or invisible characters"),
    (arrow_parquet(pa.table([pa.array(["a"]), pa.array([1.0]), pa.array([2.0])], names=["study_id", "x", "x"])),
     "column name 'x' is empty, too long, repeated"),
    (arrow_parquet(pa.table({"study_id": ["a"]}).replace_schema_metadata({b"huggingface": b"{}"})),
     "unexpected file metadata 'huggingface'"),
    (with_pandas_meta(lambda m: m["columns"][1].update(pandas_type="categorical")), "column type categorical"),
    (with_pandas_meta(lambda m: m["columns"][1].update(numpy_type="datetime64[ns]")), "is not text or a number"),
    (with_pandas_meta(lambda m: m["columns"][1].update(metadata={"reader": "custom"})), "carries extra metadata"),
    (with_pandas_meta(lambda m: m.update(hook="x")), "pandas metadata with unexpected entries"),
    (with_attrs(), "unexpected file metadata 'PANDAS_ATTRS'"),
    (with_pandas_meta(lambda m: m.update(attributes={"callback": "x"})), "pandas metadata carries frame attributes"),
    (b"\x80\x04\x95" + b"\x00" * 64, "not a readable parquet file"),
    (per_study_parquet()[:-20], "not a readable parquet file"),
])
def test_per_study_tables_are_checked(tmp_path, data, message):
    err = folder_with(tmp_path, "per_study/mimic-cxr.findings.parquet", data)
    assert f"{BASE}/per_study/mimic-cxr.findings.parquet: " in str(err) and message in str(err)


def test_per_study_rows_and_uncompressed_size_are_bounded(monkeypatch):
    monkeypatch.setattr(parquet, "MAX_ROWS", 4)
    with pytest.raises(InputError, match="6 rows, more than 4"):
        check_per_study(per_study_parquet())
    monkeypatch.setattr(parquet, "MAX_ROWS", 100)
    monkeypatch.setattr(parquet, "MAX_UNCOMPRESSED", 10)
    with pytest.raises(InputError, match="bytes uncompressed, more than 10"):
        check_per_study(per_study_parquet())


def test_per_study_tables_pass_with_an_index_and_legacy_pandas_notes():
    frame = pd.DataFrame({"study_id": ["a", "b"], "bleu2": [0.1, 0.2], "n": [1, 2]}, index=[5, 6])
    buffer = io.BytesIO()
    frame.to_parquet(buffer)  # keeps the index as a column
    assert check_per_study(buffer.getvalue()) == ("a", "b")
    legacy = with_pandas_meta(lambda m: m["columns"][0].update(pandas_type="unicode", numpy_type="object"))
    assert check_per_study(legacy) == tuple(STUDIES)


def test_per_study_studies_must_be_predicted(tmp_path):
    err = folder_with(tmp_path, "per_study/mimic-cxr.findings.parquet", per_study_parquet(["s0", "zz", "yy"]))
    assert "per_study/mimic-cxr.findings.parquet: its 3 studies are not the 6 predicted ones" in str(err)


def test_parse_json_bounds_bytes_before_parsing():
    bounds = limits.JsonLimits(max_bytes=10, max_depth=3, max_items=10)
    with pytest.raises(InputError, match="11 bytes of JSON, more than the 10 allowed"):
        parse_json(b"[" * 11, bounds)
    assert parse_json(b'{"a": [1]}', bounds) == {"a": [1]}


# -- rule 5: nothing from a PR is executed ----------------------------------------------------------------------

@pytest.mark.parametrize("module", sorted(p.name for p in Path(layout.__file__).parent.glob("*.py")))
def test_the_rules_never_deserialise_or_execute(module):
    source = (Path(layout.__file__).parent / module).read_text(encoding="utf-8")
    for name in ("pickle", "torch.load", "read_pickle", "yaml.load", "yaml.unsafe", "marshal", "shelve", "dill",
                 "joblib", "to_pandas", "import pandas", "import torch"):
        assert name not in source.lower(), name
    called, methods = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else "?"
            methods.add(f"{owner}.{node.func.attr}")
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            assert not {"pickle", "yaml", "torch", "pandas", "importlib", "subprocess", "ctypes"} & {
                m.split(".")[0] for m in modules}, modules
    assert not called & {"eval", "exec", "compile", "__import__", "breakpoint", "getattr"}, called
    assert {m for m in methods if m.split(".")[1] in ("load", "loads", "compile", "system", "popen", "run")} <= {
        "json.loads", "re.compile"}, methods


# -- rule 6: text and links that reach the board -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("  Model\n\tv2  ", "Model v2"),
    ("Mo\u200bdel\u200d", "Model"),
    ("Model\u202e2v", "Model2v"),
    ("A\x00B\x1bC\x7f", "ABC"),
    ("\u3164\u2800", ""),
    ("line\u2028break", "line break"),
    ("e\u0301", "\u00e9"),  # NFC
    ("a" + "\u0301" * 50, "\u00e1\u0301\u0301"),  # NFC, then at most two more combining marks stay
    (None, ""),
])
def test_sanitize_text(text, expected):
    assert sanitize_text(text, 100) == expected


def test_sanitize_text_bounds_length():
    assert sanitize_text("x" * 10_000, 100) == "x" * 99 + "\u2026"
    assert len(sanitize_text("word " * 10_000, 50)) == 50
    assert sanitize_text("abc", 0) == ""


@pytest.mark.parametrize(("text", "absent"), [
    ("<script>alert(1)</script>", ["<script", "</script"]),
    ("<img src=x onerror=alert(1)>", ["<img"]),
    ("[x](javascript:alert(1))", ["[x](", "](javascript"]),
    ("![x](https://evil.example/t.png)", ["![", "]("]),
    ("a | b | c", []),
    ("# Heading", []),
    ("**bold** _it_ `code`", ["**", " _it", "`code`"]),
    ("Model\n| x | y |\n|---|---|", ["\n"]),
    ("&lt;script&gt;", ["&lt;"]),
])
def test_to_markdown_leaves_nothing_active(text, absent):
    out = to_markdown(text)
    for fragment in absent:
        assert fragment not in out, (fragment, out)
    unescaped = out.replace("\\", "")
    for ch in "|[]()*_`#!<>":
        assert all(out[i - 1] == "\\" for i, c in enumerate(out) if c == ch), (ch, out)
    assert "<" not in unescaped and ">" not in unescaped


def test_to_markdown_and_to_html_examples():
    assert to_markdown("a|b <i>") == "a\\|b &lt;i&gt;"
    assert to_markdown("GPT-4 (v1.0)") == "GPT\\-4 \\(v1\\.0\\)"
    assert to_html('<script>alert("x")</script> & \'y\'') == \
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;y&#x27;"
    assert to_html("a\u200b\nb", 10) == "a b"
    assert len(to_html("<" * 10_000, 100)) == 4 * 99 + 1  # bounded before escaping
    assert to_markdown("\u202eevil") == "evil"


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "JavaScript:alert(1)", " https://example.org", "https://example.org/a b",
    "https://example.org/\"onmouseover=\"x", "https://example.org/<script>", "https://user:pw@example.org/",
    "https://@example.org", "data:text/html,<script>", "ftp://example.org", "//example.org", "https:example.org",
    "https:///path", "https://", "https://exa mple.org", "https://example.org\n", "https://ex\u0430mple.org",
    "https://example.org:99999/", "https://example.org:x/", "https://example.org/\\x", "https://exa_mple.org",
    "https://example.org/`x`", None, 42, "", "https://example.org/" + "a" * 3000, "https://[::1x]/",
    "vbscript:msgbox", "https://example.org\u202e/gpj.exe",
])
def test_safe_url_refuses(url):
    assert safe_url(url) is None


@pytest.mark.parametrize(("url", "expected"), [
    ("https://example.org", "https://example.org"),
    ("http://example.org/path?q=1&r=2#frag", "http://example.org/path?q=1&r=2#frag"),
    ("HTTPS://Example.org/A", "https://Example.org/A"),
    ("https://example.org:8443/x", "https://example.org:8443/x"),
    ("https://[2001:db8::1]/x", "https://[2001:db8::1]/x"),
    ("https://en.wikipedia.org/wiki/Foo_(bar)", "https://en.wikipedia.org/wiki/Foo_%28bar%29"),
    ("https://example.org/a)[x](javascript:alert(1)", "https://example.org/a%29%5Bx%5D%28javascript:alert%281%29"),
])
def test_safe_url_accepts_http_links(url, expected):
    assert safe_url(url) == expected
    assert not any(c in safe_url(url).split("//", 1)[1].split("/", 1)[-1] for c in "()[]")


def test_what_rexrank_score_writes_passes(tmp_path):
    """The rules accept the files `rexrank score` really writes (result, pandas-written table, predictions)."""
    from fixtures.outputs import written as written_file

    import rexrank.demo
    from rexrank.result_set import score_file

    demo = Path(rexrank.demo.__file__).parent
    out = tmp_path / "out"
    out.mkdir()
    score_file(demo / "predictions" / "demo-careful.findings.jsonl", str(demo / "dataset.jsonl"), "findings",
               ["bleu2"], out, ModelInfo("Demo careful", "Lab", "https://example.org"), dataset_name="iu-xray",
               resamples=50)
    written = {f"{BASE}/results/iu-xray.findings.json": "iu-xray.findings.json",
               f"{BASE}/per_study/iu-xray.findings.parquet": "iu-xray.findings.per_study.parquet",
               f"{BASE}/predictions/iu-xray.findings.jsonl": "iu-xray.findings.predictions.jsonl"}
    files = {path: written_file(out, name).read_bytes() for path, name in written.items()} | {
        f"{BASE}/submission.json": card_json(name="Demo careful")}
    checked = check_submission(write(tmp_path / "pr", files), SID)
    key = ("iu-xray", "findings")
    assert checked.results[key].metrics["bleu2"].n == len(checked.per_study[key].ids) > 0
    assert sorted(checked.per_study[key].ids) == sorted(checked.predictions[key])


# -- rule 4b: submitted numbers are what rexrank would have written ------------------------------------------------

def bleu_edit(**fields):
    """An edit of the result's bleu2 entry."""
    def edit(data):
        data["metrics"]["bleu2"].update(fields)
    return edit


def renamed_metric(name):
    def edit(data):
        data["metrics"][name] = data["metrics"].pop("bleu2")
    return edit


def stale_version(data):
    detail = data["metrics"]["bleu2"]["signature_detail"]
    detail["version"] = "0"
    data["metrics"]["bleu2"]["signature"] = data["metrics"]["bleu2"]["signature"].replace("bleu2:1|", "bleu2:0|")


MEAN = float(VALUES.mean())


@pytest.mark.parametrize(("edit", "table", "message"), [
    (bleu_edit(value=1.5, mean=1.5, ci=[1.4, 1.6]), None, "mean 1.5 is outside [0.0, 1.0], the range of bleu2"),
    (bleu_edit(ci=[MEAN + 0.1, MEAN + 0.2]), None, "is outside its own CI"),
    (bleu_edit(value=0.9), None, "value 0.9 is not its mean"),
    (bleu_edit(n=-1), None, "n -1 is not from 1 to the 6 studies scored"),
    (bleu_edit(n=60), None, "n 60 is not from 1 to the 6 studies scored"),
    (bleu_edit(statistic="inverse_mean"), None, "statistic inverse_mean, bleu2's is mean"),
    (bleu_edit(value=MEAN + 0.01, mean=MEAN + 0.01, ci=[0.0, 1.0]), None, "the table's mean"),
    (renamed_metric("bleu2 |\n\n## \u2705 Safe to merge [ok](https://evil.example)"), None, "unknown metric"),
    (renamed_metric("radcliq_v1"), None, "its signature is not radcliq_v1's"),
    (stale_version, None, "made by bleu2 version 0, this rexrank's is 1: re-score"),
    (lambda d: d["counts"].update(scored=-3), None, "counts.scored: -3 is negative"),
    (lambda d: d.update(metrics={}), None, "metrics: none"),
    (None, per_study_parquet(**{"green.a": [1.0] * 6}), "unexpected column 'green.a'"),
    (None, per_study_parquet(bleu2=[0, 0, 0, 1, 1, 1]), "column 'bleu2' is int64, expected double"),
    (None, per_study_parquet(bleu2=VALUES * 3), "the table's mean"),
    (None, arrow_parquet(pa.table({"study_id": STUDIES})), "missing column 'bleu2'"),
])
def test_submitted_numbers_must_be_what_rexrank_writes(tmp_path, edit, table, message):
    files = clean_files()
    if edit is not None:
        files[f"{BASE}/results/mimic-cxr.findings.json"] = result_with(edit)
    if table is not None:
        files[f"{BASE}/per_study/mimic-cxr.findings.parquet"] = table
    err = refused(write(tmp_path, files), SID)
    assert message in str(err)


def test_a_result_is_checked_against_its_table_and_predictions(tmp_path):
    files = clean_files()
    del files[f"{BASE}/per_study/mimic-cxr.findings.parquet"]
    err = refused(write(tmp_path, files), SID)
    assert "results/mimic-cxr.findings.json: without its per-study table and predictions" in str(err)


def test_a_judged_metric_keeps_its_detail_columns_and_every_study_has_a_score(tmp_path):
    from rexrank.scorecard import estimates
    from rexrank.scorers import green
    from rexrank.signature import Signature

    scores = [0.5, 0.0, 0.25, 1.0, 0.0, 0.0]  # two studies the judge's answer was not read for, at GREEN's worst
    table = pd.DataFrame({"study_id": STUDIES, "bleu2": VALUES, "green": scores,
                          **{f"green.{k}": [1, None, 2, 0, 3, None] for k in green.COUNT_KEYS},
                          "green.problem": [None, "unparseable", None, None, None, "cut"],
                          "green.contradicted": [0] * 6})  # rule 22's column: no verdict contradicted
    signatures = {"bleu2": Bleu2().signature(), "green": Signature("green", green.VERSION)}
    metrics = estimates(table, signatures, resamples=50, seed=1)
    result = Result(ModelInfo("Model", "Lab"), "mimic-cxr", "test", "findings", metrics, counts={"scored": 6})

    def submitted(frame):
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return clean_files() | {f"{BASE}/results/mimic-cxr.findings.json": json.dumps(result.to_dict()).encode(),
                                f"{BASE}/per_study/mimic-cxr.findings.parquet": buffer.getvalue()}

    checked = check_submission(write(tmp_path / "ok", submitted(table)), SID)
    assert checked.results[("mimic-cxr", "findings")].metrics["green"].n == 6
    # a study left without a score (NaN) is what an unread study was before it counted at the worst: refused
    unscored = table.assign(green=[0.5, np.nan, 0.25, 1.0, 0.0, np.nan])
    with pytest.raises(SubmissionRejected, match="green: studies without a score"):
        check_submission(write(tmp_path / "nan", submitted(unscored)), SID)
