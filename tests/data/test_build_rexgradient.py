"""`rexrank build-dataset rexgradient` from ReXGradient-160K's metadata files (and the private test file in the same
fields). Every report here is synthetic, written by the tests in that layout."""

import gzip
import json

import pandas as pd
import pytest
from fixtures.built import build, load, score_references_against, sha

from rexrank.builders import BUILDERS
from rexrank.data import rexgradient


def rexgradient_study(n, findings, impression, views=("PA", "LATERAL"), indication="Synthetic indication.",
                      comparison=None):
    """One entry of <split>_metadata.json, in the Hub dataset's fields; synthetic text."""
    patient, accession = f"GRDNP{n:04d}", f"GRDNA{n:04d}"
    images = [f"../deid_png/{patient}/{accession}/studies/1.2.{n}/series/1.3.{n}/instances/1.4.{n}.{i}.png"
              for i in range(len(views))]
    return f"{patient}_{accession}_1.2.{n}", {
        "PatientID": patient, "AccessionNumber": accession, "StudyInstanceUid": f"1.2.{n}", "StudyDate": "20200101",
        "PatientSex": "F", "PatientAge": "070Y", "Indication": indication, "Comparison": comparison,
        "Findings": findings, "Impression": impression, "ImagePath": images, "ImageModality": ["DX"] * len(views),
        "ImageViewPosition": list(views)}


def rexgradient_metadata(folder, split="test"):
    studies = dict([
        rexgradient_study(1, "Synthetic gradient findings one.", "Synthetic gradient impression one.",
                          comparison="Synthetic prior."),
        rexgradient_study(2, None, "Synthetic gradient impression two.", views=("AP",), indication=None),
        rexgradient_study(3, "Synthetic gradient findings three.", "", views=("PA", "LL", "LATERAL")),
        rexgradient_study(4, "", None),
    ])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}_metadata.json").write_text(json.dumps(studies, indent=1))
    return studies


SYNTHETIC_GRADIENT_TEXT = ("Synthetic gradient", "Synthetic indication", "Synthetic prior")


def test_rexgradient_from_the_metadata_folder(tmp_path, capsys):
    studies = rexgradient_metadata(tmp_path / "ReXGradient-160K" / "metadata")
    out = tmp_path / "rexgradient"
    assert build("rexgradient", [tmp_path / "ReXGradient-160K"], out) == 0
    captured = capsys.readouterr()
    assert "rexgradient test: 4 studies (2 with findings, 3 in findings_impression)" in captured.out
    assert "studies with neither Findings nor Impression: 1 (GRDNP0004_GRDNA0004_1.2.4)" in captured.err
    assert not any(text in captured.out + captured.err for text in SYNTHETIC_GRADIENT_TEXT)
    ids = list(studies)
    findings = load(out, "findings", "test", tmp_path)
    assert findings["study_id"].tolist() == [ids[0], ids[2]]
    everything = load(out, "findings_impression", "test", tmp_path).set_index("study_id")
    first = everything.loc[ids[0]]
    assert first["reference_findings_impression"] == \
        "Findings: Synthetic gradient findings one. Impression: Synthetic gradient impression one."
    assert list(first["image_paths"]) == ["GRDNP0001/GRDNA0001/studies/1.2.1/series/1.3.1/instances/1.4.1.0.png",
                                          "GRDNP0001/GRDNA0001/studies/1.2.1/series/1.3.1/instances/1.4.1.1.png"]
    assert list(first["views"]) == ["PA", "LATERAL"]
    assert first["context"] == "Indication: Synthetic indication. Comparison: Synthetic prior."
    assert pd.isna(everything.loc[ids[1], "context"]) and pd.isna(everything.loc[ids[2], "impression"])
    assert list(everything.loc[ids[2], "views"]) == ["PA", "LL", "LATERAL"]
    info = json.loads((out / "build_info.json").read_text())
    source = tmp_path / "ReXGradient-160K" / "metadata" / "test_metadata.json"
    assert info["sources"] == {"test_metadata.json": sha(source)}
    # always private: never pushed to a public repo
    assert build("rexgradient", [source], tmp_path / "again", "--public") == 2
    assert "may only be pushed to a private or gated repo" in capsys.readouterr().err


def test_rexgradient_reports_from_a_csv_images_from_the_view_position_json(tmp_path):
    studies = rexgradient_metadata(tmp_path)
    images_only = {i: {k: r[k] for k in ("PatientID", "ImagePath", "ImageViewPosition")} for i, r in studies.items()}
    view_json = tmp_path / "test_metadata_view_position.json"
    view_json.write_text(json.dumps(images_only))
    table = pd.DataFrame([{"id": i, **{k: v for k, v in r.items() if k not in ("ImagePath", "ImageViewPosition",
                                                                              "ImageModality")}}
                          for i, r in studies.items()])
    table.to_csv(tmp_path / "test_metadata.csv", index=False)
    merged = rexgradient.read_rexgradient([view_json, tmp_path / "test_metadata.csv"], "test")
    alone = rexgradient.read_rexgradient([tmp_path / "test_metadata.json"], "test")
    columns = ["study_id", "findings", "impression", "image_paths", "views", "context"]
    pd.testing.assert_frame_equal(merged.studies[columns], alone.studies[columns])
    # a CSV alone, its image lists written as text
    table["ImagePath"] = [str(r["ImagePath"]) for r in studies.values()]
    table.to_csv(tmp_path / "private_test.csv.gz", index=False)
    private = rexgradient.read_rexgradient([tmp_path / "private_test.csv.gz"], "test")
    assert private.studies["image_paths"].tolist() == alone.studies["image_paths"].tolist()
    assert private.studies["views"].tolist() == [[None] * len(p) for p in alone.studies["image_paths"]]
    assert private.studies["findings"].tolist() == alone.studies["findings"].tolist()


