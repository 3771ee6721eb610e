"""The real huggingface_hub client (no mocks) against tests/fakehub.py."""

import io
import os
from pathlib import Path

import datasets
import pandas as pd
import pytest
from datasets import load_dataset
from datasets.exceptions import DatasetNotFoundError
from fakehub import GITATTRIBUTES, git_blob_sha, use_datasets_cache
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    constants,
    hf_hub_download,
    list_repo_tree,
    model_info,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import hf_hub_url, http_get


def _settings():
    """What the rest of the suite runs with (tests/conftest.py sets HF_HUB_OFFLINE=1); the fixture must restore it."""
    dc = datasets.config
    return (
        (constants.ENDPOINT, constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_OFFLINE")),
        (dc.HF_ENDPOINT, dc.HF_HUB_OFFLINE, dc.HF_DATASETS_CACHE, dc.USE_PARQUET_EXPORT, dc.HF_UPDATE_DOWNLOAD_COUNTS),
        (os.environ.get("HF_DATASETS_OFFLINE"), os.environ.get("HF_DATASETS_CACHE")),
    )


_BEFORE = _settings()
RESOLVE = "/org/model/resolve/main/config.json"


def test_first_download_then_cache_hit(fake_hub):
    sha = fake_hub.add_repo("org/model", {"config.json": b'{"a": 1}'})
    path = hf_hub_download("org/model", "config.json")
    assert Path(path).read_bytes() == b'{"a": 1}'
    assert path.startswith(os.environ["HF_HUB_CACHE"]) and Path(path).parent.name == sha
    assert fake_hub.requests == [("HEAD", RESOLVE), ("GET", RESOLVE)]

    # Second call: a branch name must be re-checked (HEAD) but the cached blob is reused (no GET).
    assert hf_hub_download("org/model", "config.json") == path
    assert fake_hub.requests[2:] == [("HEAD", RESOLVE)]
    assert fake_hub.downloads("config.json") == 1


def test_offline_after_cache_makes_no_request(fake_hub):
    fake_hub.add_repo("org/model", {"config.json": b"{}", "other.json": b"[]"})
    path = hf_hub_download("org/model", "config.json")
    seen = len(fake_hub.requests)

    fake_hub.set_offline()
    assert constants.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "1"
    assert hf_hub_download("org/model", "config.json") == path
    with pytest.raises(LocalEntryNotFoundError, match="cannot find the requested files in the local cache"):
        hf_hub_download("org/model", "other.json")
    assert len(fake_hub.requests) == seen


def test_pinned_sha_keeps_old_content_after_main_moves(fake_hub):
    old = fake_hub.add_repo("org/model", {"vocabulary/labels.txt": b"v1"})
    new = fake_hub.add_repo("org/model", {"vocabulary/labels.txt": b"v2"})
    assert old != new and len(old) == 40
    assert Path(hf_hub_download("org/model", "vocabulary/labels.txt", revision=old)).read_bytes() == b"v1"
    assert Path(hf_hub_download("org/model", "vocabulary/labels.txt")).read_bytes() == b"v2"
    assert ("GET", f"/org/model/resolve/{old}/vocabulary/labels.txt") in fake_hub.requests

    seen = len(fake_hub.requests)  # a cached commit sha is immutable: served with no request at all
    assert Path(hf_hub_download("org/model", "vocabulary/labels.txt", revision=old)).read_bytes() == b"v1"
    assert len(fake_hub.requests) == seen


def test_missing_file_repo_revision_and_private_repo(fake_hub):
    fake_hub.add_repo("org/model", {"config.json": b"{}"})
    with pytest.raises(EntryNotFoundError, match="404 Client Error.*\n\nEntry Not Found for url") as e:
        hf_hub_download("org/model", "nope.json")
    assert e.value.response.status_code == 404

    with pytest.raises(RepositoryNotFoundError, match="401 Client Error.*\n\nRepository Not Found for url") as e:
        hf_hub_download("org/missing", "config.json")
    assert type(e.value) is RepositoryNotFoundError  # not its GatedRepoError subclass

    with pytest.raises(RevisionNotFoundError, match="404 Client Error.*\n\nRevision Not Found for url"):
        hf_hub_download("org/model", "config.json", revision="v9")

    # A private repo looks missing unless the token was granted access.
    fake_hub.add_repo("org/private", {"config.json": b"{}"}, private=True)
    fake_hub.allow("hf_good", "org/private")
    with pytest.raises(RepositoryNotFoundError, match="404 Client Error.*\n\nRepository Not Found for url"):
        hf_hub_download("org/private", "config.json", token="hf_bad")
    assert Path(hf_hub_download("org/private", "config.json", token="hf_good")).read_bytes() == b"{}"


def test_gated_repo(fake_hub):
    fake_hub.add_repo("org/gated", {"weights.bin": b"\x00\x01"}, gated=True)
    fake_hub.allow("hf_good", "org/gated")
    with pytest.raises(GatedRepoError, match="401 Client Error.*\n\nCannot access gated repo") as e:
        hf_hub_download("org/gated", "weights.bin")
    assert "Please log in" in str(e.value)

    with pytest.raises(GatedRepoError, match="403 Client Error.*\n\nCannot access gated repo") as e:
        hf_hub_download("org/gated", "weights.bin", token="hf_bad")
    assert "not in the authorized list" in str(e.value)

    assert Path(hf_hub_download("org/gated", "weights.bin", token="hf_good")).read_bytes() == b"\x00\x01"


def test_snapshot_download_with_subfolders(fake_hub):
    files = {"README.md": b"# data", "vocabulary/labels.txt": b"a\nb\n", "vocabulary/extra/ids.json": b"[1]"}
    sha = fake_hub.add_repo("org/data", files, repo_type="dataset")
    folder = Path(snapshot_download("org/data", repo_type="dataset"))
    assert folder.name == sha
    assert {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == files
    assert ("GET", "/api/datasets/org/data/revision/main") in fake_hub.requests
    assert ("GET", f"/api/datasets/org/data/tree/{sha}") in fake_hub.requests


def test_module_level_api_functions(fake_hub):
    sha = fake_hub.add_repo("org/model", {"config.json": b"{}", "vocabulary/labels.txt": b"x"}, gated=True)
    info = model_info("org/model")
    assert (info.sha, info.gated, [s.rfilename for s in info.siblings]) == (
        sha,
        "manual",
        ["config.json", "vocabulary/labels.txt"],
    )
    top = {(f.path, type(f).__name__) for f in list_repo_tree("org/model")}
    assert top == {("config.json", "RepoFile"), ("vocabulary", "RepoFolder")}
    assert [f.path for f in list_repo_tree("org/model", "vocabulary")] == ["vocabulary/labels.txt"]


def test_range_request_resumes_download(fake_hub):
    fake_hub.add_repo("org/model", {"blob.bin": b"abcdef"})
    buf = io.BytesIO(b"abc")
    buf.seek(3)
    http_get(hf_hub_url("org/model", "blob.bin"), buf, resume_size=3, expected_size=6)
    assert buf.getvalue() == b"abcdef"


# --- the write side, and datasets.load_dataset on what was pushed ---

README = """---
configs:
- config_name: findings
  data_files:
  - split: test
    path: findings/test-*.parquet
- config_name: findings_impression
  data_files:
  - split: test
    path: findings_impression/test-*.parquet
---
# Synthetic test set
"""
FINDINGS = {"study_id": ["s1", "s2"], "reference": ["No pleural effusion.", "Lungs are clear."]}
FINDINGS_IMPRESSION = {"study_id": ["s3"], "reference": ["Heart size normal. IMPRESSION: No acute process."]}


def write_test_sets(folder: Path) -> Path:
    """A dataset folder the way the data builders write one: README.md with `configs:` and a parquet per config."""
    for config, rows in {"findings": FINDINGS, "findings_impression": FINDINGS_IMPRESSION}.items():
        (folder / config).mkdir(parents=True)
        pd.DataFrame(rows).to_parquet(folder / config / "test-00000-of-00001.parquet")
    (folder / "README.md").write_text(README)
    return folder


def folder_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def push(folder: Path, repo_id: str = "org/name", private: bool = False, token: str = "hf_writer", **kwargs):
    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True, token=token)
    return api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset", token=token, **kwargs)


def test_upload_folder_then_load_each_config(fake_hub, tmp_path):
    folder = write_test_sets(tmp_path / "sets")
    info = push(folder, commit_message="Add the test sets")
    assert fake_hub.requests == [
        ("POST", "/api/repos/create"),
        ("POST", "/api/validate-yaml"),  # upload_folder checks a README's metadata before anything else
        ("POST", "/api/datasets/org/name/preupload/main"),
        ("POST", "/api/datasets/org/name/commit/main"),
    ]
    pushed = fake_hub.files("org/name", repo_type="dataset")
    assert pushed == folder_files(folder) | {".gitattributes": GITATTRIBUTES}  # the Hub's first commit has it
    assert fake_hub.commits("org/name", repo_type="dataset") == ["initial commit", "Add the test sets"]
    assert info.oid == HfApi().dataset_info("org/name").sha and info.commit_url.endswith(f"/commit/{info.oid}")

    findings = load_dataset("org/name", "findings", split="test")
    assert findings.to_dict() == FINDINGS
    assert findings.cache_files[0]["filename"].startswith(str(tmp_path / "hf_home" / "datasets"))
    assert ("GET", "/datasets/org/name/resolve/main/README.md") in fake_hub.requests
    shards = ("findings/test-00000-of-00001.parquet", "findings_impression/test-00000-of-00001.parquet")
    assert [fake_hub.downloads(shard) for shard in shards] == [1, 0]  # only this config's file

    assert load_dataset("org/name", "findings_impression", split="test").to_dict() == FINDINGS_IMPRESSION
    assert [fake_hub.downloads(shard) for shard in shards] == [1, 1]


def test_private_dataset_needs_a_granted_token(fake_hub, tmp_path):
    folder = write_test_sets(tmp_path / "sets")
    push(folder, private=True)  # the creator's token may read and push
    assert HfApi().dataset_info("org/name", token="hf_writer").private is True

    with pytest.raises(DatasetNotFoundError, match="doesn't exist on the Hub or cannot be accessed"):
        load_dataset("org/name", "findings", split="test")
    with pytest.raises(DatasetNotFoundError, match="doesn't exist on the Hub or cannot be accessed"):
        load_dataset("org/name", "findings", split="test", token="hf_other")
    with pytest.raises(RepositoryNotFoundError, match="404 Client Error"):  # nor push to it
        HfApi().upload_folder(folder_path=folder, repo_id="org/name", repo_type="dataset", token="hf_other")

    fake_hub.allow("hf_reader", "org/name")
    assert load_dataset("org/name", "findings", split="test", token="hf_reader").to_dict() == FINDINGS
    assert load_dataset("org/name", "findings_impression", split="test", token="hf_writer")["study_id"] == ["s3"]

    # Beware (the clients, not the fake): once loaded on a machine, the private set loads there without a token.
    # The Hub refuses each HEAD (401), and hf_hub_download then datasets fall back to their caches.
    seen = len(fake_hub.requests)
    assert load_dataset("org/name", "findings", split="test").to_dict() == FINDINGS
    assert {m for m, _ in fake_hub.requests[seen:]} == {"HEAD"}


def test_create_repo_exist_ok_conflict_and_auth(fake_hub):
    api = HfApi()
    url = api.create_repo("org/name", repo_type="dataset", token="hf_writer")
    assert url == f"{fake_hub.url}/datasets/org/name" and url.repo_id == "org/name"
    assert api.create_repo("org/name", repo_type="dataset", exist_ok=True, token="hf_writer") == url
    with pytest.raises(HfHubHTTPError, match="409 Conflict") as e:
        api.create_repo("org/name", repo_type="dataset", token="hf_writer")
    assert e.value.response.json()["error"] == "You already created this dataset repo"
    assert fake_hub.commits("org/name", repo_type="dataset") == ["initial commit"]  # created once
    assert api.dataset_info("org/name").private is False  # public unless asked

    with pytest.raises(HfHubHTTPError, match="401 Unauthorized"):
        api.create_repo("org/other", repo_type="dataset")  # no token
    # A public repo is readable by anyone, writable only by its creator or a granted token.
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to push to org/name"):
        api.upload_file(
            path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="org/name", repo_type="dataset", token="hf_other"
        )
    assert fake_hub.files("org/name", repo_type="dataset") == {".gitattributes": GITATTRIBUTES}


def test_readme_metadata_checked_before_upload(fake_hub, tmp_path):
    folder = write_test_sets(tmp_path / "sets")
    (folder / "README.md").write_text("---\nconfigs: []\n# the closing --- is missing\n")
    with pytest.raises(ValueError, match="Invalid metadata in README.md.\n- the YAML front matter is not closed"):
        push(folder)
    assert not any("/preupload/" in p or "/commit/" in p for _, p in fake_hub.requests)


def test_repush_skips_unchanged_and_deletes_stale_shards(fake_hub, tmp_path):
    folder = write_test_sets(tmp_path / "sets")
    (folder / "findings" / "test-00001-of-00002.parquet").write_bytes(b"stale shard")
    v1 = push(folder, commit_message="v1").oid
    first = fake_hub.files("org/name", repo_type="dataset")
    assert "findings/test-00001-of-00002.parquet" in first

    push(folder, commit_message="v1 again")  # preupload's oids say nothing changed: the client makes no commit
    assert fake_hub.commits("org/name", repo_type="dataset") == ["initial commit", "v1"]

    (folder / "findings" / "test-00001-of-00002.parquet").unlink()
    pd.DataFrame({"study_id": ["s9"], "reference": ["Small left effusion."]}).to_parquet(
        folder / "findings_impression" / "test-00000-of-00001.parquet"
    )
    push(folder, commit_message="v2", delete_patterns="*.parquet")  # lists the repo (recursive tree), then deletes
    assert fake_hub.files("org/name", repo_type="dataset") == folder_files(folder) | {".gitattributes": GITATTRIBUTES}
    assert fake_hub.files("org/name", repo_type="dataset", revision=v1) == first  # the old snapshot stays
    assert load_dataset("org/name", "findings_impression", split="test")["study_id"] == ["s9"]


def test_paths_info_tree_and_commit_operations(fake_hub, tmp_path):
    folder = write_test_sets(tmp_path / "sets")
    v1 = push(folder).oid
    api = HfApi(token="hf_writer")
    infos = api.get_paths_info("org/name", ["README.md", "findings", "nope.txt"], repo_type="dataset")
    assert [(type(i).__name__, i.path) for i in infos] == [("RepoFile", "README.md"), ("RepoFolder", "findings")]
    assert infos[0].size == len(README) and infos[0].blob_id == git_blob_sha(README.encode())
    assert sorted(api.list_repo_files("org/name", repo_type="dataset")) == sorted(
        [
            ".gitattributes",
            "README.md",
            *(f"{c}/test-00000-of-00001.parquet" for c in ("findings", "findings_impression")),
        ]
    )

    ops = [CommitOperationDelete("findings_impression/"), CommitOperationAdd("notes/a.txt", b"synthetic")]
    info = api.create_commit("org/name", ops, commit_message="reshape", repo_type="dataset", parent_commit=v1)
    assert sorted(fake_hub.files("org/name", repo_type="dataset", revision=info.oid)) == [
        ".gitattributes",
        "README.md",
        "findings/test-00000-of-00001.parquet",
        "notes/a.txt",
    ]
    with pytest.raises(HfHubHTTPError, match="412 Precondition Failed"):  # main moved on since v1
        api.create_commit(
            "org/name", [CommitOperationAdd("b.txt", b"")], commit_message="late", repo_type="dataset", parent_commit=v1
        )
    with pytest.raises(EntryNotFoundError):
        api.delete_file("nope.txt", "org/name", repo_type="dataset")
    with pytest.raises(RevisionNotFoundError):
        api.upload_file(path_or_fileobj=b"x", path_in_repo="x", repo_id="org/name", repo_type="dataset", revision="v9")
    with pytest.raises(RevisionNotFoundError):  # a repo without a parquet export: the Hub says so the same way
        api.dataset_info("org/name", revision="refs/convert/parquet")


def test_offline_loads_from_the_datasets_cache_only(fake_hub, tmp_path):
    push(write_test_sets(tmp_path / "sets"))
    assert load_dataset("org/name", "findings", split="test").to_dict() == FINDINGS
    seen = len(fake_hub.requests)

    fake_hub.set_offline()
    assert datasets.config.HF_HUB_OFFLINE and os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert load_dataset("org/name", "findings", split="test").to_dict() == FINDINGS  # prepared: from the cache
    with pytest.raises(ConnectionError, match="Couldn't reach 'org/never-loaded' on the Hub"):
        load_dataset("org/never-loaded", "findings", split="test")
    assert len(fake_hub.requests) == seen


def test_load_local_folder_without_any_hub(tmp_path, monkeypatch):
    folder = write_test_sets(tmp_path / "sets")
    use_datasets_cache(monkeypatch, tmp_path / "cache")
    assert datasets.config.HF_HUB_OFFLINE  # the suite's default: nothing could be fetched
    findings = load_dataset(str(folder), "findings", split="test")
    assert findings.to_dict() == FINDINGS
    assert findings.cache_files[0]["filename"].startswith(str(tmp_path / "cache"))
    assert load_dataset(str(folder), "findings_impression", split="test").to_dict() == FINDINGS_IMPRESSION


def test_fixture_restored_the_offline_suite_settings():
    assert _settings() == _BEFORE
