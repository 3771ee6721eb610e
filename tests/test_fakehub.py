"""The real huggingface_hub client (no mocks) against tests/fakehub.py."""

import io
import os
from pathlib import Path

import pytest
from huggingface_hub import constants, hf_hub_download, list_repo_tree, model_info, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import hf_hub_url, http_get

# What the rest of the suite runs with (tests/conftest.py sets HF_HUB_OFFLINE=1); the fixture must restore it.
_BEFORE = (constants.ENDPOINT, constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_OFFLINE"))
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


def test_fixture_restored_the_offline_suite_settings():
    after = (constants.ENDPOINT, constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_OFFLINE"))
    assert after == _BEFORE
