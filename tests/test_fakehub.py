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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --- pull requests and discussions: a contribution proposed, reviewed and merged ---

SUBMISSION = b'{"system": "team-a", "bleu2": 0.31}\n'


def open_submission(tmp_path, token="hf_alice"):
    """A contributor without write access proposes a file, the way the leaderboard's submission flow does."""
    folder = tmp_path / "submission"
    (folder / "submissions").mkdir(parents=True)
    (folder / "submissions" / "team-a.json").write_bytes(SUBMISSION)
    return HfApi(token=token).upload_folder(
        folder_path=folder,
        repo_id="org/name",
        repo_type="dataset",
        create_pr=True,
        commit_message="Submit team-a",
    )


def diff_paths(diff: str) -> list[str]:
    """The paths a git diff touches, both sides of a rename: what a reviewer bot reads off a PR."""
    heads = [line.removeprefix("diff --git a/") for line in diff.splitlines() if line.startswith("diff --git a/")]
    return sorted({path for head in heads for path in head.split(" b/")})


@pytest.mark.slow
def test_upload_folder_create_pr_opens_a_draft_pr_and_leaves_main_alone(fake_hub, tmp_path):
    push(write_test_sets(tmp_path / "sets"))
    main_files, main_sha = fake_hub.files("org/name", repo_type="dataset"), HfApi().dataset_info("org/name").sha
    seen = len(fake_hub.requests)

    info = open_submission(tmp_path)
    assert (info.pr_num, info.pr_revision, info.pr_url) == (
        1,
        "refs/pr/1",
        f"{fake_hub.url}/datasets/org/name/discussions/1",
    )
    # With hf_xet installed, upload_folder creates the PR first (a draft), then commits to its ref.
    assert fake_hub.requests[seen:] == [
        ("POST", "/api/datasets/org/name/preupload/main"),
        ("POST", "/api/datasets/org/name/discussions"),
        ("GET", "/api/datasets/org/name/discussions/1"),
        ("POST", "/api/datasets/org/name/commit/refs/pr/1"),
    ]
    assert fake_hub.files("org/name", repo_type="dataset") == main_files
    assert HfApi().dataset_info("org/name").sha == main_sha

    api = HfApi()
    listed = api.get_repo_discussions(
        "org/name", repo_type="dataset", discussion_type="pull_request", discussion_status="open"
    )
    assert [(d.num, d.status, d.title, d.author, d.is_pull_request, d.git_reference) for d in listed] == [
        (1, "draft", "Submit team-a", "alice", True, "refs/pr/1")
    ]
    assert list(api.get_repo_discussions("org/name", repo_type="dataset", discussion_status="closed")) == []

    # The PR's files: main's plus the submission, by every read path.
    pr_files = api.list_repo_files("org/name", repo_type="dataset", revision="refs/pr/1")
    assert sorted(pr_files) == sorted([*main_files, "submissions/team-a.json"])
    assert [
        f.path for f in api.list_repo_tree("org/name", "submissions", repo_type="dataset", revision="refs/pr/1")
    ] == ["submissions/team-a.json"]
    path = hf_hub_download("org/name", "submissions/team-a.json", repo_type="dataset", revision="refs/pr/1")
    assert Path(path).read_bytes() == SUBMISSION
    assert not api.file_exists("org/name", "submissions/team-a.json", repo_type="dataset")

    details = api.get_discussion_details("org/name", 1, repo_type="dataset")
    assert (details.target_branch, details.conflicting_files, details.merge_commit_oid) == ("refs/heads/main", [], None)
    assert [(e.type, e.author) for e in details.events] == [("comment", "alice"), ("commit", "alice")]
    assert (details.events[1].summary, details.events[1].oid) == ("Submit team-a", info.oid)
    assert details.diff == (
        "diff --git a/submissions/team-a.json b/submissions/team-a.json\n"
        "new file mode 100644\n"
        f"index {'0' * 40}..{git_blob_sha(SUBMISSION)}\n"
        "--- /dev/null\n"
        "+++ b/submissions/team-a.json\n"
        "@@ -0,0 +1 @@\n"
        '+{"system": "team-a", "bleu2": 0.31}\n'
    )
    [pr] = fake_hub.pull_requests("org/name", repo_type="dataset")
    assert (pr.num, pr.status, pr.title, pr.author, pr.comments[0][0]) == (
        1,
        "draft",
        "Submit team-a",
        "alice",
        "alice",
    )
    assert pr.touched == diff_paths(details.diff) == ["submissions/team-a.json"]


