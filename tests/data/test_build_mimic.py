"""MIMIC-CXR from PhysioNet's files: the section parser against hand-written reports (the rules and quirks of
MIT-LCP/mimic-cxr `section_parser.py` / `create_section_files.py`), and `rexrank build-dataset mimic-cxr` on a
synthetic download in PhysioNet's layout. Every report here is written for these tests; none is MIMIC's."""

import csv
import gzip
import json
import re
import zipfile

import datasets
import pandas as pd
import pytest
from fixtures.built import score_references_against

from rexrank.cli import main
from rexrank.data import mimic_sections as ms
from rexrank.data.build import OFFICIAL, official_ids
from rexrank.data.mimic import read_mimic


def report(*lines):
    """A report as MIMIC writes one: a centred title, every line after it starting with a space."""
    return " " * 33 + "FINAL REPORT\n" + "".join(f" {line}\n" for line in lines)


FULL = report(
    "EXAMINATION:  CHEST (PA AND LAT)", "",
    "INDICATION:  ___ year old woman with cough  // eval for pneumonia", "",
    "TECHNIQUE:  Chest PA and lateral", "",
    "COMPARISON:  None.", "",
    "FINDINGS: ", "",
    "The lungs are clear without focal consolidation.  No pleural effusion or",
    "pneumothorax is seen. The cardiomediastinal silhouette is within normal",
    "limits.", "",
    "IMPRESSION: ", "",
    "No acute cardiopulmonary process.")
FULL_FINDINGS = ("The lungs are clear without focal consolidation.  No pleural effusion or\n pneumothorax is seen. "
                 "The cardiomediastinal silhouette is within normal\n limits.")

IMPRESSION_ONLY = report(
    "INDICATION:  Line placement.", "",
    "IMPRESSION: ", "",
    "Right internal jugular catheter ends in the mid SVC.")

NO_HEADER = report(
    "PORTABLE CHEST RADIOGRAPH", "",
    "Heart size is normal.  Lungs are clear.")

# An empty FINDINGS header, then a view line that the rules take for the findings header.
VIEW_HEADER = report(
    "EXAMINATION:  CHEST (PORTABLE AP)", "",
    "INDICATION:  Intubated patient, assess tube.", "",
    "FINDINGS: ", "",
    "PORTABLE AP VIEW OF THE CHEST:  Endotracheal tube tip is 4 cm above the",
    "carina.  Lungs are unchanged.")

# Two findings sections (the last wins), a conclusion (an impression), Windows line ends.
TWO_FINDINGS = (" FINAL REPORT\r\n FINDINGS:  Old fracture of a left rib.\r\n \r\n FINDINGS:  Lungs are clear.\r\n"
                " \r\n CONCLUSION:  No acute process.\r\n")

SENTINEL = "Right internal jugular catheter"  # text of a dropped study: must never be printed


# --- the section parser ---------------------------------------------------------------------------------------

def test_a_full_report_is_cut_at_its_headers():
    parts = ms.sections(FULL)
    assert [p.name for p in parts] == ["preamble", "examination", "indication", "technique", "comparison",
                                       "findings", "impression"]
    findings = ms.last_section(parts, "findings")
    assert findings.text.strip() == FULL_FINDINGS  # line breaks and double spaces kept, only stripped
    assert FULL[findings.start:].startswith(findings.text)
    assert parts[0].text == FULL[:FULL.index("EXAMINATION")]  # the preamble runs up to the header's first letter
    assert ms.sectioned("s50000001", FULL) == {"impression": "No acute cardiopulmonary process.",
                                               "findings": FULL_FINDINGS, "last_paragraph": None,
                                               "comparison": "None."}


