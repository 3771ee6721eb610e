"""`rexrank build-dataset radrbench-cxr`: RadRBench-CXR's published JSON files (one per source and task, test files
plus the reasoning subset) as a dataset folder with one config per (source, task). The items here are synthetic, in
the published layout: lists of {item_id, question (options inside), answer, answer_content, image_path, dataset_name}
and, in the reasoning files, original_report, reason_steps (a string, a list, or {"reason_steps": str}) and plan."""

import hashlib
import json

import datasets
import pytest
import yaml
from fixtures.radrbench import (
    BINARY,
    BINARY_REASONING,
    CHEXPERT,
    CHEXPERT_REASONING,
    CONFIGS,
    MULTI,
    MULTI_FREE,
    REPORT,
    RSNA,
    SIIM,
    SINGLE,
    TEMPORAL,
    TEMPORAL_REASONING,
    YES_NO,
    mimic_id,
    mimic_image,
    published,
    write,
)

from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.radrbench.dataset import COLUMNS, config_name, describe, read_radrbench, relative_image


def info_of(folder):
    return json.loads((folder / "build_info.json").read_text())


def load(folder, config, tmp_path):
    return datasets.load_dataset(str(folder), config, split="test", cache_dir=str(tmp_path / "cache")).to_list()


@pytest.mark.slow
def test_one_config_per_source_and_task_each_loads(radrbench_built, tmp_path):
    folder, _, out = radrbench_built
    front = yaml.safe_load((folder / "README.md").read_text().split("---")[1])
    assert [c["config_name"] for c in front["configs"]] == CONFIGS
    assert front["configs"][1]["data_files"] == [{"split": "test", "path": "mimic-cxr.binary/test-*.parquet"}]
    expected = {"chexpert.single": CHEXPERT + CHEXPERT_REASONING, "mimic-cxr.binary": BINARY, "mimic-cxr.multi": MULTI,
                "mimic-cxr.multi_no_option": MULTI_FREE, "mimic-cxr.single": SINGLE, "ms-cxr-t.temporal": TEMPORAL,
                "rsna.binary": RSNA, "siim.binary": SIIM}
    for config, items in expected.items():
        rows = load(folder, config, tmp_path)
        assert list(rows[0]) == list(COLUMNS)
        assert [r["question"] for r in rows] == [i["question"] for i in items], config
        assert [r["answer"] for r in rows] == [i["answer"] for i in items]
        source, task = config.split(".")
        assert {r["source"] for r in rows} == {source} and {r["task"] for r in rows} == {task}
    assert "radrbench-cxr test: 15 items in 8 configs (chexpert.single 2, mimic-cxr.binary 3," in out.out


def test_columns_options_reasoning_and_report(radrbench_built, tmp_path):
    folder, _, _ = radrbench_built
    binary = load(folder, "mimic-cxr.binary", tmp_path)
    first = binary[0]
    assert first["item_id"] == first["published_item_id"] == mimic_id(1)
    assert first["options"] == [{"letter": "A", "text": "Yes"}, {"letter": "B", "text": "No"}]
    assert first["answer_content"] == "Yes" and first["original_report"] == REPORT
    # A published string of steps becomes a list split at line breaks; the published form stays in reason_steps_json.
    assert first["reason_steps"] == ["The costophrenic angle is blunted.", "So there is an effusion."]
    assert json.loads(first["reason_steps_json"]) == BINARY_REASONING[0]["reason_steps"]
    assert first["source_files"] == ["test/mimic_binary_test_option.json", "mimic_binary_gt_reasoning.json"]
    assert json.loads(first["extra_json"]) == {"dataset_name": "reason Image Classification",
                                               "plan": {"disease": "pleural effusion", "plan": "Look."}}
    # An item outside the reasoning subset has no report and no steps.
    assert binary[1]["original_report"] is None and binary[1]["reason_steps"] is None
    assert binary[1]["reason_steps_json"] is None
    assert binary[1]["source_files"] == ["test/mimic_binary_test_option.json"]
    single = load(folder, "mimic-cxr.single", tmp_path)
    assert single[0]["reason_steps"] == ["Step one.", "Step two.", "Step three."]
    assert [o["text"] for o in single[1]["options"]] == ["atelectasis", "edema", "fracture", "lung lesion"]
    assert load(folder, "mimic-cxr.multi_no_option", tmp_path)[0]["options"] == []
    temporal = load(folder, "ms-cxr-t.temporal", tmp_path)
    assert temporal[1]["reason_steps"] == ["The edema was larger before. It is smaller now."]
    assert json.loads(temporal[1]["reason_steps_json"]) == TEMPORAL_REASONING[0]["reason_steps"]


