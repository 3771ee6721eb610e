"""`rexrank build-dataset chexpert-plus` from the original release, df_chexpert_plus_240401.csv (one row per image).
Every report here is synthetic, written by the tests in that layout."""

import gzip
import json

import pandas as pd
import pytest
from fixtures.built import build, load, score_references_against, sha

from rexrank.builders import BUILDERS
from rexrank.data import chexpert_plus

CHEXPERT_COLUMNS = [
    "path_to_image", "path_to_dcm", "frontal_lateral", "ap_pa", "deid_patient_id", "patient_report_date_order",
    "report", "section_narrative", "section_clinical_history", "section_history", "section_comparison",
    "section_technique", "section_procedure_comments", "section_findings", "section_impression",
    "section_end_of_impression", "section_summary", "section_accession_number", "age", "sex", "race", "ethnicity",
    "interpreter_needed", "insurance_type", "recent_bmi", "deceased", "split"]
# (path, frontal_lateral, ap_pa, clinical history, findings, impression, age, sex, split); synthetic text.
CHEXPERT_ROWS = [
    ("train/patient00001/study1/view1_frontal.jpg", "Frontal", "AP", "Train.", "Train findings.", "TRAIN.", 50.0,
     "Male", "train"),
    ("valid/patient64541/study1/view1_frontal.jpg", "Frontal", "AP", "Synthetic history.",
     "\nSynthetic findings one.", "\nSynthetic impression one.", 71.0, "Female", "valid"),
    ("valid/patient64541/study1/view2_lateral.jpg", "Lateral", None, "Synthetic history.",
     "\nSynthetic findings one.", "\nSynthetic impression one.", 71.0, "Female", "valid"),
    ("valid/patient64542/study1/view1_frontal.jpg", "Frontal", "PA", None, None,
     "\n1. NO ACUTE SYNTHETIC PROCESS.\n", None, "Unknown", "valid"),
    ("valid/patient64543/study2/view1_frontal.jpg", "Frontal", None, None, None, None, 40.0, "Male", "valid"),
]


def chexpert_csv(path, rows=CHEXPERT_ROWS):
    records = []
    for image, fl, ap_pa, history, findings, impression, age, sex, split in rows:
        record = dict.fromkeys(CHEXPERT_COLUMNS)
        record.update(path_to_image=image, path_to_dcm=image.replace(".jpg", ".dcm"), frontal_lateral=fl, ap_pa=ap_pa,
                      section_clinical_history=history, section_findings=findings, section_impression=impression,
                      section_comparison="Synthetic comparison.", report="Synthetic whole report.", age=age, sex=sex,
                      split=split)
        records.append(record)
    pd.DataFrame(records, columns=CHEXPERT_COLUMNS).to_csv(path, index=False,
                                                           compression="gzip" if path.suffix == ".gz" else None)
    return path


SYNTHETIC_CHEXPERT_TEXT = ("Synthetic findings one", "Synthetic impression one", "NO ACUTE SYNTHETIC",
                           "Synthetic history")


def test_chexpert_plus_valid_groups_images_into_studies(tmp_path, capsys):
    source = chexpert_csv(tmp_path / "df_chexpert_plus_240401.csv")
    out = tmp_path / "cx"
    assert build("chexpert-plus", [source], out) == 0
    captured = capsys.readouterr()
    assert "chexpert-plus valid: 3 studies (1 with findings, 2 in findings_impression)" in captured.out
    assert "studies with neither a findings nor an impression section: 1 (patient64543_study2)" in captured.err
    assert not any(text in captured.out + captured.err for text in SYNTHETIC_CHEXPERT_TEXT)
    findings = load(out, "findings", "valid", tmp_path)
    assert findings["study_id"].tolist() == ["patient64541_study1"]
    assert findings["findings"].tolist() == ["\nSynthetic findings one."]  # the cell unchanged
    assert findings["reference_findings"].tolist() == ["Synthetic findings one."]  # as the board scored it
    everything = load(out, "findings_impression", "valid", tmp_path).set_index("study_id")
    assert everything.index.tolist() == ["patient64541_study1", "patient64542_study1"]
    study = everything.loc["patient64541_study1"]
    assert list(study["image_paths"]) == ["valid/patient64541/study1/view1_frontal.png",
                                          "valid/patient64541/study1/view2_lateral.png"]
    assert list(study["views"]) == ["AP", "LATERAL"]
    assert study["context"] == "Age:71.0.Gender:F.Indication:Synthetic history.Comparison: None."
    capitals = everything.loc["patient64542_study1"]
    assert capitals["impression"] == "\n1. NO ACUTE SYNTHETIC PROCESS.\n"
    assert capitals["reference_findings_impression"] == "Findings: None Impression: 1. NO ACUTE SYNTHETIC PROCESS."
    assert capitals["context"] == "Age:nan.Gender:U.Indication:nanComparison: None."
    info = json.loads((out / "build_info.json").read_text())
    assert info["sources"] == {source.name: sha(source)}
    assert info["counts"]["studies"] == 3 and info["official"]["official"] == 200
    built = chexpert_plus.read_chexpert_plus([source], "valid")
    assert built.studies.set_index("study_id").loc["patient64543_study2", "views"] == ["FRONTAL"]