def test_a_header_is_a_line_that_starts_with_one_space_capitals_and_a_colon():
    assert [p.name for p in ms.sections("FINDINGS: Clear.\n IMPRESSION: Fine.")] == ["preamble", "impression"]
    assert [p.name for p in ms.sections("x\nFINDINGS: Clear.")] == ["full report"]  # no leading space
    assert [p.name for p in ms.sections("x\n Findings: Clear.")] == ["full report"]  # not capitals
    assert [p.name for p in ms.sections("x\n FINDINGS:Clear.")] == ["full report"]  # no whitespace after the colon
    assert ms.sectioned("s1", "x\n FINDINGS:\nClear.")["findings"] == "Clear."  # a newline is whitespace


def test_a_header_on_the_first_line_of_a_section_is_text():
    # The next header is looked for from the end of the section's first line, so this IMPRESSION is findings text.
    row = ms.sectioned("s1", "x\n FINDINGS:\n IMPRESSION: No change.\n")
    assert row["findings"] == "IMPRESSION: No change." and row["impression"] is None
    row = ms.sectioned("s1", "x\n FINDINGS: Clear.\n IMPRESSION: No change.\n")
    assert row["findings"] == "Clear." and row["impression"] == "No change."


def test_empty_findings_are_dropped_and_the_last_section_of_a_name_wins():
    parts = ms.sections(VIEW_HEADER)
    assert [p.name for p in parts] == ["preamble", "examination", "indication", "findings"]
    assert ms.sectioned("s1", VIEW_HEADER)["findings"] == ("Endotracheal tube tip is 4 cm above the\n carina.  "
                                                           "Lungs are unchanged.")
    text = TWO_FINDINGS.replace("\r\n", "\n")
    assert [p.name for p in ms.sections(text)] == ["preamble", "findings", "findings", "impression"]
    assert ms.sectioned("s1", text) == {"impression": "No acute process.", "findings": "Lungs are clear.",
                                        "last_paragraph": None, "comparison": None}
    empty = "x\n FINDINGS: \n \n IMPRESSION: Stable.\n"
    assert ms.sectioned("s1", empty)["findings"] is None and ms.sectioned("s1", empty)["impression"] == "Stable."


@pytest.mark.parametrize("header, name", [
    ("CONCLUSION", "impression"), ("FINDINGS/IMPRESSION", "impression"), ("IMPRESSION AND FINDINGS", "impression"),
    ("FINDINGS AND HISTORY", "findings"), ("PA AND LATERAL VIEWS OF THE CHEST", "findings"),
    ("CHEST, TWO VIEWS", "findings"), ("RIBS", "findings"), ("CLINICAL HISTORY", "history"),
    ("REASON FOR EXAM", "indication"), ("COMPARISONS", "comparison"), ("WET READ", "wet read"),
    ("NDICATION", "impression"),  # the reference's own mapping, kept
    ("FINDNGS", "findings"), ("NOTE", "note"), ("RECOMMENDATION(S)", "recommendations"), (" Exam ", "examination"),
])
def test_header_names_are_normalised_as_the_reference_does(header, name):
    assert ms.section_name(header) == name


def test_without_findings_or_impression_the_text_after_the_first_blank_line_is_the_last_paragraph():
    text = "x\n COMPARISON:  None.\n \n Lungs are clear.\n \n Heart is normal.\n"
    parts = ms.sections(text)
    assert [p.name for p in parts] == ["preamble", "comparison", "last_paragraph"]
    assert parts[1].text == " None." and parts[2].text == " Lungs are clear.\n \n Heart is normal.\n"
    assert parts[2].start == parts[1].start + len(parts[1].text)  # the reference's offset: the blank line's
    row = ms.sectioned("s1", text)
    assert row["last_paragraph"] == "Lungs are clear.\n \n Heart is normal." and row["findings"] is None
    assert ms.conclusion("s1", text) == row["last_paragraph"]  # impression > findings > last_paragraph > comparison
    parts = ms.sections(NO_HEADER)
    assert [p.name for p in parts] == ["full report", "last_paragraph"]
    assert ms.sections("No header, one paragraph.") == [ms.Section("full report", "No header, one paragraph.", 0)]
    assert ms.conclusion("s1", "No header, one paragraph.") == ""


