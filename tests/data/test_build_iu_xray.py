"""`rexrank build-dataset iu-xray` from the original releases: R2Gen's annotation.json and the Open-i reports
(ecgen-radiology/*.xml or NLMCXR_reports.tgz). Every report here is synthetic, written by the tests in that layout."""

import hashlib
import json
import tarfile

import pandas as pd
import pytest
from fixtures.built import build, load, score_references_against, sha

from rexrank.builders import BUILDERS
from rexrank.data import iu_xray

# R2Gen's annotation.json: id, report (= the findings), image_path, split. Synthetic text.
R2GEN = {
    "train": [{"id": "CXR9_IM-0009", "report": "Train study, lungs clear.",
               "image_path": ["CXR9_IM-0009/0.png", "CXR9_IM-0009/1.png"], "split": "train"}],
    "val": [{"id": "CXR21_IM-0021-1001", "report": "Valid study one, heart size normal.",
             "image_path": ["CXR21_IM-0021-1001/0.png", "CXR21_IM-0021-1001/1.png"], "split": "val"},
            {"id": "CXR20_IM-0020", "report": "Valid study two, small effusion.",
             "image_path": ["CXR20_IM-0020/0.png", "CXR20_IM-0020/1.png"], "split": "val"}],
    "test": [{"id": "CXR12_IM-0012", "report": "Synthetic findings twelve. No XXXX effusion.",
              "image_path": ["CXR12_IM-0012/0.png", "CXR12_IM-0012/1.png"], "split": "test"},
             {"id": "CXR10_IM-0010", "report": "Synthetic findings ten.",
              "image_path": ["CXR10_IM-0010/0.png", "CXR10_IM-0010/1.png"], "split": "test"},
             {"id": "CXR1_1_IM-0001", "report": "Synthetic findings one.",
              "image_path": ["CXR1_1_IM-0001/0.png", "CXR1_1_IM-0001/1.png"], "split": "test"}],
}
# uId -> (comparison, indication, findings, impression); None leaves the section out, "" leaves it empty.
OPEN_I = {
    "CXR12": ("None.", "Cough & fever", "Synthetic findings twelve. No XXXX effusion.", "Impression twelve."),
    "CXR10": ("Chest 2 views XXXX.", None, "Synthetic findings ten.", "1. Impression ten."),
    "CXR1": ("", "XXXX-year-old with pain", "Synthetic findings one.", "Impression one."),
    "CXR9": ("None", "Train", "Train study, lungs clear.", "Train impression."),
    "CXR21": ("None.", "Valid one", "Valid study one, heart size normal.", "Valid impression one."),
    "CXR20": ("None.", "Valid two", "Valid study two, small effusion.", "Valid impression two."),
}


def open_i_xml(uid, comparison, indication, findings, impression):
    """An Open-i report as ecgen-radiology/<n>.xml has it (abridged: the elements around the abstract kept)."""
    def section(label, text):
        return "" if text is None else f'        <AbstractText Label="{label}">{text}</AbstractText>\n'
    escape = lambda t: None if t is None else t.replace("&", "&amp;")  # noqa: E731
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<eCitation>\n  <meta type="rr"/>\n  <uId id="{uid}"/>\n'
            f'  <pmcId id="{uid[3:]}"/>\n  <MedlineCitation Owner="Indiana University">\n    <Article>\n'
            f"      <ArticleTitle>Indiana University Chest X-ray Collection</ArticleTitle>\n      <Abstract>\n"
            + section("COMPARISON", escape(comparison)) + section("INDICATION", escape(indication))
            + section("FINDINGS", escape(findings)) + section("IMPRESSION", escape(impression))
            + f'      </Abstract>\n    </Article>\n  </MedlineCitation>\n  <MeSH><major>normal</major></MeSH>\n'
            f'  <parentImage id="{uid}_IM-0000-1001"><caption>Xray Chest PA and Lateral</caption></parentImage>\n'
            "</eCitation>\n")


@pytest.fixture
def iu(tmp_path):
    root = tmp_path / "iu"
    (root / "ecgen-radiology").mkdir(parents=True)
    (root / "annotation.json").write_text(json.dumps(R2GEN))
    for uid, sections in OPEN_I.items():
        (root / "ecgen-radiology" / f"{uid[3:]}.xml").write_text(open_i_xml(uid, *sections))
    with tarfile.open(root / "NLMCXR_reports.tgz", "w:gz") as archive:
        archive.add(root / "ecgen-radiology", arcname="ecgen-radiology")
    return root


