"""Image paths as ReXrank's official split files write them reach a submitted script, and nothing outside the image
folder does. The shapes (ids and paths only, numbers made up) are those of ReXrank's `data/*.json` and
`example_files/*prediction.json`: MIMIC-CXR's begin with a slash (`/p10/p10000032/s50000001/<dicom>.jpg`, relative
to MIMIC-CXR-JPG's `files/`: ReXrank's MedVersa example joins `img_root_dir + image_path` with a root that has no
trailing slash), IU-Xray's and CheXpert Plus's are relative; every record names a `key_image_path` too. A script
joins them as ReXrank's examples do: `root + path` (MedVersa's) and `os.path.join(root, path)` (MedGemma's)."""

import json
import os
import shutil

import pytest
from fixtures.code_submissions import READ_INPUT
from test_sandbox import predictions, write_submission

from rexrank.errors import InputError
from rexrank.inference.inputs import image_relative, input_records
from rexrank.inference.runner import infer
from rexrank.inference.staging import image_tree

MIMIC = "/p10/p10000032/s50000001/0a1b2c3d-4e5f6a7b-8c9d0e1f-2a3b4c5d-6e7f8a9b.jpg"
MIMIC_LATERAL = "/p10/p10000032/s50000001/1b2c3d4e-5f6a7b8c-9d0e1f2a-3b4c5d6e-7f8a9b0c.jpg"
IU_XRAY = "CXR1_IM-0001/0.png"
IU_XRAY_SECOND = "CXR2_IM-0002-1001/1.png"
CHEXPERT_PLUS = "valid/patient64541/study1/view1_frontal.png"
# (study id, image_path, key_image_path): one study per official split's shape
STUDIES = (("50000001", [MIMIC, MIMIC_LATERAL], MIMIC), ("CXR1_IM-0001", [IU_XRAY, "CXR1_IM-0001/1.png"], IU_XRAY),
           ("CXR2_IM-0002-1001", [IU_XRAY_SECOND], IU_XRAY_SECOND),
           ("patient64541_study1", [CHEXPERT_PLUS], CHEXPERT_PLUS))
ESCAPES = ("../outside.png", "/../outside.png", "p10/../../outside.png", "./../outside.png")


def images_at(root, paths):
    """Each named image as a file under `root`, where the dataset keeps it (the leading slash is the root's)."""
    for path in paths:
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_bytes(b"synthetic " + path.encode())
    return root


def rexrank_split(path, studies=STUDIES):
    """A split in ReXrank's JSON form with those paths; its report text synthetic."""
    path.write_text(json.dumps({sid: {"image_path": images, "key_image_path": key, "section_findings": "No effusion.",
                                      "section_impression": "Normal.", "split": "test",
                                      "frontal_lateral": ["Frontal"] * len(images)}
                                for sid, images, key in studies}))
    return path


@pytest.mark.parametrize("path", [MIMIC, IU_XRAY, IU_XRAY_SECOND, CHEXPERT_PLUS])
def test_each_official_shape_is_staged_where_the_script_looks(tmp_path, path):
    root = images_at(tmp_path / "files", [path])
    tree = image_tree({"s": {"image_path": [path]}}, root, tmp_path / "tree")
    staged = [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()]
    assert staged == [path.lstrip("/")]
    given = image_relative(path)  # what the script's input names
    for join in (f"{tree}/" + given, os.path.join(f"{tree}/", given), f"{tree}" + path if path[0] == "/" else None):
        assert join is None or open(join, "rb").read() == b"synthetic " + path.encode()


def test_a_key_image_named_only_there_is_staged(tmp_path):
    root = images_at(tmp_path / "files", [MIMIC, MIMIC_LATERAL])
    tree = image_tree({"s": {"image_path": [MIMIC_LATERAL], "key_image_path": MIMIC}}, root, tmp_path / "tree")
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == \
        sorted(p.lstrip("/") for p in (MIMIC, MIMIC_LATERAL))


