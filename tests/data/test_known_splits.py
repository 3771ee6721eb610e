"""The split is known by its ids (issue 30 item 3): a split file whose study ids are an official split's is that
dataset and split, whatever it is called; a sample of one is named as a sample and refused by `rexrank submit`;
`--dataset-name` and `--split` that contradict the data are refused in one line. The reports are synthetic; only the
study ids are the official splits' (`src/rexrank/resources/splits/`)."""

import json

import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank.cli import main
from rexrank.data import InputError, load_split
from rexrank.data.known import official_ids
from rexrank.results import Result

MIMIC = official_ids("mimic-cxr", "test")
IU_TEST = official_ids("iu-xray", "test")
IU_VALID = official_ids("iu-xray", "valid")
CHEXPERT = official_ids("chexpert-plus", "valid")


def split_file(path, ids, split="test"):
    """A ReXrank-format split JSON of synthetic reports under `ids`; `split`: each record's split field (None: no
    field, as ReXrank's CheXpert Plus file)."""
    path.write_text(json.dumps({i: {"section_findings": f"Synthetic finding number {n}: a small left effusion.",
                                    "section_impression": "Synthetic impression.",
                                    **({"split": split} if split else {})} for n, i in enumerate(ids)}))
    return path


def predictions_for(path, ids):
    path.write_text("".join(json.dumps({"study_id": i, "prediction": "No acute cardiopulmonary process."}) + "\n"
                            for i in ids))
    return path


def score(tmp_path, dataset, ids, *more, out="out"):
    return main(["score", "--predictions", str(predictions_for(tmp_path / "preds.jsonl", ids)), "--dataset",
                 str(dataset), "--task", "findings", "--metrics", "bleu2", "--resamples", "10", "--out",
                 str(tmp_path / out), "--quiet", *more])


def submit(results):
    return main(["submit", "--results", str(results), "--name", "My Model", "--dry-run"])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.slow
@pytest.mark.parametrize(("file", "ids", "split", "dataset", "split_name"), [
    ("my_download.json", MIMIC, "test", "mimic-cxr", "test"),
    ("iu-xray.json", MIMIC, "test", "mimic-cxr", "test"),  # the ids win over the file's name
    ("ReXRank_CheXpertPlus.json", CHEXPERT, None, "chexpert-plus", "valid"),  # no split field: the ids say valid
    ("test_set.json", IU_TEST, "test", "iu-xray", "test"),
])
def test_an_official_split_under_any_name_is_that_dataset_and_submit_takes_it(tmp_path, capsys, file, ids, split,
                                                                               dataset, split_name):
    assert score(tmp_path, split_file(tmp_path / file, ids, split), ids) == 0
    result = Result.read(tmp_path / "out" / f"{dataset}.findings.preds.json")
    assert (result.dataset, result.split, result.counts["split_studies"]) == (dataset, split_name, len(ids))
    assert [p.name for p in (tmp_path / "out").glob("*.json")] == [f"{dataset}.findings.preds.json"]
    capsys.readouterr()
    assert submit(tmp_path / "out") == 0
    assert f"results/{dataset}.findings.json" in capsys.readouterr().out


def test_iu_xray_valid_is_known_by_its_ids_and_its_records_val_and_is_not_the_board_split(tmp_path, capsys):
    assert score(tmp_path, split_file(tmp_path / "ReXRank_IUXray_valid.json", IU_VALID, "val"), IU_VALID) == 0
    result = Result.read(written(tmp_path / "out", "iu-xray.findings.json"))
    assert (result.dataset, result.split) == ("iu-xray", "valid")
    capsys.readouterr()
    assert submit(tmp_path / "out") == 2
    assert "iu-xray.findings.preds.json: scored on the valid split; the leaderboard ranks IU-Xray test" in \
        capsys.readouterr().err


@pytest.mark.parametrize("file", ["mimic-cxr.json", "mimic_100.json"])
def test_a_sample_of_an_official_split_is_named_as_a_sample_and_submit_refuses_it(tmp_path, capsys, file):
    sample = MIMIC[:100]
    assert score(tmp_path, split_file(tmp_path / file, sample), sample) == 0
    name = "mimic-cxr-sample" if file == "mimic-cxr.json" else "mimic_100"  # never the official name
    result = Result.read(tmp_path / "out" / f"{name}.findings.preds.json")
    assert (result.dataset, result.split) == (name, "test")  # a sample of test is test data
    err = capsys.readouterr().err
    assert (f"100 of the 2,347 studies of the official MIMIC-CXR test split: not the official split, so named "
            f"{name}, not mimic-cxr") in err
    assert submit(tmp_path / "out") == 2
    err = capsys.readouterr().err
    if name == "mimic-cxr-sample":
        assert "mimic-cxr-sample.findings.preds.json: scored on a sample or an altered copy of the official " \
               "MIMIC-CXR test split" in err
    else:
        assert "mimic_100.findings.preds.json: not <dataset>.<task>.<model>.json for a rexrank dataset" in err


def test_a_sample_renamed_by_hand_as_the_official_result_is_refused_by_its_ids(tmp_path, capsys):
    """The file names are all `collect` goes by: a sample's three files renamed `mimic-cxr.*` by hand are still
    refused, by the predictions' ids and the split's size."""
    sample = MIMIC[:100]
    assert score(tmp_path, split_file(tmp_path / "sample.json", sample), sample) == 0
    out = tmp_path / "out"
    for made in out.glob("sample.findings.*"):
        made.rename(out / made.name.replace("sample.", "mimic-cxr.", 1))
    capsys.readouterr()
    assert submit(out) == 2
    assert ("mimic-cxr.findings.preds.json: scored on a split of 100 studies that is not the official MIMIC-CXR test "
            "split (2,347 studies, 100 of them predicted here)") in capsys.readouterr().err