def test_iu_xray_test_split_is_r2gens_with_the_open_i_impression_and_context(iu, tmp_path, capsys):
    out = tmp_path / "iu-built"
    assert build("iu-xray", [iu / "annotation.json", iu / "ecgen-radiology"], out) == 0
    assert "iu-xray test: 3 studies (3 with findings, 3 in findings_impression)" in capsys.readouterr().out
    findings = load(out, "findings", "test", tmp_path)
    everything = load(out, "findings_impression", "test", tmp_path).set_index("study_id")
    # R2Gen's order and ids; its report is ReXrank's findings, verbatim
    assert findings["study_id"].tolist() == ["CXR12_IM-0012", "CXR10_IM-0010", "CXR1_1_IM-0001"]
    assert findings["reference_findings"].tolist() == [r["report"] for r in R2GEN["test"]]
    assert everything.loc["CXR12_IM-0012", "impression"] == "Impression twelve."
    assert everything.loc["CXR10_IM-0010", "reference_findings_impression"] == \
        "Findings: Synthetic findings ten. Impression: 1. Impression ten."
    # ReXrank's context: no indication -> " Comparison: ..."; an empty comparison -> None
    assert everything.loc["CXR12_IM-0012", "context"] == "Indication: Cough & fever Comparison: None."
    assert everything.loc["CXR10_IM-0010", "context"] == " Comparison: Chest 2 views XXXX."
    assert everything.loc["CXR1_1_IM-0001", "context"] == "Indication: XXXX-year-old with pain Comparison: None"
    assert list(everything.loc["CXR1_1_IM-0001", "image_paths"]) == ["CXR1_1_IM-0001/0.png", "CXR1_1_IM-0001/1.png"]
    assert list(everything.loc["CXR1_1_IM-0001", "views"]) == [None, None]  # neither source says
    info = json.loads((out / "build_info.json").read_text())
    assert info["sources"]["annotation.json"] == sha(iu / "annotation.json")
    manifest = "".join(f"{sha(f)}  {f.name}\n" for f in sorted((iu / "ecgen-radiology").iterdir()))
    assert info["sources"]["ecgen-radiology/"] == hashlib.sha256(manifest.encode()).hexdigest()  # a folder's files
    assert info["notes"] == [] and info["official"]["official"] == 590


def test_iu_xray_valid_is_r2gens_val_and_the_archive_reads_as_the_folder(iu):
    from_archive = iu_xray.read_iu_xray([iu / "annotation.json", iu / "NLMCXR_reports.tgz"], "valid")
    from_folder = iu_xray.read_iu_xray([iu / "annotation.json", iu / "ecgen-radiology"], "valid")
    assert from_archive.split == "valid"
    assert from_archive.studies["study_id"].tolist() == ["CXR21_IM-0021-1001", "CXR20_IM-0020"]
    assert from_archive.studies["impression"].tolist() == ["Valid impression one.", "Valid impression two."]
    columns = ["study_id", "findings", "impression", "context", "image_paths"]
    pd.testing.assert_frame_equal(from_archive.studies[columns], from_folder.studies[columns])
    assert from_folder.studies["source"][0] == "annotation.json[val] + 21.xml"
    # the folder above ecgen-radiology/ (NLMCXR_reports/ as unpacked) serves too
    assert iu_xray.read_iu_xray([iu / "annotation.json", iu], "valid").studies["impression"].notna().all()