@pytest.mark.slow
def test_review_publish_merge_then_load_main(fake_hub, tmp_path):
    fake_hub.users = {"hf_writer": "maintainer"}
    push(write_test_sets(tmp_path / "sets"))
    folder = tmp_path / "update"
    (folder / "findings").mkdir(parents=True)
    new_findings = {"study_id": ["s1", "s2", "s7"], "reference": ["No effusion.", "Lungs are clear.", "Mild edema."]}
    pd.DataFrame(new_findings).to_parquet(folder / "findings" / "test-00000-of-00001.parquet")
    alice, maintainer = HfApi(token="hf_alice"), HfApi(token="hf_writer")
    info = alice.upload_folder(folder_path=folder, repo_id="org/name", repo_type="dataset", create_pr=True)
    assert load_dataset("org/name", "findings", split="test", revision=info.pr_revision).to_dict() == new_findings
    assert load_dataset("org/name", "findings", split="test").to_dict() == FINDINGS  # main: not yet

    comment = maintainer.comment_discussion("org/name", 1, "Thanks! Checking.", repo_type="dataset")
    assert (comment.author, comment.content, comment.edited) == ("maintainer", "Thanks! Checking.", False)
    edited = maintainer.edit_discussion_comment("org/name", 1, comment.id, "Checked.", repo_type="dataset")
    assert (edited.id, edited.content, edited.edited) == (comment.id, "Checked.", True)
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You can only edit your own comments"):
        alice.edit_discussion_comment("org/name", 1, comment.id, "LGTM", repo_type="dataset")

    with pytest.raises(HfHubHTTPError, match="Bad request") as e:  # a draft is published before it is merged
        maintainer.merge_pull_request("org/name", 1, repo_type="dataset")
    assert "publish it to be able to merge" in str(e.value)
    assert alice.change_discussion_status("org/name", 1, "open", repo_type="dataset").new_status == "open"
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to merge"):
        alice.merge_pull_request("org/name", 1, repo_type="dataset")

    maintainer.merge_pull_request("org/name", 1, repo_type="dataset", comment="Merging.")
    details = maintainer.get_discussion_details("org/name", 1, repo_type="dataset")
    main_sha = maintainer.dataset_info("org/name").sha
    assert (details.status, details.merge_commit_oid) == ("merged", main_sha)
    assert [(e.type, e.author) for e in details.events][-3:] == [
        ("status-change", "alice"),  # published
        ("comment", "maintainer"),
        ("status-change", "maintainer"),
    ]
    assert (details.events[-2].content, details.events[-1].new_status) == ("Merging.", "merged")
    assert fake_hub.commits("org/name", repo_type="dataset")[-1] == "Upload folder using huggingface_hub (#1)"
    assert fake_hub.files("org/name", repo_type="dataset") == fake_hub.files("org/name", "dataset", "refs/pr/1")
    assert load_dataset("org/name", "findings", split="test").to_dict() == new_findings
    assert fake_hub.pull_requests("org/name", repo_type="dataset")[0].comments[1:] == [
        ("maintainer", "Checked."),
        ("maintainer", "Merging."),
    ]

    with pytest.raises(HfHubHTTPError, match="Bad request") as e:
        maintainer.merge_pull_request("org/name", 1, repo_type="dataset")
    assert "which is merged" in str(e.value)
    listed = {
        s: maintainer.get_repo_discussions("org/name", repo_type="dataset", discussion_status=s)
        for s in ("open", "closed")
    }
    assert {s: [d.status for d in found] for s, found in listed.items()} == {"open": [], "closed": ["merged"]}