def test_the_conclusion_prefers_impression_then_findings():
    assert ms.conclusion("s1", FULL) == "No acute cardiopulmonary process."
    assert ms.conclusion("s1", VIEW_HEADER).startswith("Endotracheal tube tip")
    assert ms.conclusion("s1", "x\n COMPARISON: Prior study.\n") == "Prior study."


def test_studies_in_the_custom_tables_get_no_sectioned_row_and_their_conclusion_from_the_table():
    assert len(ms.CUSTOM_SECTION) == 23 and len(ms.CUSTOM_SPAN) == 31  # as the reference lists them
    assert ms.sectioned("s50913680", FULL) is None and ms.sectioned("50913680", FULL) is None  # either id form
    assert ms.in_custom_tables("58235663") and not ms.in_custom_tables("50000001")
    report = "x\n FINDINGS: Clear.\n \n RECOMMENDATION(S):  Follow-up radiograph.\n \n IMPRESSION: Nothing.\n"
    assert ms.conclusion("s50913680", report) == "Follow-up radiograph."  # the table's section, not impression
    assert ms.conclusion("s56451190", report) is None  # its section ("note") is not there
    long = FULL * 2
    assert ms.conclusion("s50525523", long) == long[201:349]  # a span, unstripped
    assert ms.conclusion("s58235663", long) == ""  # [0, 0]: no findings at all


# --- the official ids ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, split, shape", [
    ("mimic-cxr", "test", r"\d{8}"), ("iu-xray", "test", r"CXR\d+_IM-\d{4}(-\d{4})?"),
    ("iu-xray", "valid", r"CXR\d+_IM-\d{4}(-\d{4})?"), ("chexpert-plus", "valid", r"patient\d+_study\d+"),
])
def test_the_shipped_official_ids_are_ids_only(name, split, shape):
    ids = official_ids(name, split)
    assert len(ids) == len(set(ids)) == OFFICIAL[(name, split)]
    assert all(re.fullmatch(shape, i) for i in ids)


# --- the download ---------------------------------------------------------------------------------------------

# study id, subject id, split, report (None: no file), dicoms as (suffix, ViewPosition)
STUDIES = [
    ("50000001", "10000001", "test", FULL, [("1", "PA"), ("2", "LATERAL")]),
    ("50000002", "10000001", "test", IMPRESSION_ONLY, [("3", "AP")]),
    ("50000003", "11000002", "test", NO_HEADER, [("4", "AP")]),
    ("50000004", "12000003", "test", VIEW_HEADER, [("5", "")]),
    ("50913680", "11851243", "test", FULL, [("6", "PA")]),  # in the reference's custom tables
    ("50000006", "13000004", "test", TWO_FINDINGS, [("8", "PA"), ("7", "LL")]),
    ("50000007", "14000005", "train", None, [("9", "PA")]),
    ("50000008", "15000006", "validate", FULL, [("a", "PA")]),
]
BUILT = ["50000001", "50000004", "50000006"]


def dicom(suffix):
    return f"{suffix * 8}-0000aaaa-1111bbbb-2222cccc-3333dddd"