def test_iu_xray_notes_name_studies_without_a_report_sections_or_images(iu, tmp_path):
    (iu / "ecgen-radiology" / "10.xml").unlink()
    (iu / "ecgen-radiology" / "1.xml").write_text(open_i_xml("CXR1", "None.", "Pain", None, None))
    (iu / "ecgen-radiology" / "12.xml").write_text(open_i_xml("CXR12", None, None, "Another text.", "Impression."))
    images = tmp_path / "images"
    for path in R2GEN["test"][0]["image_path"] + R2GEN["test"][1]["image_path"][:1]:
        (images / path).parent.mkdir(parents=True, exist_ok=True)
        (images / path).write_bytes(b"png")
    built = iu_xray.read_iu_xray([iu / "annotation.json", iu / "ecgen-radiology"], "test", image_root=images)
    assert built.notes == [
        "studies with no Open-i report in ecgen-radiology (impression and context left empty): 1 (CXR10_IM-0010)",
        "studies whose Open-i report has no FINDINGS or IMPRESSION section: 1 (CXR1_1_IM-0001)",
        "studies whose Open-i FINDINGS differs from R2Gen's report (the findings are R2Gen's, as in ReXrank): 2 "
        "(CXR12_IM-0012, CXR1_1_IM-0001)",
        f"3 of 6 images not found under {images} (2 studies: CXR10_IM-0010, CXR1_1_IM-0001)"]
    row = built.studies.set_index("study_id").loc["CXR10_IM-0010"]
    assert pd.isna(row["impression"]) and pd.isna(row["context"]) and row["findings"] == "Synthetic findings ten."


@pytest.mark.parametrize("case, message", [
    ("annotation only", "iu-xray: give one --source for the Open-i reports"),
    ("reports only", "iu-xray: give one --source for R2Gen's annotation.json"),
    ("not r2gen", "not R2Gen's annotation.json"),
    ("no test key", "no 'test' list (it has 'train', 'val', '    ')"),
    ("repeated id", "study id(s) listed more than once in 'test': CXR10_IM-0010"),
    ("bad record", "1 record(s) without a CXR<n>_... id, a report string and an image_path list: test[1]"),
    ("truncated archive", "truncated or damaged compressed file"),
    ("not xml", "12.xml is not well-formed XML"),
    ("uid twice", "report uId CXR12 is in both"),
    ("no such split", "no split 'dev' in R2Gen's annotation.json"),
    ("csv", "reports.csv is neither R2Gen's annotation.json"),
])
def test_iu_xray_bad_sources_are_named(iu, tmp_path, capsys, case, message):
    annotation, reports, extra = iu / "annotation.json", iu / "ecgen-radiology", []
    sources = [annotation, reports]
    if case == "annotation only":
        sources = [annotation]
    elif case == "reports only":
        sources = [reports]
    elif case == "not r2gen":
        annotation.write_text(json.dumps({"CXR1_1_IM-0001": {"report": "x"}}))
    elif case == "no test key":
        annotation.write_text(json.dumps({"train": R2GEN["train"], "val": R2GEN["val"], "    ": R2GEN["test"]}))
    elif case == "repeated id":
        annotation.write_text(json.dumps({**R2GEN, "test": R2GEN["test"] + R2GEN["test"][1:2]}))
    elif case == "bad record":
        annotation.write_text(json.dumps({**R2GEN, "test": [R2GEN["test"][0], {"id": 3, "report": None}]}))
    elif case == "truncated archive":
        data = (iu / "NLMCXR_reports.tgz").read_bytes()
        (tmp_path / "NLMCXR_reports.tgz").write_bytes(data[: len(data) // 2])
        sources = [annotation, tmp_path / "NLMCXR_reports.tgz"]
    elif case == "not xml":
        (reports / "12.xml").write_text("<eCitation><uId id='CXR12'/>")
    elif case == "uid twice":
        (reports / "9999.xml").write_text(open_i_xml("CXR12", *OPEN_I["CXR12"]))
    elif case == "no such split":
        extra = ["--split", "dev"]
    elif case == "csv":
        (tmp_path / "reports.csv").write_text("uid,findings\n1,x\n")
        sources = [annotation, reports, tmp_path / "reports.csv"]
    assert build("iu-xray", sources, tmp_path / "out", *extra) == 2
    err = capsys.readouterr().err
    assert message in err
    assert not (tmp_path / "out").exists()


def test_the_builder_reads_the_original_layout():
    builder = BUILDERS["iu-xray"]
    assert builder.originals is iu_xray.read_iu_xray and builder.originals_help == iu_xray.HELP


def test_rexrank_score_reads_the_built_iu_xray(iu, tmp_path):
    assert build("iu-xray", [iu / "annotation.json", iu / "ecgen-radiology"], tmp_path / "built") == 0
    scored = score_references_against(tmp_path / "built", tmp_path)
    assert scored["findings_impression"] >= scored["findings"] > 0