@pytest.mark.slow
def test_who_may_close_and_merge_and_a_closed_pr_stays_unmerged(fake_hub, tmp_path):
    push(write_test_sets(tmp_path / "sets"))
    alice, bob, maintainer = (HfApi(token=t) for t in ("hf_alice", "hf_bob", "hf_writer"))
    # create_commit(create_pr=True) opens the PR in the commit call itself (?create_pr=1), published at once.
    info = alice.create_commit(
        "org/name",
        [CommitOperationAdd("submissions/team-a.json", SUBMISSION)],
        commit_message="Submit",
        repo_type="dataset",
        create_pr=True,
    )
    assert (info.pr_num, info.pr_revision) == (1, "refs/pr/1")
    assert ("POST", "/api/datasets/org/name/commit/main") in fake_hub.requests
    assert alice.get_discussion_details("org/name", 1, repo_type="dataset").status == "open"

    # bob can read the public repo: he may comment, not close or merge someone else's PR, nor push to it.
    assert bob.comment_discussion("org/name", 1, "Nice", repo_type="dataset").author == "bob"
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to change the status"):
        bob.change_discussion_status("org/name", 1, "closed", repo_type="dataset")
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to merge"):
        bob.merge_pull_request("org/name", 1, repo_type="dataset")
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to push to refs/pr/1"):
        bob.upload_file(
            path_or_fileobj=b"x", path_in_repo="x", repo_id="org/name", repo_type="dataset", revision="refs/pr/1"
        )
    with pytest.raises(HfHubHTTPError, match="401"):  # anonymous: not even a comment
        HfApi().comment_discussion("org/name", 1, "hi", repo_type="dataset")

    # The author closes their own PR; closed, it is neither merged nor pushed to, until reopened.
    assert (
        alice.change_discussion_status("org/name", 1, "closed", repo_type="dataset", comment="Wrong file").new_status
        == "closed"
    )
    with pytest.raises(HfHubHTTPError, match="Bad request") as e:
        maintainer.merge_pull_request("org/name", 1, repo_type="dataset")
    assert "which is closed" in str(e.value)
    with pytest.raises(HfHubHTTPError, match="Bad request") as e:
        alice.upload_file(
            path_or_fileobj=b"x", path_in_repo="x", repo_id="org/name", repo_type="dataset", revision="refs/pr/1"
        )
    assert "takes no more commits" in str(e.value)
    assert "submissions/team-a.json" not in fake_hub.files("org/name", repo_type="dataset")
    assert fake_hub.pull_requests("org/name", repo_type="dataset")[0].comments[1:] == [
        ("bob", "Nice"),
        ("alice", "Wrong file"),
    ]

    maintainer.change_discussion_status("org/name", 1, "open", repo_type="dataset")  # a writer may reopen it
    maintainer.merge_pull_request("org/name", 1, repo_type="dataset")
    assert fake_hub.files("org/name", repo_type="dataset")["submissions/team-a.json"] == SUBMISSION