def test_chexpert_plus_reads_gzip_a_folder_and_other_splits(tmp_path):
    plain = chexpert_plus.read_chexpert_plus([chexpert_csv(tmp_path / "df_chexpert_plus_240401.csv")], "valid")
    (tmp_path / "gz").mkdir()
    zipped = chexpert_plus.read_chexpert_plus([chexpert_csv(tmp_path / "gz" / "df_chexpert_plus_240401.csv.gz")],
                                              "valid")
    columns = ["study_id", "findings", "impression", "image_paths", "views", "context"]
    pd.testing.assert_frame_equal(plain.studies[columns], zipped.studies[columns])
    from_folder = chexpert_plus.read_chexpert_plus([tmp_path / "gz"], "valid")
    assert from_folder.studies["study_id"].tolist() == plain.studies["study_id"].tolist()
    train = chexpert_plus.read_chexpert_plus([tmp_path / "df_chexpert_plus_240401.csv"], "train")
    assert train.studies["study_id"].tolist() == ["patient00001_study1"] and train.split == "train"


def test_chexpert_plus_missing_images_are_a_note(tmp_path):
    source = chexpert_csv(tmp_path / "df_chexpert_plus_240401.csv")
    png = tmp_path / "PNG" / "valid" / "patient64541" / "study1"
    png.mkdir(parents=True)
    (png / "view1_frontal.png").write_bytes(b"png")
    (png / "view2_lateral.png").write_bytes(b"png")
    built = chexpert_plus.read_chexpert_plus([source], "valid", image_root=tmp_path / "PNG")
    assert f"2 of 4 images not found under {tmp_path / 'PNG'} (2 studies: patient64542_study1, patient64543_study2)" \
        in built.notes


@pytest.mark.parametrize("case, message", [
    ("wrong file", "no column(s) path_to_image, section_findings, section_impression (it has id, report, "),
    ("not a csv", "is not a CSV; expected CheXpert Plus's df_chexpert_plus_240401.csv"),
    ("truncated gz", "truncated or damaged compressed file"),
    ("image twice", "an image is listed more than once in study(ies) patient64541_study1"),
    ("rows disagree", "the images of study(ies) patient64541_study1 carry different report sections"),
    ("no such split", "no rows with split 'test' (splits here: train, valid)"),
    ("odd path", "is not <split>/patient<n>/study<n>/<view>.jpg"),
    ("two sources", "give one --source"),
])
def test_chexpert_plus_bad_sources_are_named(tmp_path, capsys, case, message):
    source, rows, extra = tmp_path / "df_chexpert_plus_240401.csv", list(CHEXPERT_ROWS), []
    sources = [source]
    if case == "image twice":
        rows.append(rows[1])
    elif case == "rows disagree":
        rows[2] = rows[2][:4] + ("\nSynthetic findings one, other wording.",) + rows[2][5:]
    elif case == "no such split":
        extra = ["--split", "test"]
    elif case == "odd path":
        rows.append(("valid/view1_frontal.jpg",) + rows[1][1:])
    elif case == "two sources":
        sources = [source, source]
    chexpert_csv(source, rows)
    if case == "wrong file":
        source.write_text("id,report,image_path,split\nCXR1,x,y,test\n")
    elif case == "not a csv":
        sources = [tmp_path / "annotation.json"]
        sources[0].write_text("{}")
    elif case == "truncated gz":
        sources = [tmp_path / "df_chexpert_plus_240401.csv.gz"]
        data = gzip.compress(source.read_bytes() * 50)
        sources[0].write_bytes(data[: len(data) // 2])
    assert build("chexpert-plus", sources, tmp_path / "out", *extra) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert not any(text in captured.out + captured.err for text in SYNTHETIC_CHEXPERT_TEXT)
    assert not (tmp_path / "out").exists()


def test_the_builder_reads_the_original_layout():
    builder = BUILDERS["chexpert-plus"]
    assert builder.originals is chexpert_plus.read_chexpert_plus and builder.originals_help == chexpert_plus.HELP


def test_rexrank_score_reads_the_built_chexpert_plus(tmp_path):
    assert build("chexpert-plus", [chexpert_csv(tmp_path / "df_chexpert_plus_240401.csv")], tmp_path / "built") == 0
    assert score_references_against(tmp_path / "built", tmp_path, split="valid") == {"findings": 1,
                                                                                      "findings_impression": 2}