def test_a_sample_with_the_official_name_asked_for_is_refused_in_one_line(tmp_path, capsys):
    sample = split_file(tmp_path / "sample.json", MIMIC[:100])
    assert score(tmp_path, sample, MIMIC[:100], "--dataset-name", "mimic-cxr") == 2
    assert one_line_error(capsys) == (
        f"rexrank: error: {sample}: --dataset-name mimic-cxr, but its study ids are 100 of the 2,347 of the official "
        "MIMIC-CXR test split: not that split (name a sample otherwise, e.g. --dataset-name mimic-cxr-sample)")
    assert not (tmp_path / "out").exists()
    assert score(tmp_path, sample, MIMIC[:100], "--dataset-name", "my-mimic-sample") == 0  # a name of one's own
    assert Result.read(written(tmp_path / "out", "my-mimic-sample.findings.json")).dataset == "my-mimic-sample"


@pytest.mark.slow
def test_a_dataset_name_contradicting_the_ids_is_refused_in_one_line(tmp_path, capsys):
    whole = split_file(tmp_path / "whole.json", MIMIC)
    assert score(tmp_path, whole, MIMIC, "--dataset-name", "iu-xray") == 2
    assert one_line_error(capsys) == (
        f"rexrank: error: {whole}: --dataset-name iu-xray, but its study ids are the official MIMIC-CXR test split's "
        "(2,347) (leave --dataset-name out: it is mimic-cxr)")
    assert score(tmp_path, whole, MIMIC, "--dataset-name", "mimic-cxr") == 0  # saying what it is is fine


@pytest.mark.parametrize(("ids", "field", "split", "said"), [
    (MIMIC, "test", "valid", "--split valid, but its records say split 'test' (leave --split out, or pass --split "
                             "test)"),
    (MIMIC, None, "valid", "--split valid, but its study ids are the official MIMIC-CXR test split's (2,347) (leave "
                           "--split out, or pass --split test)"),
    (MIMIC[:100], None, "valid", "--split valid, but its study ids are 100 of the 2,347 of the official MIMIC-CXR "
                                 "test split"),
    (CHEXPERT, None, "test", "--split test, but its study ids are the official CheXpert Plus valid split's (200)"),
    (IU_VALID, "test", None, "its records say split 'test', but its study ids are the official IU-Xray valid "
                             "split's (296)"),
])
def test_a_split_contradicting_the_records_or_the_ids_is_refused_in_one_line_naming_both(tmp_path, capsys, ids,
                                                                                          field, split, said):
    source = split_file(tmp_path / "split.json", ids, field)
    assert score(tmp_path, source, ids, *(("--split", split) if split else ())) == 2
    assert one_line_error(capsys).startswith(f"rexrank: error: {source}: {said}")
    assert not (tmp_path / "out").exists()


def test_the_splits_a_file_agrees_with_are_taken(tmp_path):
    assert load_split(split_file(tmp_path / "a.json", IU_VALID, "val"), "validation").split == "valid"
    assert load_split(split_file(tmp_path / "b.json", CHEXPERT, None), "valid").dataset == "chexpert-plus"
    synthetic = [f"synthetic-{n}" for n in range(3)]
    assert load_split(split_file(tmp_path / "c.json", synthetic, None)).split == "test"  # nothing says: test
    assert load_split(split_file(tmp_path / "d.json", synthetic, "val")).split == "valid"  # its records say


def test_records_naming_several_splits_are_refused(tmp_path):
    source = tmp_path / "mixed.json"
    source.write_text(json.dumps({"a": {"section_findings": "x.", "split": "test"},
                                  "b": {"section_findings": "y.", "split": "val"},
                                  "c": {"section_findings": "z.", "split": "test"}}))
    with pytest.raises(InputError, match=r"its records name several splits in their split field: test \(2\), "
                                         r"valid \(1\)"):
        load_split(source)


def test_a_folder_whose_files_name_another_split_than_its_ids_is_refused(tmp_path):
    folder = tmp_path / "iu" / "data"
    folder.mkdir(parents=True)
    pd.DataFrame({"study_id": IU_VALID, "findings": ["Synthetic."] * len(IU_VALID),
                  "impression": [None] * len(IU_VALID)}).to_parquet(folder / "test-00000-of-00001.parquet")
    with pytest.raises(InputError, match=r"its files are named for split 'test', but its study ids are the official "
                                         r"IU-Xray valid split's \(296\)"):
        load_split(tmp_path / "iu")
    (folder / "test-00000-of-00001.parquet").rename(folder / "validation-00000-of-00001.parquet")
    split = load_split(tmp_path / "iu")
    assert (split.dataset, split.split, split.notes) == ("iu-xray", "valid", ())


def test_a_stand_in_under_an_official_name_is_scored_with_a_warning(tmp_path, capsys):
    """Ids that are no official split's (a synthetic stand-in) may carry an official name, as the demo does in the
    submission tests: the maintainers' review scores on its own copy. The user is told."""
    ids = [f"synthetic-{n}" for n in range(5)]
    assert score(tmp_path, split_file(tmp_path / "mimic-cxr.json", ids), ids) == 0
    assert Result.read(written(tmp_path / "out", "mimic-cxr.findings.json")).dataset == "mimic-cxr"
    assert ("named mimic-cxr, but none of its 5 study ids is in the official MIMIC-CXR test split: the leaderboard "
            "scores mimic-cxr on that split, where these predictions will not line up") in capsys.readouterr().err