@pytest.mark.slow
def test_pr_commits_deletion_rename_and_conflict(fake_hub, tmp_path):
    push(write_test_sets(tmp_path / "sets"))
    main_files = fake_hub.files("org/name", repo_type="dataset")
    alice = HfApi(token="hf_alice")
    pr = alice.create_pull_request("org/name", "Reshape the sets", repo_type="dataset")  # empty, a draft
    assert (pr.num, pr.status, pr.git_reference, pr.diff) == (1, "draft", "refs/pr/1", "")
    assert sorted(alice.list_repo_files("org/name", repo_type="dataset", revision="refs/pr/1")) == sorted(main_files)

    impression, findings = "findings_impression/test-00000-of-00001.parquet", "findings/test-00000-of-00001.parquet"
    ops = [
        CommitOperationDelete(impression),
        CommitOperationDelete(findings),
        CommitOperationAdd("archive/findings.parquet", main_files[findings]),  # a rename, in git's eyes
        CommitOperationAdd("README.md", README.replace("# Synthetic test set", "# Synthetic test set, v2").encode()),
    ]
    first = alice.create_commit("org/name", ops, commit_message="Reshape", repo_type="dataset", revision="refs/pr/1")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "CHANGES.txt").write_text("findings moved\n")
    second = alice.upload_folder(folder_path=notes, repo_id="org/name", repo_type="dataset", revision="refs/pr/1")
    assert second.pr_url is None and ("POST", "/api/datasets/org/name/preupload/refs/pr/1") in fake_hub.requests

    details = alice.get_discussion_details("org/name", 1, repo_type="dataset")
    assert [(e.type, getattr(e, "oid", None)) for e in details.events] == [
        ("comment", None),
        ("commit", first.oid),
        ("commit", second.oid),
    ]
    touched = ["CHANGES.txt", "README.md", "archive/findings.parquet", findings, impression]
    assert diff_paths(details.diff) == touched == fake_hub.pull_requests("org/name", repo_type="dataset")[0].touched
    assert (
        f"diff --git a/{findings} b/archive/findings.parquet\nsimilarity index 100%\nrename from {findings}\n"
        in details.diff
    )
    assert (
        f"diff --git a/{impression} b/{impression}\ndeleted file mode 100644\n"
        f"index {git_blob_sha(main_files[impression])}..{'0' * 40}\nBinary files a/{impression} and /dev/null differ\n"
    ) in details.diff
    assert "\n-# Synthetic test set\n+# Synthetic test set, v2\n" in details.diff
    assert fake_hub.files("org/name", repo_type="dataset") == main_files  # all of it on the PR only

    # main moves on under the PR: the README both changed is a conflict, which blocks the merge.
    push_readme = README.replace("# Synthetic test set", "# Synthetic test set (ReXrank)").encode()
    ops = [CommitOperationAdd("README.md", push_readme), CommitOperationAdd("LICENSE", b"CC-BY-4.0\n")]
    HfApi(token="hf_writer").create_commit("org/name", ops, commit_message="License", repo_type="dataset")
    details = alice.get_discussion_details("org/name", 1, repo_type="dataset")
    assert details.conflicting_files == ["README.md"] and diff_paths(details.diff) == touched  # diff from the base
    alice.change_discussion_status("org/name", 1, "open", repo_type="dataset")
    with pytest.raises(HfHubHTTPError, match="409 Conflict") as e:
        HfApi(token="hf_writer").merge_pull_request("org/name", 1, repo_type="dataset")
    assert e.value.response.json()["filesWithConflicts"] == ["README.md"]

    # Through the API the author resolves it by taking main's README on the PR (both sides changed it alike: no
    # conflict; another README would still conflict, as git would without a merge of main into the PR).
    alice.upload_file(
        path_or_fileobj=push_readme,
        path_in_repo="README.md",
        repo_id="org/name",
        repo_type="dataset",
        revision="refs/pr/1",
    )
    assert alice.get_discussion_details("org/name", 1, repo_type="dataset").conflicting_files == []
    HfApi(token="hf_writer").merge_pull_request("org/name", 1, repo_type="dataset")
    assert sorted(fake_hub.files("org/name", repo_type="dataset")) == [
        ".gitattributes",
        "CHANGES.txt",
        "LICENSE",  # main's own change since the PR's base stays
        "README.md",
        "archive/findings.parquet",
    ]
    assert fake_hub.files("org/name", repo_type="dataset")["README.md"] == push_readme