def test_a_repeated_published_id_is_numbered(radrbench_built, tmp_path):
    folder, _, out = radrbench_built
    temporal = load(folder, "ms-cxr-t.temporal", tmp_path)
    assert [r["item_id"] for r in temporal] == ["[ms-cxr-t-train] [pair-7]MS-CXR-T",
                                                "[ms-cxr-t-train] [pair-7]MS-CXR-T#2",
                                                "[ms-cxr-t-train] [pair-8]MS-CXR-T"]
    assert temporal[1]["published_item_id"] == "[ms-cxr-t-train] [pair-7]MS-CXR-T"
    assert "ms-cxr-t.temporal: 1 item(s) share a published item id" in out.err


def test_image_paths_relative_to_the_root_and_missing_ones_counted(radrbench_built, tmp_path):
    folder, _, out = radrbench_built
    binary = load(folder, "mimic-cxr.binary", tmp_path)
    assert binary[0]["image_paths"] == ["MIMIC-CXR-JPG/files/p10/p10000001/s50000001/view1.jpg",
                                        "MIMIC-CXR-JPG/files/p10/p10000001/s50000001/view2.jpg"]
    assert binary[2]["image_paths"] == ["MIMIC-CXR-JPG/files/p10/p10000003/s50000003/view1.jpg"]  # not there
    # A root that is RSNA's own folder: the longest tail found under it.
    assert [r["image_paths"] for r in load(folder, "rsna.binary", tmp_path)] == [
        ["train/10000000-aaaa-bbbb-cccc-dddddddddddd.jpeg"], ["train/20000000-aaaa-bbbb-cccc-dddddddddddd.jpeg"]]
    siim = load(folder, "siim.binary", tmp_path)
    assert siim[0]["image_paths"] == ["siim/dicom-images-train/1.2.3/1.2.3.4/1.2.3.4.png"]  # from the dataset folder on
    info = json.loads((folder / "build_info.json").read_text())
    assert info["counts"]["configs"]["mimic-cxr.binary"] == {
        "task": "binary", "source": "mimic-cxr", "items": 3, "with_reasoning": 2, "with_report": 2, "repeated_ids": 0,
        "only_in_reasoning_files": 0, "images": 4, "missing": 1, "items_missing": 1}
    assert "mimic-cxr.binary: 1 of 4 image(s) not found under the image root (1 item(s); first: " \
           "MIMIC-CXR-JPG/files/p10/p10000003/s50000003/view1.jpg)" in out.err
    assert info["counts"]["configs"]["rsna.binary"]["missing"] == 0
    assert "rsna.binary:" not in out.err  # every image found: nothing to say


def test_relative_image_without_a_root_and_for_an_unknown_layout(tmp_path):
    assert relative_image(mimic_image(1), None) == ("MIMIC-CXR-JPG/files/p10/p10000001/s50000001/view1.jpg", None)
    assert relative_image("images/a.png", None) == ("images/a.png", None)
    (tmp_path / "files" / "p1").mkdir(parents=True)
    (tmp_path / "files" / "p1" / "a.jpg").write_bytes(b"")
    assert relative_image("/x/MIMIC-CXR-JPG/files/p1/a.jpg", tmp_path) == ("files/p1/a.jpg", True)
    assert relative_image("/x/elsewhere/b.jpg", tmp_path) == ("x/elsewhere/b.jpg", False)


def test_card_build_info_and_training_files(radrbench_built):
    folder, source, out = radrbench_built
    text = (folder / "README.md").read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert front["license"] == "other" and "PhysioNet" in front["extra_gated_prompt"]
    assert "arXiv:2504.20930" in text and "| `mimic-cxr.binary` | binary | mimic-cxr | 3 | 2 | 1 |" in text
    assert info_of(folder)["counts"]["configs"]["chexpert.single"]["only_in_reasoning_files"] == 1
    assert "Items only in the reasoning files, not in the source's test file" in text
    assert "`chexpert.single` (1)" in text
    assert "- MS-CXR-T (https://physionet.org/content/ms-cxr-t/)" in text and "Open-i" not in text  # sources present
    info = json.loads((folder / "build_info.json").read_text())
    test_file = source / "test" / "mimic_binary_test_option.json"
    assert info["sources"]["test/mimic_binary_test_option.json"] == hashlib.sha256(test_file.read_bytes()).hexdigest()
    assert "reason_train/mimic_binary_option.json" not in info["sources"] and len(info["sources"]) == 12
    assert info["files"]["mimic-cxr.binary"] == ["mimic_binary_gt_reasoning.json", "test/mimic_binary_test_option.json"]
    assert info["counts"]["items"] == 15 and info["images_checked"] is True
    assert "1 training file(s) left out (only the test split is built): reason_train/mimic_binary_option.json" \
        in out.err


