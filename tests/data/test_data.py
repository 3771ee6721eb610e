import os
import signal

import pandas as pd
import pytest

from rexrank.data import InputError, align, load_predictions, load_split

SPLIT_JSON = """{
  "p10/s1": {"image_path": ["a.jpg"], "section_findings": "Heart size is normal.", "section_impression": NaN,
             "context": "cough", "split": "test"},
  "p10/s2": {"section_findings": "Small left effusion.", "section_impression": "Effusion.", "split": "test"},
  "p11/s3": {"section_findings": NaN, "section_impression": "No acute process.", "split": "test"}
}"""


@pytest.fixture
def split_json(tmp_path):
    path = tmp_path / "mimic_cxr_test.json"
    path.write_text(SPLIT_JSON)
    return path


def test_rexrank_split_json_with_bare_nan(split_json):
    split = load_split(split_json)
    assert split.dataset == "mimic_cxr_test" and split.split == "test"
    assert split.studies["study_id"].tolist() == ["p10/s1", "p10/s2", "p11/s3"]
    assert split.studies["impression"].tolist()[0] is None
    refs = split.references("findings_impression")
    assert refs.references["p10/s1"] == "Findings: Heart size is normal. Impression: None"
    assert refs.references["p11/s3"] == "Findings: None Impression: No acute process."


def test_parquet_folder_picks_the_split_by_file_name(tmp_path):
    folder = tmp_path / "iu-xray" / "data"
    folder.mkdir(parents=True)
    pd.DataFrame({"study_id": ["a", "b"], "findings": ["x.", None], "impression": ["y.", "z."]}).to_parquet(
        folder / "test-00000-of-00001.parquet")
    pd.DataFrame({"study_id": ["v"], "findings": ["x."], "impression": ["y."]}).to_parquet(
        folder / "valid-00000-of-00001.parquet")
    assert load_split(tmp_path / "iu-xray").studies["study_id"].tolist() == ["a", "b"]
    assert load_split(tmp_path / "iu-xray", split="valid").studies["study_id"].tolist() == ["v"]
    with pytest.raises(InputError, match="several splits here and none named 'train'"):
        load_split(tmp_path / "iu-xray", split="train")


def test_split_problems_are_named(tmp_path):
    bad = tmp_path / "bad.parquet"
    pd.DataFrame({"study_id": ["a"], "findings": ["x"]}).to_parquet(bad)
    with pytest.raises(InputError, match="missing column.*impression"):
        load_split(bad)
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"study_id": "a", "findings": "x", "impression": null}\n' * 2)
    with pytest.raises(InputError, match="appear more than once in the split: a"):
        load_split(twice)
    with pytest.raises(InputError, match="no such file or folder"):
        load_split(tmp_path / "nope")
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": {"section_findings": "x",}')
    with pytest.raises(InputError, match="broken.json: not valid JSON"):
        load_split(broken)


def studies(n: int = 2) -> pd.DataFrame:
    return pd.DataFrame({"study_id": [f"s{i}" for i in range(n)], "findings": ["x."] * n, "impression": ["y."] * n})


def test_a_parquet_linked_from_a_data_drive_is_followed(tmp_path):
    """A user's folder may keep its files elsewhere (a data drive; a Hub snapshot in the HF cache is links into its
    blobs): a link to a regular parquet file is read as the file itself."""
    drive, folder, copied = tmp_path / "drive", tmp_path / "iu-xray", tmp_path / "copied"
    for made in (drive, folder, copied):
        made.mkdir()
    studies(3).to_parquet(drive / "blob")
    (folder / "test-00000-of-00001.parquet").symlink_to(drive / "blob")
    (copied / "test-00000-of-00001.parquet").write_bytes((drive / "blob").read_bytes())
    pd.testing.assert_frame_equal(load_split(folder).studies, load_split(copied).studies)
    assert load_split(folder).studies["study_id"].tolist() == ["s0", "s1", "s2"]


def _link(target):
    def make(path):
        path.symlink_to(target(path.parent.parent) if callable(target) else target)
    return make


def _text_outside(root):
    (root / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")  # a system file's kind of text
    return root / "passwd"


SPOILED = {"link-to-a-text-file": (_link(_text_outside), "not a readable parquet file"),
           "link-to-/dev/zero": (_link("/dev/zero"), "not a regular file"),
           "dangling-link": (_link("/nonexistent/test.parquet"), "cannot be read (No such file or directory)"),
           "garbage": (lambda path: path.write_bytes(b"PAR1 not really"), "not a readable parquet file"),
           "fifo": (os.mkfifo, "not a regular file")}


@pytest.mark.parametrize("name", SPOILED)
def test_a_parquet_in_a_folder_that_is_not_a_parquet_file_is_one_error_naming_it(tmp_path, name):
    if name == "link-to-/dev/zero" and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    spoil, said = SPOILED[name]
    folder = tmp_path / "split"
    folder.mkdir()
    studies().to_parquet(folder / "test-00000-of-00002.parquet")
    spoil(folder / "test-00001-of-00002.parquet")

    def hung(*_):
        raise AssertionError(f"{name}: the reader waited on it")

    signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)  # a FIFO or a device read as a file never ends
    try:
        with pytest.raises(InputError) as raised:
            load_split(folder)
    finally:
        signal.alarm(0)
    message = str(raised.value)
    assert message.startswith(f"{folder / 'test-00001-of-00002.parquet'}") and said in message
    assert "\n" not in message and len(message) < 400
    if "link" in name:
        assert f"(a link to {os.path.realpath(folder / 'test-00001-of-00002.parquet')})" in message