@pytest.mark.slow
def test_discussions_listing_pages_filters_and_private_repos(fake_hub, tmp_path):
    push(write_test_sets(tmp_path / "sets"), private=True)
    fake_hub.allow("hf_reader", "org/name")
    reader = HfApi(token="hf_reader")
    for i in range(3):
        reader.create_discussion("org/name", f"Question {i}", repo_type="dataset")
    open_submission(tmp_path, token="hf_reader")  # a reader of a private repo may open a PR
    reader.change_discussion_status("org/name", 2, "closed", repo_type="dataset")

    fake_hub.PAGE_SIZE = 2  # the client follows the pages
    every = list(reader.get_repo_discussions("org/name", repo_type="dataset"))
    assert [(d.num, d.status, d.is_pull_request) for d in every] == [
        (4, "draft", True),
        (3, "open", False),
        (2, "closed", False),
        (1, "open", False),
    ]
    assert fake_hub.requests.count(("GET", "/api/datasets/org/name/discussions")) == 2
    found = reader.get_repo_discussions(
        "org/name", repo_type="dataset", discussion_type="discussion", discussion_status="open"
    )
    assert [d.num for d in found] == [3, 1]
    assert [d.num for d in reader.get_repo_discussions("org/name", repo_type="dataset", author="someone")] == []
    assert reader.get_discussion_details("org/name", 3, repo_type="dataset").diff is None  # a discussion has none
    with pytest.raises(HfHubHTTPError, match="Bad request"):
        HfApi(token="hf_writer").merge_pull_request("org/name", 3, repo_type="dataset")

    # Without a grant the private repo, its discussions and its PRs do not exist.
    with pytest.raises(RepositoryNotFoundError):
        list(HfApi(token="hf_bob").get_repo_discussions("org/name", repo_type="dataset"))
    with pytest.raises(RepositoryNotFoundError):
        HfApi(token="hf_bob").get_discussion_details("org/name", 4, repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        open_submission(tmp_path / "bob", token="hf_bob")
    assert [pr.author for pr in fake_hub.pull_requests("org/name", repo_type="dataset")] == ["reader"]


@pytest.mark.slow
def test_space_needs_an_sdk_and_its_info_says_which(fake_hub):
    api = HfApi()
    with pytest.raises(HfHubHTTPError, match=r"Bad request:\nA Space needs an sdk \(gradio, docker or static\)"):
        fake_hub_post_create(fake_hub, "org/bare")
    api.create_repo("org/app", repo_type="space", space_sdk="gradio", token="hf_w",
                    space_variables=[{"key": "A", "value": "1"}])
    assert api.space_info("org/app").sdk == "gradio"
    assert fake_hub.settings("org/app", "space") == {"private": False, "gated": False, "sdk": "gradio",
                                                     "variables": {"A": "1"}}
    # A Space's files are served where evaluate.load looks for a module: /spaces/<id>/resolve/<rev>/<file>
    api.upload_file(path_or_fileobj=b"x = 1\n", path_in_repo="app.py", repo_id="org/app", repo_type="space",
                    token="hf_w")
    assert hf_hub_download("org/app", "app.py", repo_type="space") and fake_hub.downloads("app.py") == 1


def fake_hub_post_create(fake_hub, repo_id):
    """create_repo without an sdk: the client refuses to send it, so post the payload as an older client would."""
    from huggingface_hub.utils import get_session, hf_raise_for_status

    r = get_session().post(f"{fake_hub.url}/api/repos/create", headers={"Authorization": "Bearer hf_w"},
                           json={"name": repo_id.split("/")[1], "organization": repo_id.split("/")[0], "type": "space"})
    hf_raise_for_status(r)


@pytest.mark.slow
def test_space_variables_add_get_delete_writer_only(fake_hub):
    api = HfApi()
    api.create_repo("org/app", repo_type="space", space_sdk="gradio", token="hf_w")
    assert api.get_space_variables("org/app", token="hf_w") == {}
    added = api.add_space_variable("org/app", "REXRANK_RESULTS", "org/results", description="board", token="hf_w")
    assert added["REXRANK_RESULTS"].value == "org/results" and added["REXRANK_RESULTS"].description == "board"
    api.add_space_variable("org/app", "REXRANK_RESULTS", "org/other", token="hf_w")  # overwrite keeps the description
    got = api.get_space_variables("org/app", token="hf_w")["REXRANK_RESULTS"]
    assert (got.value, got.description) == ("org/other", "board") and got.updated_at is not None
    with pytest.raises(HfHubHTTPError, match="403 Forbidden"):
        api.add_space_variable("org/app", "X", "1", token="hf_other")
    with pytest.raises(HfHubHTTPError, match="403 Forbidden"):
        api.get_space_variables("org/app", token="hf_other")
    api.delete_space_variable("org/app", "REXRANK_RESULTS", token="hf_w")
    assert fake_hub.settings("org/app", "space")["variables"] == {}


@pytest.mark.slow
def test_update_repo_settings_gates_and_hides_writer_only(fake_hub):
    api = HfApi()
    api.create_repo("org/data", repo_type="dataset", token="hf_w")
    api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="org/data", repo_type="dataset", token="hf_w")
    with pytest.raises(HfHubHTTPError, match="403 Forbidden"):
        api.update_repo_settings("org/data", gated="manual", repo_type="dataset", token="hf_other")
    api.update_repo_settings("org/data", gated="manual", repo_type="dataset", token="hf_w")
    assert api.dataset_info("org/data").gated == "manual"
    with pytest.raises(GatedRepoError):
        hf_hub_download("org/data", "x.txt", repo_type="dataset", token="hf_other")
    api.update_repo_settings("org/data", gated=False, private=True, repo_type="dataset", token="hf_w")
    assert fake_hub.settings("org/data", "dataset") == {"private": True, "gated": False}
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("org/data", token="hf_other")