def test_files_given_one_by_one_and_no_image_root(tmp_path, capsys):
    source = published(tmp_path / "download")
    files = [source / "test" / "temporal_cls_test_option.json", source / "temporal_gt_reasoning.json"]
    args = ["build-dataset", "radrbench-cxr", "--out", str(tmp_path / "temporal")]
    assert main(args + [a for f in files for a in ("--source", str(f))]) == 0
    info = json.loads((tmp_path / "temporal" / "build_info.json").read_text())
    assert list(info["counts"]["configs"]) == ["ms-cxr-t.temporal"] and info["images_checked"] is False
    assert info["counts"]["configs"]["ms-cxr-t.temporal"]["missing"] is None
    assert "Images were not checked" in (tmp_path / "temporal" / "README.md").read_text()
    rows = load(tmp_path / "temporal", "ms-cxr-t.temporal", tmp_path)
    assert rows[0]["image_paths"] == ["MIMIC-CXR-JPG/files/p10/p10000005/s50000005/view1.jpg",
                                      "MIMIC-CXR-JPG/files/p10/p10000006/s50000006/view1.jpg"]
    assert "not found" not in capsys.readouterr().err


def test_file_names_say_source_task_and_split(tmp_path):
    assert describe(tmp_path / "mimic_multi_test_no_option.json", "x").config == "mimic-cxr.multi_no_option"
    assert describe(tmp_path / "chexpert_binary_test_no_option.json", "x").config == "chexpert.binary_no_option"
    assert describe(tmp_path / "temporal_cls_test_option.json", "x").config == "ms-cxr-t.temporal"
    assert describe(tmp_path / "openi_single_gt_reasoning.json", "x").config == "iu-xray.single"
    assert describe(tmp_path / "chexpert_binary_option.json", "reason_train/chexpert_binary_option.json") is None
    assert describe(tmp_path / "mimic_single_train.json", "mimic_single_train.json") is None
    with pytest.raises(InputError, match="cannot tell the task of 'mimic_vqa_test_option'"):
        describe(tmp_path / "mimic_vqa_test_option.json", "x")
    with pytest.raises(InputError, match="padchest_binary_test_option.json: cannot tell the source of RadRBench-CXR's"):
        describe(tmp_path / "padchest_binary_test_option.json", "x")


@pytest.mark.parametrize(("name", "config"), [
    ("mimic_binary", "mimic-cxr.binary"), ("mimic_multi_no_option", "mimic-cxr.multi_no_option"),
    ("temporal_cls_test_option", "ms-cxr-t.temporal"), ("temporal", "ms-cxr-t.temporal"),
    ("chexpert_multi_no_option_evaluation_res", "chexpert.multi_no_option"), ("openi_single", "iu-xray.single"),
    ("mimic-cxr.binary", "mimic-cxr.binary"), ("ms-cxr-t.temporal", "ms-cxr-t.temporal")])
def test_a_config_is_named_by_rexrank_or_by_the_authors(name, config):
    """The authors name a task `mimic_binary` (their output files and --task), rexrank a config `mimic-cxr.binary`."""
    assert config_name(name) == config


def test_a_config_of_no_known_source_or_task_is_refused():
    with pytest.raises(InputError, match="cannot tell the source of RadRBench-CXR's 'padchest_binary'"):
        config_name("padchest_binary")
    with pytest.raises(InputError, match="cannot tell the task of 'mimic'"):
        config_name("mimic")
    with pytest.raises(InputError, match="cannot tell the task of 'vqa'"):
        config_name("mimic-cxr.vqa")