def test_rexgradient_notes_missing_images_and_the_literal_word_none(tmp_path):
    studies = rexgradient_metadata(tmp_path)
    first = next(iter(studies))
    studies[first]["Findings"] = "None"
    (tmp_path / "test_metadata.json").write_text(json.dumps(studies))
    root = tmp_path / "deid_png"
    present = studies[first]["ImagePath"][0].removeprefix("../deid_png/")
    (root / present).parent.mkdir(parents=True)
    (root / present).write_bytes(b"png")
    built = rexgradient.read_rexgradient([tmp_path / "test_metadata.json"], "test", image_root=root)
    assert built.studies.set_index("study_id").loc[first, "findings"] == "None"
    assert f"studies with a section whose text is the word None (kept as text, as the source has it): 1 ({first})" \
        in built.notes
    assert any(n.startswith(f"7 of 8 images not found under {root} (4 studies: ") for n in built.notes)


@pytest.mark.parametrize("case, message", [
    ("other split", "valid_metadata.json is the valid split; pass --split valid"),
    ("repeated id", "'GRDNP0001_GRDNA0001_1.2.1' appears more than once (a study listed twice?)"),
    ("wrong file", "no Findings, Impression or ImagePath fields (it has id, image_path, report, split)"),
    ("not parallel", "study GRDNP0001_GRDNA0001_1.2.1: ImagePath and ImageViewPosition are not parallel lists"),
    ("truncated gz", "truncated or damaged compressed file"),
    ("different studies", "list different studies: 1 only in test_metadata.json (GRDNP0004_GRDNA0004_1.2.4)"),
    ("not text", "study GRDNP0002_GRDNA0002_1.2.2: Findings is a list, not text"),
    ("empty folder", "no test_metadata.json, test_metadata_view_position.json or test_metadata.csv here"),
    ("csv repeated id", "study id(s) listed more than once: GRDNP0001_GRDNA0001_1.2.1"),
])
def test_rexgradient_bad_sources_are_named(tmp_path, capsys, case, message):
    studies = rexgradient_metadata(tmp_path)
    source = tmp_path / "test_metadata.json"
    sources, text = [source], source.read_text()
    if case == "other split":
        sources = [tmp_path / "valid_metadata.json"]
        sources[0].write_text(text)
    elif case == "repeated id":
        first = json.dumps(dict([next(iter(studies.items()))]))[1:-1]
        source.write_text("{" + first + "," + text.lstrip()[1:])
    elif case == "wrong file":
        source.write_text(json.dumps({"a": {"id": "a", "report": "x", "image_path": [], "split": "test"}}))
    elif case == "not parallel":
        first = next(iter(studies))
        studies[first]["ImageViewPosition"] = ["PA"]
        source.write_text(json.dumps(studies))
    elif case == "truncated gz":
        data = gzip.compress(text.encode() * 20)
        sources = [tmp_path / "test_metadata.json.gz"]
        sources[0].write_bytes(data[: len(data) // 2])
    elif case == "different studies":
        pd.DataFrame([{"id": i, "Findings": r["Findings"]} for i, r in list(studies.items())[:3]]).to_csv(
            tmp_path / "test_metadata.csv", index=False)
        sources = [source, tmp_path / "test_metadata.csv"]
    elif case == "not text":
        studies[list(studies)[1]]["Findings"] = ["Synthetic gradient findings as a list."]
        source.write_text(json.dumps(studies))
    elif case == "empty folder":
        (tmp_path / "metadata").mkdir()
        sources = [tmp_path / "metadata"]
    elif case == "csv repeated id":
        rows = [{"id": i, "Findings": r["Findings"]} for i, r in studies.items()]
        pd.DataFrame(rows + rows[:1]).to_csv(tmp_path / "test_metadata.csv", index=False)
        sources = [tmp_path / "test_metadata.csv"]
    assert build("rexgradient", sources, tmp_path / "out") == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert not any(text in captured.out + captured.err for text in SYNTHETIC_GRADIENT_TEXT)
    assert not (tmp_path / "out").exists()


def test_the_builder_reads_the_original_layout():
    builder = BUILDERS["rexgradient"]
    assert builder.originals is rexgradient.read_rexgradient and builder.originals_help == rexgradient.HELP
    assert builder.always_private


def test_rexrank_score_reads_the_built_rexgradient(tmp_path):
    rexgradient_metadata(tmp_path / "ReXGradient-160K" / "metadata")
    assert build("rexgradient", [tmp_path / "ReXGradient-160K"], tmp_path / "built") == 0
    assert score_references_against(tmp_path / "built", tmp_path) == {"findings": 2, "findings_impression": 3}