def test_submission_json_tolerates_nan_and_refuses_repeated_studies(tmp_path):
    good = tmp_path / "sub.json"
    good.write_text('{"s1": {"section_findings": NaN, "model_prediction": "Normal."}, "s2": {"model_prediction": ""}}')
    assert load_predictions(good) == {"s1": "Normal.", "s2": ""}
    twice = tmp_path / "twice.json"
    twice.write_text('{"s1": {"model_prediction": "a"}, "s1": {"model_prediction": "b"}}')
    with pytest.raises(InputError, match="key 's1' appears more than once"):
        load_predictions(twice)
    missing = tmp_path / "missing.json"
    missing.write_text('{"s1": {"section_findings": "a"}}')
    with pytest.raises(InputError, match="study s1: no prediction or model_prediction field"):
        load_predictions(missing)


def test_jsonl_and_csv(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"study_id": "s1", "prediction": "A."}\n\n{"study_id": 7, "prediction": "B."}\n')
    assert load_predictions(jsonl) == {"s1": "A.", "7": "B."}
    jsonl.write_text('{"study_id": "s1", "prediction": "A."}\n{"study_id": "s1", "prediction": "B."}\n')
    with pytest.raises(InputError, match=r"p.jsonl:2: study s1 is predicted more than once"):
        load_predictions(jsonl)
    jsonl.write_text('{"study_id": "s1", "prediction": "A."}\n{"study_id": "s2", "prediction": \n')
    with pytest.raises(InputError, match=r"p.jsonl:2: not valid JSON"):
        load_predictions(jsonl)

    csv = tmp_path / "p.csv"
    csv.write_text('study_id,prediction\ns1,"Small effusion, left."\ns2,\n')
    assert load_predictions(csv) == {"s1": "Small effusion, left.", "s2": ""}
    csv.write_text("study_id,prediction\ns1,Small effusion, left.\n")
    with pytest.raises(InputError, match=r"p.csv:2: more fields than the header.*quote"):
        load_predictions(csv)
    csv.write_text("id,text\ns1,a\n")
    with pytest.raises(InputError, match=r"study_id and prediction \(or report, or findings and impression\), got "
                                         r"'id', 'text'"):
        load_predictions(csv)
    with pytest.raises(InputError, match="unknown predictions format '.txt'"):
        (tmp_path / "p.txt").write_text("x")
        load_predictions(tmp_path / "p.txt")


def test_align_lists_every_problem_by_study(split_json):
    refs = load_split(split_json).references("findings")
    predictions = {"p10/s1": float("nan"), "p10/s2": 3, "p99/s9": "Normal."}
    with pytest.raises(InputError) as err:
        align(refs, predictions, "sub.json")
    message = str(err.value)
    assert message.startswith("sub.json: 3 problem(s), nothing was scored:")
    assert "study p99/s9: predicted but not in the split" in message
    assert "study p10/s1: prediction is null/NaN" in message
    assert "study p10/s2: prediction must be text, got int 3" in message

    with pytest.raises(InputError, match="study p10/s2: in the split but has no prediction"):
        align(refs, {"p10/s1": "x"})


def test_align_keeps_split_order_counts_and_warns_on_empty(split_json):
    refs = load_split(split_json).references("findings")
    aligned = align(refs, {"p11/s3": "ignored", "p10/s2": "  ", "p10/s1": "Heart normal."})
    assert aligned.rows.to_dict("list") == {
        "study_id": ["p10/s1", "p10/s2"],
        "reference": ["Heart size is normal.", "Small left effusion."],
        "prediction": ["Heart normal.", "  "],
    }
    assert aligned.counts == {"split_studies": 3, "scored": 2, "dropped_by_task": 1, "empty_predictions": 1,
                              "ignored_predictions": 1}
    assert aligned.warnings == ["1 empty prediction(s), scored as the empty report: p10/s2"]


def test_many_problems_are_summarised(split_json):
    refs = load_split(split_json).references("findings_impression")
    extra = {f"x{i}": "a" for i in range(25)}
    with pytest.raises(InputError, match=r"28 problem\(s\)[\s\S]*\.\.\. and 18 more"):
        align(refs, extra)


def test_a_missing_file_is_not_mistaken_for_a_hub_id(tmp_path):
    with pytest.raises(InputError, match="results/test.parquet: no such file or folder"):
        load_split("results/test.parquet")