def test_an_image_root_of_links_as_the_hub_cache_keeps_it_is_staged(tmp_path):
    """`hf download` into the cache: each file of a snapshot is a link into the repo's blobs/, outside the
    snapshot folder given as the image root."""
    snapshot, blobs = tmp_path / "snapshots" / "abc", tmp_path / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "0f1e").write_bytes(b"synthetic blob")
    (snapshot / "CXR1_IM-0001").mkdir(parents=True)
    (snapshot / IU_XRAY).symlink_to(os.path.relpath(blobs / "0f1e", (snapshot / IU_XRAY).parent))
    tree = image_tree({"s": {"image_path": [IU_XRAY]}}, snapshot, tmp_path / "tree")
    assert (tree / IU_XRAY).read_bytes() == b"synthetic blob" and not (tree / IU_XRAY).is_symlink()


@pytest.mark.parametrize("path", ESCAPES)
def test_a_path_that_leaves_the_image_folder_is_not_staged(tmp_path, path):
    """Hostile: `..` past the root, however spelled; the file it names exists beside the image folder."""
    (tmp_path / "outside.png").write_bytes(b"beside the image folder")
    root = images_at(tmp_path / "files", [MIMIC])
    (root / "p10" / "outside.png").write_bytes(b"inside")
    tree = image_tree({"s": {"image_path": [path, MIMIC]}}, root, tmp_path / "tree")
    assert image_relative(path) is None
    assert [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()] == [MIMIC.lstrip("/")]
    assert not any(p.name == "outside.png" for p in tree.rglob("*"))


def test_absolute_paths_are_read_under_the_root_never_from_the_host(tmp_path):
    """`/etc/passwd` in a split is `etc/passwd` under the image root, as `root + path` reads it: not the host's."""
    root = images_at(tmp_path / "files", [MIMIC])
    tree = image_tree({"s": {"image_path": ["/etc/passwd", MIMIC]}}, root, tmp_path / "tree")
    assert not (tree / "etc").exists() and image_relative("/etc/passwd") == "etc/passwd"


def test_the_script_is_given_paths_under_its_root_both_of_reXranks_joins_reach(tmp_path):
    records = input_records(rexrank_split(tmp_path / "split.json"), "findings")
    assert list(records) == [sid for sid, _, _ in STUDIES]
    for (_, images, key), record in zip(STUDIES, records.values()):
        assert record["image_path"] == [p.lstrip("/") for p in images] and record["key_image_path"] == key.lstrip("/")
        for path in (*record["image_path"], record["key_image_path"]):
            assert "/images/" + path == os.path.join("/images/", path)  # MedVersa's join is MedGemma's


@pytest.mark.parametrize("path", ESCAPES)
def test_a_split_naming_an_image_outside_its_folder_is_refused_naming_it(tmp_path, path):
    split = rexrank_split(tmp_path / "split.json", (*STUDIES, ("s9", [IU_XRAY], path)))
    with pytest.raises(InputError, match=f"study s9: image path {path!r} leaves the image folder"):
        input_records(split, "findings")



BOTH_JOINS = READ_INPUT + """
found = {}
for sid, record in sorted(data.items()):
    named = [*record["image_path"], record["key_image_path"]]
    joins = [args.img_root_dir + p for p in named] + [os.path.join(args.img_root_dir, p) for p in named]
    found[sid] = [open(j, "rb").read().decode() if os.path.isfile(j) else "missing " + j for j in joins]
for record in data.values():
    record["model_prediction"] = json.dumps(found)
json.dump(data, open(args.save_json_file, "w"))
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"), reason="bubblewrap not installed")
def test_rexrank_infer_on_reXranks_own_split_reaches_every_image_by_both_joins(tmp_path):
    """End to end: ReXrank's split JSON, its images under the root, the sandbox; the script opens every image it is
    given, the key image too, as MedVersa's and MedGemma's examples join them."""
    root = write_submission(tmp_path, BOTH_JOINS, tasks=["findings"])
    shutil.rmtree(root / "images")
    images_at(root / "images", [p for _, paths, _ in STUDIES for p in paths])
    done = infer(root / "submission", rexrank_split(root / "split.json"), root / "images", root / "preds.jsonl",
                 weights_cache=root / "cache")
    found = json.loads(predictions(root)[STUDIES[0][0]])
    assert done.studies == len(STUDIES) == len(found)
    for sid, paths, key in STUDIES:
        named = [*paths, key]
        assert found[sid] == [f"synthetic {p}" for p in named] * 2
