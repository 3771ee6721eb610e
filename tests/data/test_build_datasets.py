"""`rexrank build-dataset`: a test set from a ReXrank split JSON, as a dataset folder `load_dataset` reads per task,
with its card, checksums and the comparison with the official split. Synthetic reports only (the demo split)."""

import hashlib
import json

import datasets
import pandas as pd
import pytest
import yaml
from fixtures.built import rexrank_json
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.data import load_split
from rexrank.data.build import COLUMNS, compare_with_official, official_ids
from rexrank.errors import InputError
from rexrank.results import Result


@pytest.fixture
def demo_rows():
    return [json.loads(line) for line in demo.DATASET.read_text().splitlines()]


@pytest.fixture
def built(tmp_path, demo_rows, capsys):
    source = rexrank_json(tmp_path / "ReXRank_MIMICCXR_test.json", demo_rows)
    assert main(["build-dataset", "mimic-cxr", "--source", str(source), "--out", str(tmp_path / "mimic")]) == 0
    return tmp_path / "mimic", source, capsys.readouterr()


def test_each_task_is_a_config_load_dataset_reads(built, demo_rows, tmp_path):
    folder, _, _ = built
    load = lambda config: datasets.load_dataset(str(folder), config, split="test",  # noqa: E731
                                                cache_dir=str(tmp_path / "cache")).to_pandas()
    findings, everything = load("findings"), load("findings_impression")
    with_findings = [r for r in demo_rows if r["findings"] is not None]
    assert findings["study_id"].tolist() == [r["study_id"] for r in with_findings]
    assert findings["reference_findings"].tolist() == [r["findings"] for r in with_findings]
    assert len(everything) == len(demo_rows) and list(everything.columns) == list(COLUMNS)
    no_impression = next(r for r in demo_rows if r["impression"] is None and r["findings"] is not None)
    row = everything.set_index("study_id").loc[no_impression["study_id"]]
    assert row["reference_findings_impression"] == f"Findings: {no_impression['findings']} Impression: None"
    assert pd.isna(row["impression"]) and row["context"] == "Cough."
    assert list(row["image_paths"]) == [f"files/{no_impression['study_id']}/view1.jpg"]


def test_the_card_names_both_configs_the_counts_and_the_terms(built, demo_rows):
    folder, source, _ = built
    text = (folder / "README.md").read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in front["configs"]] == ["findings", "findings_impression"]
    assert front["configs"][0]["data_files"] == [{"split": "test", "path": "findings/test-*.parquet"}]
    assert front["license"] == "other" and "PhysioNet" in front["extra_gated_prompt"]
    info = json.loads((folder / "build_info.json").read_text())
    assert info["sources"] == {source.name: hashlib.sha256(source.read_bytes()).hexdigest()}
    with_findings = sum(r["findings"] is not None for r in demo_rows)
    assert info["counts"]["findings"] == with_findings and f"| {with_findings:,} |" in text
    assert "This build differs from the official split** (2,347 studies)" in text


def test_a_build_that_differs_from_the_official_split_says_so(built, demo_rows):
    _, _, out = built
    assert f"the official mimic-cxr test split has 2,347 studies, this build {len(demo_rows)}" in out.err
    official = official_ids("iu-xray", "test")
    check = compare_with_official("iu-xray", "test", official[::-1])
    assert check["matches"] and check["official"] == 590 and len(official) == 590
    check = compare_with_official("iu-xray", "test", [*official[1:], "CXR0_IM-0000"])
    assert not check["matches"] and check["missing"] == official[:1] and check["extra"] == ["CXR0_IM-0000"]
    assert not compare_with_official("iu-xray", "valid", ["a"])["matches"]


@pytest.mark.slow
def test_rexrank_score_reads_the_built_folder_as_it_reads_the_source(built, tmp_path):
    folder, source, _ = built
    from_folder, from_json = load_split(folder), load_split(source)
    pd.testing.assert_frame_equal(from_folder.studies[["study_id", "findings", "impression"]],
                                  from_json.studies[["study_id", "findings", "impression"]])
    for task in ("findings", "findings_impression"):
        for name, dataset in (("built", folder), ("json", source)):
            code = main(["score", "--predictions", str(demo.predictions("demo-careful", task)), "--dataset",
                         str(dataset), "--dataset-name", "mimic-cxr", "--task", task, "--metrics", "bleu2",
                         "--out", str(tmp_path / name), "--quiet"])
            assert code == 0
        a, b = (Result.read(written(tmp_path / name, f"mimic-cxr.{task}.json")) for name in ("built", "json"))
        assert a.metrics["bleu2"].value == b.metrics["bleu2"].value and a.counts == b.counts


@pytest.mark.slow
def test_bad_sources_are_named(tmp_path, capsys, demo_rows):
    twice = tmp_path / "twice.json"
    rexrank_json(twice, demo_rows[:2])
    twice.write_text(twice.read_text().replace('"demo-0002"', '"demo-0001"'))
    assert main(["build-dataset", "mimic-cxr", "--source", str(twice), "--out", str(tmp_path / "a")]) == 2
    assert "key 'demo-0001' appears more than once" in capsys.readouterr().err
    not_rexrank = tmp_path / "other.json"
    not_rexrank.write_text('{"demo-0001": {"report": "x"}}')
    assert main(["build-dataset", "iu-xray", "--source", str(not_rexrank), "--out", str(tmp_path / "b")]) == 2
    assert "iu-xray: give one --source for the Open-i reports" in capsys.readouterr().err  # nor R2Gen's annotation
    assert main(["build-dataset", "mimic-cxr", "--source", str(tmp_path / "nope.json"), "--out", "x"]) == 2
    assert "no such source" in capsys.readouterr().err
    assert main(["build-dataset", "mimic-cxr", "--source", str(twice), "--out", "x", "--public"]) == 2
    assert "credentialed" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_existing_folder_is_replaced_only_when_it_is_a_built_dataset(built, tmp_path, capsys):
    folder, source, _ = built
    assert main(["build-dataset", "mimic-cxr", "--source", str(source), "--out", str(folder)]) == 0  # rebuilt
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["build-dataset", "mimic-cxr", "--source", str(source), "--out", str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert "is not a rexrank dataset folder" in capsys.readouterr().err


@pytest.mark.slow
def test_pushed_privately_then_scored_from_the_hub(built, tmp_path, fake_hub, monkeypatch, capsys):
    _, source, _ = built
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    code = main(["build-dataset", "mimic-cxr", "--source", str(source), "--out", str(tmp_path / "pushed"),
                 "--push-to", "rexrank-test/mimic-cxr"])
    assert code == 0 and "pushed to private repo rexrank-test/mimic-cxr" in capsys.readouterr().out
    files = fake_hub.files("rexrank-test/mimic-cxr", repo_type="dataset")
    assert {"README.md", "build_info.json", "findings/test-00000-of-00001.parquet"} <= set(files)
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(InputError, match="rexrank-test/mimic-cxr: could not load split 'test' from the Hub"):
        load_split("rexrank-test/mimic-cxr")  # private
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    split = load_split("rexrank-test/mimic-cxr")
    pd.testing.assert_frame_equal(split.studies[["study_id", "findings", "impression"]],
                                  load_split(source).studies[["study_id", "findings", "impression"]])