@pytest.mark.slow
def test_a_read_only_token_reads_but_never_writes(fake_hub):
    api = HfApi()
    api.create_repo("org/data", repo_type="dataset", token="hf_w")
    fake_hub.allow("hf_r", "org/data")
    fake_hub.read_only.add("hf_r")
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to create a dataset under"):
        api.create_repo("org/new", repo_type="dataset", token="hf_r")
    # exist_ok: the client asks repo_info after a 403 and takes the existing repo; the push is what fails
    assert api.create_repo("org/data", repo_type="dataset", exist_ok=True, token="hf_r").repo_id == "org/data"
    with pytest.raises(HfHubHTTPError, match="403 Forbidden: You don't have the rights to push to org/data"):
        api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="org/data", repo_type="dataset",
                        token="hf_r")
    assert api.dataset_info("org/data", token="hf_r").id == "org/data"


@pytest.mark.slow
def test_commit_history_and_lfs_entries_as_the_hub_lists_them(fake_hub):
    import hashlib

    from fakehub import git_blob_sha, lfs_pointer

    api = HfApi()
    api.create_repo("org/log", repo_type="dataset", token="hf_w")
    api.upload_file(path_or_fileobj=b"PAR1 table", path_in_repo="t.parquet", repo_id="org/log", repo_type="dataset",
                    token="hf_w", commit_message="table")
    main = [c.commit_id for c in api.list_repo_commits("org/log", repo_type="dataset")]
    assert [c.title for c in api.list_repo_commits("org/log", repo_type="dataset")] == ["table", "initial commit"]
    pr = api.upload_file(path_or_fileobj=b"{}", path_in_repo="a.json", repo_id="org/log", repo_type="dataset",
                         token="hf_x", create_pr=True, commit_message="mine")
    history = api.list_repo_commits("org/log", repo_type="dataset", revision=f"refs/pr/{pr.pr_num}")
    assert [c.commit_id for c in history][1:] == main and history[0].authors == ["x"]  # the PR's base is main's head
    [table] = [e for e in api.list_repo_tree("org/log", repo_type="dataset") if e.path == "t.parquet"]
    assert table.lfs.sha256 == hashlib.sha256(b"PAR1 table").hexdigest() and table.size == 10
    assert table.blob_id == git_blob_sha(lfs_pointer(b"PAR1 table")) != git_blob_sha(b"PAR1 table")