@pytest.mark.parametrize("name, content, message", [
    ("mimic_binary_test_option.json", {"s1": {"section_findings": "x", "section_impression": None}},
     "not a RadRBench-CXR file: expected a JSON list of items"),
    ("mimic_binary_test_option.json", [{"item_id": "a", "question": "Q?" + YES_NO}],
     "1 of 1 item(s) cannot be read as RadRBench-CXR binary items:\n  - item 1 ('a'): no answer, image_path"),
    ("mimic_binary_test_option.json", [BINARY[0], BINARY[1], BINARY[0]],
     f"item 3 ({mimic_id(1)!r}): the same item id and question appear more than once"),
    ("mimic_single_test_option.json", MULTI_FREE, "cannot be read as a single answer"),
    ("mimic_binary_test_option.json", [dict(BINARY[0], answer="C")], "cannot be read as a binary answer"),
    ("mimic_vqa_test_option.json", BINARY, "cannot tell the task of 'mimic_vqa_test_option'"),
    ("mimic_binary_test_option.json", [], "holds no items"),
    ("reason_train/mimic_binary_option.json", BINARY, "no RadRBench-CXR test files in"),
])
def test_bad_sources_are_named_and_nothing_is_written(tmp_path, capsys, name, content, message):
    path = write(tmp_path / "in" / name, content)
    out = tmp_path / "radrbench"
    assert main(["build-dataset", "radrbench-cxr", "--source", str(tmp_path / "in"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert str(path.name) in err or "no RadRBench-CXR test files" in message
    assert not out.exists() and not list(tmp_path.glob(".radrbench.*"))


def test_files_that_disagree_on_an_item_are_refused(tmp_path):
    folder = tmp_path / "in"
    write(folder / "mimic_binary_test_option.json", BINARY)
    write(folder / "mimic_binary_gt_reasoning.json", [dict(BINARY_REASONING[0], answer="B", answer_content="No")])
    with pytest.raises(InputError, match=r"mimic-cxr.binary: item .* has a different answer in "
                                         r"mimic_binary_test_option.json and mimic_binary_gt_reasoning.json"):
        read_radrbench([folder])
    other = write(tmp_path / "elsewhere" / "mimic_binary_test_option.json", BINARY[:2])
    with pytest.raises(InputError, match="two different files named mimic_binary_test_option.json for "
                                         r"mimic-cxr.binary \(.*/in/mimic_binary_test_option.json, "
                                         r".*/elsewhere/mimic_binary_test_option.json\)"):
        read_radrbench([folder / "mimic_binary_test_option.json", other])


def test_the_same_file_twice_is_read_once(tmp_path):
    first = write(tmp_path / "a" / "siim_binary_test_option.json", SIIM)
    second = write(tmp_path / "b" / "siim_binary_test_option.json", SIIM)
    build = read_radrbench([first, second])
    assert len(build.configs["siim.binary"]) == 1 and list(build.sources) == ["siim_binary_test_option.json"]
    assert build.notes == ["siim_binary_test_option.json: a second copy of siim_binary_test_option.json, read once"]


def test_options_split_public_and_image_root_are_checked(tmp_path, capsys):
    source = write(tmp_path / "siim_binary_test_option.json", SIIM)
    base = ["build-dataset", "radrbench-cxr", "--source", str(source), "--out", str(tmp_path / "out")]
    assert main(base + ["--split", "train"]) == 2
    assert "only the test split is built" in capsys.readouterr().err
    assert main(base + ["--public", "--push-to", "org/radrbench"]) == 2
    assert "radrbench-cxr is credentialed data" in capsys.readouterr().err
    assert main(base + ["--image-root", str(tmp_path / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_push_to_a_private_repo_that_load_dataset_reads(fake_hub, tmp_path, monkeypatch, capsys):
    source = published(tmp_path / "download")
    monkeypatch.setenv("HF_TOKEN", "hf_writer")
    assert main(["build-dataset", "radrbench-cxr", "--source", str(source), "--out", str(tmp_path / "radrbench"),
                 "--push-to", "org/radrbench"]) == 0
    assert "pushed to private repo org/radrbench" in capsys.readouterr().out
    from huggingface_hub import HfApi

    assert HfApi().dataset_info("org/radrbench", token="hf_writer").private is True
    assert fake_hub.commits("org/radrbench", repo_type="dataset")[-1] == "rexrank build-dataset radrbench-cxr " \
                                                                          "(test, 15 items)"
    rows = datasets.load_dataset("org/radrbench", "mimic-cxr.single", split="test", token="hf_writer")
    assert rows["item_id"] == [mimic_id(1), mimic_id(4)]