def write_csv_gz(path, header, rows):
    with gzip.open(path, "wt", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def download(tmp_path):
    """PhysioNet's layout: the split and metadata files, mimic-cxr-reports/files/pXX/pSUBJECT/sSTUDY.txt, and a
    MIMIC-CXR-JPG tree with every image but one."""
    split_rows, meta_rows = [], []
    for study, subject, split, report, images in STUDIES:
        for suffix, view in images:
            split_rows.append((dicom(suffix), study, subject, split))
            meta_rows.append((dicom(suffix), subject, study, "CHEST (PA AND LAT)", view, 3056, 2544, 21800506,
                              213014.5, "CHEST (PA AND LAT)", "postero-anterior", "Erect"))
            image = tmp_path / "jpg" / f"files/p{subject[:2]}/p{subject}/s{study}/{dicom(suffix)}.jpg"
            if suffix != "7":
                image.parent.mkdir(parents=True, exist_ok=True)
                image.write_bytes(b"\xff\xd8\xff")
        if report is not None:
            path = tmp_path / "mimic-cxr-reports" / "files" / f"p{subject[:2]}" / f"p{subject}" / f"s{study}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(report.encode())
    split = write_csv_gz(tmp_path / "mimic-cxr-2.0.0-split.csv.gz", ["dicom_id", "study_id", "subject_id", "split"],
                         split_rows)
    meta = write_csv_gz(tmp_path / "mimic-cxr-2.0.0-metadata.csv.gz",
                        ["dicom_id", "subject_id", "study_id", "PerformedProcedureStepDescription", "ViewPosition",
                         "Rows", "Columns", "StudyDate", "StudyTime", "ProcedureCodeSequence_CodeMeaning",
                         "ViewCodeSequence_CodeMeaning", "PatientOrientationCodeSequence_CodeMeaning"], meta_rows)
    return {"split": split, "meta": meta, "reports": tmp_path / "mimic-cxr-reports", "images": tmp_path / "jpg",
            "tmp": tmp_path}


def build(download, *extra, out="mimic", sources=None):
    sources = sources or [download["split"], download["meta"], download["reports"] / "files"]
    args = ["build-dataset", "mimic-cxr", *(a for s in sources for a in ("--source", str(s))),
            "--out", str(download["tmp"] / out), *extra]
    return main(args)


def test_the_cli_builds_the_test_studies_with_findings_and_load_dataset_reads_them(download, capsys):
    assert build(download, "--image-root", str(download["images"])) == 0
    out, err = capsys.readouterr()
    assert "mimic-cxr test: 3 studies (3 with findings, 3 in findings_impression)" in out
    assert "1 of the 6 test studies have no findings section; left out" in err and "50000002" in err
    assert "1 of the 6 test studies have a report with no section header" in err and "50000003" in err
    assert "1 of the 6 test studies are in MIMIC-CXR's hand-made tables" in err and "50913680" in err
    assert f"1 of the 5 images of the built studies are not under {download['images']}" in err
    assert "the studies: 50000006\n" in err
    assert "the official mimic-cxr test split has 2,347 studies, this build 3" in err
    assert SENTINEL not in out + err and "lungs are clear" not in (out + err).lower()

    folder = download["tmp"] / "mimic"
    rows = datasets.load_dataset(str(folder), "findings", split="test",
                                 cache_dir=str(download["tmp"] / "cache")).to_pandas().set_index("study_id")
    assert sorted(rows.index) == BUILT
    assert rows.loc["50000001", "findings"] == FULL_FINDINGS  # the section as the report writes it
    assert rows.loc["50000001", "reference_findings"] == (  # the reference as the board scored it
        "The lungs are clear without focal consolidation. No pleural effusion or pneumothorax is seen. "
        "The cardiomediastinal silhouette is within normal limits.")
    assert rows.loc["50000001", "impression"] == "No acute cardiopulmonary process."
    assert rows.loc["50000001", "context"] == "___ year old woman with cough // eval for pneumonia"
    assert list(rows.loc["50000001", "image_paths"]) == [
        f"files/p10/p10000001/s50000001/{dicom(s)}.jpg" for s in "12"]
    assert list(rows.loc["50000001", "views"]) == ["PA", "LATERAL"]
    assert rows.loc["50000001", "source"] == "files/p10/p10000001/s50000001.txt"
    assert pd.isna(rows.loc["50000004", "impression"]) and list(rows.loc["50000004", "views"]) == [None]
    assert rows.loc["50000004", "reference_findings_impression"].endswith(" Impression: None")
    assert rows.loc["50000006", "findings"] == "Lungs are clear." and rows.loc["50000006", "impression"] == (
        "No acute process.")
    assert [p.rsplit("/", 1)[1][0] for p in rows.loc["50000006", "image_paths"]] == ["7", "8"]  # by dicom id
    assert list(rows.loc["50000006", "views"]) == ["LL", "PA"]

    info = json.loads((folder / "build_info.json").read_text())
    assert info["counts"]["studies"] == 3 and info["counts"]["without_impression"] == 1
    assert set(info["sources"]) == {"mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-metadata.csv.gz",
                                    "files: the 6 test reports read"}
    official = info["official"]
    assert not official["matches"] and official["extra"] == BUILT
    assert official["missing"][0] == official_ids("mimic-cxr", "test")[0] and len(official["missing"]) == 2347


def test_the_zip_and_the_folder_above_files_give_the_same_build(download):
    archive = download["tmp"] / "mimic-cxr-reports.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted((download["reports"] / "files").rglob("*.txt")):
            z.write(path, path.relative_to(download["reports"]).as_posix())
    builds = [read_mimic([download["split"], download["meta"], reports], "test")
              for reports in (download["reports"] / "files", download["reports"], archive)]
    for other in builds[1:]:
        pd.testing.assert_frame_equal(builds[0].studies, other.studies)
        assert list(other.sources.values())[-1] == list(builds[0].sources.values())[-1]  # the reports' digest
    assert builds[0].studies["study_id"].tolist() == BUILT


def test_without_metadata_views_are_unknown_and_other_splits_build_too(download):
    built = read_mimic([download["reports"], download["split"]], "test")
    assert built.studies["views"].tolist() == [[None, None], [None], [None, None]]
    validate = read_mimic([download["reports"], download["split"]], "validate")
    assert validate.studies["study_id"].tolist() == ["50000008"] and not validate.notes


def test_a_missing_report_names_the_study_and_writes_nothing(download, capsys):
    (download["reports"] / "files" / "p12" / "p12000003" / "s50000004.txt").unlink()
    assert build(download) == 2
    err = capsys.readouterr().err
    assert "study 50000004 (subject 12000003): no files/p12/p12000003/s50000004.txt" in err
    assert "the reports of 1 test studies" in err and not (download["tmp"] / "mimic").exists()


def test_a_truncated_gzip_is_named(download, capsys):
    raw = download["split"].read_bytes()
    download["split"].write_bytes(raw[: len(raw) - 12])
    assert build(download) == 2
    err = capsys.readouterr().err
    assert f"{download['split']}: truncated or corrupt gzip file" in err


def test_a_wrong_file_says_which_file_was_expected(download, capsys):
    labels = write_csv_gz(download["tmp"] / "mimic-cxr-2.0.0-chexpert.csv.gz",
                          ["subject_id", "study_id", "Atelectasis"], [("10000001", "50000001", "1.0")])
    assert build(download, sources=[labels, download["meta"], download["reports"]]) == 2
    err = capsys.readouterr().err
    assert f"{labels}: not a MIMIC-CXR source; expected mimic-cxr-2.0.0-split.csv.gz, " in err
    misnamed = download["tmp"] / "mimic-cxr-2.0.0-split.csv"
    misnamed.write_text(FULL)  # a report saved under the split file's name: named, its text not printed
    assert build(download, sources=[misnamed, download["reports"]]) == 2
    err = capsys.readouterr().err
    assert "expected mimic-cxr-2.0.0-split.csv.gz (columns dicom_id, study_id, subject_id, split)" in err
    assert "lungs are clear" not in err.lower()
    assert build(download, sources=[download["meta"], download["reports"]]) == 2
    assert "no mimic-cxr-2.0.0-split.csv.gz among the sources" in capsys.readouterr().err
    assert build(download, sources=[download["split"], download["meta"]]) == 2
    assert "mimic-cxr: no reports among the sources" in capsys.readouterr().err
    assert build(download, sources=[download["split"], download["tmp"] / "jpg"]) == 2  # the images' tree
    assert f"none is there: is {download['tmp'] / 'jpg'} the files/ folder of mimic-cxr-reports.zip?" in \
        capsys.readouterr().err
    assert build(download, sources=[download["split"], download["tmp"] / "jpg" / "files" / "p10"]) == 2
    assert "not the MIMIC-CXR reports folder" in capsys.readouterr().err
    broken = download["tmp"] / "mimic-cxr-reports.zip"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    assert build(download, sources=[download["split"], broken]) == 2
    assert f"{broken}: not a readable zip file" in capsys.readouterr().err
    assert build(download, "--split", "valid") == 2
    err = capsys.readouterr().err
    assert "no split 'valid'" in err and "its splits are train, validate, test" in err
    assert build(download, "--image-root", str(download["tmp"] / "nowhere")) == 2
    assert "--image-root" in capsys.readouterr().err
    assert not (download["tmp"] / "mimic").exists()


# --- parity with the reference, when a checkout of MIT-LCP/mimic-cxr is at hand --------------------------------

def _fuzzed_reports(n, seed):
    """Reports with MIMIC's shapes and their accidents: headers in and out of place, typos, empty and repeated
    sections, blank lines with and without the leading space, no header at all."""
    import random

    headers = ["FINDINGS", "IMPRESSION", "INDICATION", "COMPARISON", "EXAMINATION", "TECHNIQUE", "CLINICAL HISTORY",
               "CONCLUSION", "FINDINGS AND IMPRESSION", "PA AND LATERAL VIEWS OF THE CHEST", "NDICATION", "IMPRESSON",
               "WET READ", "RECOMMENDATION(S)", "NOTE", "PORTABLE AP CHEST", "ADDENDUM", "FINDING", "findings"]
    words = ["There", "is", "no", "effusion.", "Heart", "normal.", "___", "1.", "Dr.", "PA", "IMPRESSION:", "-"]
    gaps = ["\n ", "\n \n ", "\n", "\n\n", " ", "  "]
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = [rng.choice(["", " " * 33 + "FINAL REPORT\n"])]
        for _ in range(rng.randint(0, 7)):
            if rng.random() < 0.45:
                parts.append(rng.choice(gaps) + rng.choice(headers) + ":" + rng.choice([" ", "\n", "", " \n \n "]))
            else:
                parts.append(rng.choice(gaps).join(rng.choice(words) for _ in range(rng.randint(0, 10))))
        texts.append("".join(parts))
    return texts


def test_the_sections_are_the_reference_parsers_on_fuzzed_reports():
    """Set REXRANK_MIMIC_CXR_REPO to a checkout of MIT-LCP/mimic-cxr (31901464) to run its parser beside ours."""
    import importlib.util
    import os
    from pathlib import Path

    repo = os.environ.get("REXRANK_MIMIC_CXR_REPO")
    if not repo:
        pytest.skip("REXRANK_MIMIC_CXR_REPO (a checkout of MIT-LCP/mimic-cxr) not set")
    spec = importlib.util.spec_from_file_location("mimic_section_parser", Path(repo) / "txt" / "section_parser.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    names, spans = reference.custom_mimic_cxr_rules()
    assert names == ms.CUSTOM_SECTION and {k: tuple(v) for k, v in spans.items()} == ms.CUSTOM_SPAN
    for text in _fuzzed_reports(20000, seed=5):
        texts, names, starts = reference.section_text(text)
        assert [(p.name, p.text, p.start) for p in ms.sections(text)] == list(zip(names, texts, starts)), text


def test_rexrank_score_reads_the_built_mimic_cxr(download):
    assert build(download) == 0
    scored = score_references_against(download["tmp"] / "mimic", download["tmp"])
    assert scored == {"findings": 3, "findings_impression": 3}
