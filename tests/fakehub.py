"""A fake Hugging Face Hub for tests: an in-memory, stdlib-only HTTP server speaking the dialect huggingface_hub 2.4
and datasets 5.2 expect: read (`/resolve` HEAD/GET, `/api/{models,datasets,spaces}/...` info, tree, paths-info,
commits) and write (`/api/repos/create`, preupload, commit), with `X-Error-Code` errors. Spaces too: create needs an
`sdk`, info says it, `/api/spaces/{id}/variables` (get / add / delete, writers only), and `PUT
/api/{kind}/{id}/settings` (update_repo_settings: gated, visibility). `evaluate.load("org/name")` reads a
Space-hosted module through `use_evaluate_endpoint`. A token in `read_only` may read but never write (create answers
403, as for a "read" token).

    def test_x(fake_hub):
        sha = fake_hub.add_repo("org/model", {"config.json": b"{}"})
        path = hf_hub_download("org/model", "config.json")   # real client, served by fake_hub

    def test_y(fake_hub):
        HfApi().create_repo("org/data", repo_type="dataset", private=True, token="hf_w")   # hf_w may read/write it
        HfApi().upload_folder(folder_path=..., repo_id="org/data", repo_type="dataset", token="hf_w")
        assert fake_hub.files("org/data", repo_type="dataset")["README.md"].startswith(b"---")
        load_dataset("org/data", "findings", split="test", token="hf_w")

Every file is stored as a regular git blob: preupload always answers `uploadMode: "regular"` (the Hub would say "lfs"
for a parquet file), so the client sends the bytes base64 inline in the commit. An "lfs" answer would send them to
Xet storage first (hf_xet is installed: huggingface_hub 2.4 then keeps the LFS batch API for in-memory file objects
only), and neither is spoken here. The tree still lists a file that `.gitattributes` sends to LFS as the Hub does: its
`oid` the blob id of the LFS pointer, `lfs` the content's sha256 and size. Each commit has one parent (a merge too:
the Hub squashes), so `list_repo_commits` walks a branch's or a pull request's history back to the first commit.

Discussions and pull requests (`/api/{kind}/{repo}/discussions[/N[/comment|status|merge|title|comment/ID/edit]]`):
a PR is the ref `refs/pr/N`, started at its target branch's head (its merge base). `commit?create_pr=1` (create_commit,
upload_file) opens it "open"; `create_pull_request` opens it "draft", and so does `upload_folder(create_pr=True)`, which
with hf_xet installed creates the PR that way and then commits to `refs/pr/N`: a draft must be published
(`change_discussion_status(..., "open")`) before it can be merged, as on the Hub. A merge is one commit on the target
branch, "<title> (#N)": the branch with the PR's changes since its base, refused if the branch changed one of those
paths differently. Who may do what follows the Hub: anyone who can read the repo may open and comment (with a token),
the PR's author or a writer may push to `refs/pr/N`, close, reopen or publish it, only a writer may merge. The author
is the token's user: `fake_hub.users[token]`, else the token without its "hf_" prefix.
"""

from __future__ import annotations

import base64
import difflib
import fnmatch
import hashlib
import html
import itertools
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

_API_KINDS = {"models": "model", "datasets": "dataset", "spaces": "space"}
# Both patterns run on the *raw* path: the client quotes the revision with safe="" ("refs/pr/1" -> "refs%2Fpr%2F1")
# and the tree path likewise, but keeps the "/" of a resolve file path; so split first, unquote each part after.
_RESOLVE = re.compile(r"^/(?:(datasets|spaces)/)?(.+?)/resolve/([^/]+)/(.+)$")
_API = re.compile(
    r"^/api/(models|datasets|spaces)/(.+?)(?:/(revision|tree|paths-info|preupload|commits|commit)/([^/]+)(?:/(.*))?)?$"
)
# Repo settings (update_repo_settings: PUT gated / visibility) and a Space's variables (GET, POST to add, DELETE).
_SETTINGS = re.compile(r"^/api/(models|datasets|spaces)/(.+?)/settings$")
_VARIABLES = re.compile(r"^/api/spaces/(.+?)/variables$")
_DISCUSSIONS = re.compile(r"^/api/(models|datasets|spaces)/(.+?)/discussions(?:/(\d+)(?:/(.+))?)?$")
_URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
# What the Hub puts in a new repo's first commit ("initial commit"); shortened, the same kind of rules.
GITATTRIBUTES = b"*.bin filter=lfs diff=lfs merge=lfs -text\n*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def git_blob_sha(data: bytes) -> str:
    """The Hub's ETag for a regular (non-LFS) file is its git blob id; the client names the cached blob after it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _lfs_patterns(files: dict[str, bytes]) -> list[str]:
    """The patterns `.gitattributes` sends to LFS (`<pattern> filter=lfs ...`)."""
    text = files.get(".gitattributes", b"").decode("utf-8", "replace")
    return [line.split()[0] for line in text.splitlines() if "filter=lfs" in line.split()[1:]]


def _is_lfs(files: dict[str, bytes], path: str) -> bool:
    return any(fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern) for pattern in _lfs_patterns(files))


def lfs_pointer(data: bytes) -> bytes:
    """The pointer file git-lfs commits in place of `data`."""
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
            f"size {len(data)}\n").encode()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"  # the Hub's format, to the ms


def _changes(old: dict[str, bytes], new: dict[str, bytes]) -> list[tuple[str, str, str]]:
    """(kind, old path, new path) of each change, sorted by path: "A"dded, "D"eleted, "M"odified, or "R"enamed where a
    deleted file's exact, non-empty content was added under another path (git's exact rename detection)."""
    added = [p for p in new if p not in old]
    changes = [("M", p, p) for p in old if p in new and old[p] != new[p]]
    for path in (p for p in old if p not in new):
        twin = next((a for a in added if old[path] and new[a] == old[path]), None)
        if twin is None:
            changes.append(("D", path, path))
        else:
            changes.append(("R", path, twin))
            added.remove(twin)
    return sorted(changes + [("A", p, p) for p in added], key=lambda c: c[2])


def git_diff(old: dict[str, bytes], new: dict[str, bytes]) -> str:
    """`git diff` between two snapshots, as the Hub shows a PR: full blob ids on the index line, renames without a body,
    "Binary files ... differ" for bytes that are not UTF-8 text (no "No newline at end of file" markers)."""
    out = []
    for kind, a, b in _changes(old, new):
        out.append(f"diff --git a/{a} b/{b}\n")
        if kind == "R":
            out.append(f"similarity index 100%\nrename from {a}\nrename to {b}\n")
            continue
        before, after = old.get(a) if kind != "A" else None, new.get(b) if kind != "D" else None
        ids = [git_blob_sha(x) if x is not None else "0" * 40 for x in (before, after)]
        mode = {"A": "new file mode 100644\n", "D": "deleted file mode 100644\n", "M": ""}[kind]
        out.append(f"{mode}index {ids[0]}..{ids[1]}{' 100644' if kind == 'M' else ''}\n")
        names = (f"a/{a}" if before is not None else "/dev/null", f"b/{b}" if after is not None else "/dev/null")
        try:
            texts = [(x or b"").decode() for x in (before, after)]
        except UnicodeDecodeError:
            texts = None
        if texts is None or any("\0" in t for t in texts):
            out.append(f"Binary files {names[0]} and {names[1]} differ\n")
        else:
            lines = difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), *names, lineterm="")
            out.extend(line + "\n" for line in lines)
    return "".join(out)


class HubError(Exception):
    """An error the way the Hub reports it: the client maps `X-Error-Code` to its exception classes."""

    def __init__(self, status: int, code: str | None, message: str, commit: str | None = None, **body):
        super().__init__(message)
        self.status, self.code, self.message, self.commit, self.body = status, code, message, commit, body


@dataclass
class _Discussion:
    num: int
    title: str
    author: str
    is_pr: bool
    status: str  # "open" or "closed"; a PR also "draft" or "merged"
    created_at: str = field(default_factory=_now)
    events: list[dict] = field(default_factory=list)  # in the Hub's JSON shape, oldest first
    target: str = "main"  # a PR's branch
    base: str = ""  # a PR's merge base: the target's head when it was opened
    merge_commit: str | None = None

    @property
    def ref(self) -> str:
        return f"refs/pr/{self.num}"


class PullRequest(NamedTuple):
    num: int
    status: str
    title: str
    author: str
    touched: list[str]  # paths changed since the merge base, both sides of a rename
    comments: list[tuple[str, str]]  # (author, text), the opening description first


@dataclass
class _Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit sha -> full snapshot of the files
    refs: dict[str, str] = field(default_factory=dict)  # branch/tag name -> commit sha
    titles: dict[str, str] = field(default_factory=dict)  # commit sha -> commit summary
    parents: dict[str, str | None] = field(default_factory=dict)  # commit sha -> its parent (None for the first)
    authors: dict[str, str] = field(default_factory=dict)  # commit sha -> who made it
    dates: dict[str, str] = field(default_factory=dict)  # commit sha -> when
    discussions: list[_Discussion] = field(default_factory=list)  # discussion N is discussions[N - 1]
    gated: bool | str = False  # False, or the mode: "auto" / "manual" (True from add_repo reads as "manual")
    private: bool = False
    sdk: str | None = None  # a Space's: "gradio", "docker", "static"
    variables: dict[str, dict] = field(default_factory=dict)  # a Space's: key -> {"value", "description", "updatedAt"}


class FakeHub:
    def __init__(self) -> None:
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._grants: set[tuple[str, str]] = set()  # (token, repo_id) allowed into a gated or private repo, and to push
        self._counter = itertools.count(1)
        self._lock = threading.Lock()  # one request at a time: upload_folder's pipeline sends from two threads
        self.users: dict[str, str] = {}  # token -> username; by default the token without "hf_"
        self.read_only: set[str] = set()  # tokens that may read but never write (a "read" token): 403 on every write
        self._monkeypatch: pytest.MonkeyPatch | None = None  # set by the fake_hub fixture, for set_offline()
        self.commits_fail = False  # set: every commit answers 503, as when the Hub goes away mid-upload
        self.requests: list[tuple[str, str]] = []  # (method, unquoted path without query), in arrival order
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True  # a keep-alive connection left open must not block interpreter exit
        self._server.hub = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll interval keeps stop() fast: shutdown() waits for the serve loop's next poll.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), name="FakeHub", daemon=True)
        self._thread.start()

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        repo_type: str = "model",
        revision_name: str = "main",
        gated: bool = False,
        private: bool = False,
        sha: str | None = None,
    ) -> str:
        """Commit `files` (the whole snapshot) to `revision_name`, creating the repo if needed; returns the sha.
        Older commits stay reachable by sha, so a test can pin one while the branch moves on. `sha`: the commit's
        id, for a test that serves a real repository at its real pinned commit."""
        repo = self._repos.setdefault((repo_type, repo_id), _Repo())
        repo.gated, repo.private = gated, private
        return self._new_commit(repo, repo_type, repo_id, revision_name, files, "Added by the test", sha=sha)

    def _new_commit(self, repo: _Repo, repo_type: str, repo_id: str, branch: str, files: dict, title: str,
                    author: str = "test", sha: str | None = None) -> str:
        """A commit on `branch` whose parent is the branch's head (a squash merge has one parent, as on the Hub)."""
        sha = sha or hashlib.sha1(f"{repo_type}/{repo_id}@{next(self._counter)}".encode()).hexdigest()
        repo.parents[sha], repo.authors[sha], repo.dates[sha] = repo.refs.get(branch), author, _now()
        repo.commits[sha], repo.titles[sha], repo.refs[branch] = dict(files), title, sha
        return sha

    def allow(self, token: str, repo_id: str) -> None:
        """Let `token` into the gated or private `repo_id`, and push to it (a repo's creator has this already)."""
        self._grants.add((token, repo_id))

    def files(self, repo_id: str, repo_type: str = "model", revision: str = "main") -> dict[str, bytes]:
        """The snapshot at `revision` (a branch or sha): what a test pushed, as the Hub holds it."""
        return dict(self._commit(self._repos[(repo_type, repo_id)], revision)[1])

    def commits(self, repo_id: str, repo_type: str = "model") -> list[str]:
        """The summaries of every commit of the repo (all branches), oldest first."""
        return list(self._repos[(repo_type, repo_id)].titles.values())

    def push_raw(self, token: str, repo_id: str, revision: str, files: dict[str, bytes | None],
                 repo_type: str = "dataset", title: str = "raw push") -> str:
        """A commit as a client that skips huggingface_hub's own path checks would send it (curl, say): any path,
        `..`, newlines and quotes included; None deletes a path. Same rights as a commit through the API."""
        with self._lock:
            repo = self._pushable(repo_type, repo_id, revision, token, False)
            snapshot = dict(repo.commits[repo.refs[revision]])
            for path, data in files.items():
                if data is None:
                    snapshot.pop(path, None)
                else:
                    snapshot[path] = data
            return self._new_commit(repo, repo_type, repo_id, revision, snapshot, title, self.user(token))

    def settings(self, repo_id: str, repo_type: str = "model") -> dict:
        """What the repo's settings page shows: private, gated (False or the mode), and a Space's sdk and variables."""
        repo = self._repos[(repo_type, repo_id)]
        gated = repo.gated if repo.gated in (False, "auto", "manual") else "manual"
        variables = {k: v["value"] for k, v in repo.variables.items()}
        return {"private": repo.private, "gated": gated} | ({"sdk": repo.sdk, "variables": variables}
                                                            if repo_type == "space" else {})

    def pull_requests(self, repo_id: str, repo_type: str = "model") -> list[PullRequest]:
        """Every PR of the repo, oldest first, with the paths it changed and its comments."""
        repo = self._repos[(repo_type, repo_id)]
        prs = []
        for d in (d for d in repo.discussions if d.is_pr):
            touched = {p for _, a, b in _changes(repo.commits[d.base], repo.commits[repo.refs[d.ref]]) for p in (a, b)}
            comments = [(e["author"]["name"], e["data"]["latest"]["raw"]) for e in d.events if e["type"] == "comment"]
            prs.append(PullRequest(d.num, d.status, d.title, d.author, sorted(touched), comments))
        return prs

    def downloads(self, filename: str) -> int:
        """How many GETs (actual downloads, not HEAD metadata checks) reached `filename`."""
        return sum(m == "GET" and "/resolve/" in p and p.endswith("/" + filename) for m, p in self.requests)

    def set_offline(self, offline: bool = True) -> None:
        """Switch huggingface_hub offline (or back online) for the rest of the test; needs the fake_hub fixture."""
        assert self._monkeypatch is not None, "set_offline() needs the fake_hub fixture (or use set_hf_offline)"
        set_hf_offline(self._monkeypatch, offline)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- request handling (called from server threads) ---

    def _repo(self, repo_type: str, repo_id: str, token: str | None) -> _Repo:
        repo = self._repos.get((repo_type, repo_id))
        if repo is None or (repo.private and (token, repo_id) not in self._grants):
            # The Hub answers "missing" and "private, not yours" alike: 401 without a token, 404 with one.
            raise HubError(404 if token else 401, "RepoNotFound", "Repository not found")
        return repo

    @staticmethod
    def _commit(repo: _Repo, revision: str) -> tuple[str, dict[str, bytes]]:
        revision = revision.removeprefix("refs/heads/")  # a PR's target branch, as discussion details name it
        sha = repo.refs.get(revision, revision)
        if sha not in repo.commits:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return sha, repo.commits[sha]

    def resolve(self, repo_type, repo_id, revision, filename, token, range_header):
        repo = self._repo(repo_type, repo_id, token)
        if repo.gated and (token, repo_id) not in self._grants:
            # Without a token the Hub says 401 ("log in"), with a token not on the list 403; same error code.
            why = "Please log in." if token is None else "You are not in the authorized list."
            raise HubError(403 if token else 401, "GatedRepo", f"Access to {repo_id} is restricted. {why}")
        sha, files = self._commit(repo, revision)
        if filename not in files:
            # X-Repo-Commit on the 404 lets the client cache the file's absence under .no_exist/<sha>/.
            raise HubError(404, "EntryNotFound", f'{filename} does not exist on "{revision}"', commit=sha)
        data = files[filename]
        headers = {"X-Repo-Commit": sha, "ETag": f'"{git_blob_sha(data)}"', "Content-Type": "application/octet-stream"}
        # http_get resumes an interrupted download with "Range: bytes=<done>-"; answer it with a 206.
        if m := re.fullmatch(r"bytes=(\d+)-(\d*)", range_header or ""):
            start, end = int(m[1]), int(m[2] or len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return 206, headers, data[start : end + 1]
        return 200, headers, data

    def info(self, repo_type, repo_id, revision, token):
        repo = self._repo(repo_type, repo_id, token)
        sha, files = self._commit(repo, revision)
        # Like the Hub, metadata of a gated repo is public: only /resolve is gated.
        siblings = [{"rfilename": name} for name in sorted(files)]
        gated = repo.gated if repo.gated in (False, "auto", "manual") else "manual"
        out = {"id": repo_id, "sha": sha, "private": repo.private, "gated": gated, "siblings": siblings}
        return out | ({"sdk": repo.sdk} if repo_type == "space" else {})

    def tree(self, repo_type, repo_id, revision, path, recursive, token):
        sha, files = self._commit(self._repo(repo_type, repo_id, token), revision)
        base = path.strip("/") + "/" if path.strip("/") else ""
        entries: dict[str, dict] = {}
        for name, data in sorted(files.items()):
            if not name.startswith(base):
                continue
            parts = name[len(base) :].split("/")
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):  # the folders on the way
                folder = base + "/".join(parts[:depth])
                entries.setdefault(folder, {"type": "directory", "path": folder, "oid": git_blob_sha(folder.encode())})
            if recursive or len(parts) == 1:
                entries[name] = {"type": "file", "path": name, "size": len(data), "oid": git_blob_sha(data)}
                if _is_lfs(files, name):  # the Hub's shape: oid is the pointer's blob id, lfs.oid the content's sha256
                    pointer = lfs_pointer(data)
                    entries[name] |= {"oid": git_blob_sha(pointer), "lfs": {
                        "oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": len(pointer)}}
        if base and not entries:
            raise HubError(404, "EntryNotFound", f'{path} does not exist on "{revision}"', commit=sha)
        return list(entries.values())

    def commit_log(self, repo_type, repo_id, revision, token) -> list[dict]:
        """list_repo_commits: the commits reachable from `revision`, newest first, in the Hub's JSON shape."""
        repo = self._repo(repo_type, repo_id, token)
        sha, _ = self._commit(repo, revision)
        out = []
        while sha is not None:
            out.append({"id": sha, "title": repo.titles[sha], "message": "", "date": repo.dates[sha],
                        "authors": [{"user": repo.authors[sha]}]})
            sha = repo.parents[sha]
        return out

    def paths_info(self, repo_type, repo_id, revision, paths, token):
        # Each path that exists, file or folder, in the tree's shape; a missing one is left out, not an error.
        everything = {e["path"]: e for e in self.tree(repo_type, repo_id, revision, "", True, token)}
        return [everything[p.strip("/")] for p in paths if p.strip("/") in everything]

    def _url(self, repo_type: str, repo_id: str) -> str:
        return f"{self.url}/{_URL_PREFIX[repo_type]}{repo_id}"

    def create_repo(self, payload: dict, token: str | None) -> dict:
        if token is None:
            raise HubError(401, None, "Invalid username or password.")
        repo_type = payload.get("type") or "model"
        repo_id = "/".join(filter(None, (payload.get("organization"), payload["name"])))
        url = self._url(repo_type, repo_id)
        if token in self.read_only:  # checked first, as on the Hub: create_repo(exist_ok=True) then asks repo_info
            namespace = repo_id.split("/")[0]
            raise HubError(403, None, f"You don't have the rights to create a {repo_type} under the namespace "
                                      f"{namespace!r}")
        if (repo_type, repo_id) in self._repos:  # exist_ok=True: the client reads "url" from this 409's body
            raise HubError(409, None, f"You already created this {repo_type} repo", url=url)
        if repo_type == "space" and payload.get("sdk") not in ("gradio", "docker", "static"):
            raise HubError(400, None, f"A Space needs an sdk (gradio, docker or static), got {payload.get('sdk')!r}")
        private = payload.get("visibility", "public") != "public"
        repo = self._repos[(repo_type, repo_id)] = _Repo(private=private, sdk=payload.get("sdk"))
        for variable in payload.get("variables") or []:  # create_repo(space_variables=[{"key", "value"}, ...])
            repo.variables[variable["key"]] = {"value": variable["value"], "description": variable.get("description"),
                                               "updatedAt": _now()}
        self._new_commit(repo, repo_type, repo_id, "main", {".gitattributes": GITATTRIBUTES}, "initial commit",
                         self.user(token))
        self._grants.add((token, repo_id))
        return {"url": url, "name": repo_id}

    @staticmethod
    def validate_yaml(readme: str) -> dict:
        # The Hub checks the metadata against its schemas; stdlib-only, this fake checks the front matter is closed.
        if readme.startswith("---\n") and "\n---" not in readme[3:]:
            raise HubError(400, None, "Invalid metadata", errors=[{"message": "the YAML front matter is not closed"}])
        return {"errors": [], "warnings": []}

    def user(self, token: str | None) -> str:
        if token is None:
            raise HubError(401, None, "You must be logged in")
        return self.users.get(token) or token.removeprefix("hf_")

    def _can_write(self, token, repo_id) -> bool:
        return (token, repo_id) in self._grants and token not in self.read_only

    def update_settings(self, repo_type, repo_id, payload, token) -> dict:
        """update_repo_settings: `gated` ("auto", "manual" or False) and `visibility` ("public" / "private")."""
        repo = self._writable(repo_type, repo_id, token)
        if "gated" in payload:
            if payload["gated"] not in ("auto", "manual", False):
                raise HubError(400, None, f"Invalid gated value {payload['gated']!r}")
            repo.gated = payload["gated"]
        if "visibility" in payload:
            if payload["visibility"] not in ("public", "private"):
                raise HubError(400, None, f"Invalid visibility {payload['visibility']!r}")
            repo.private = payload["visibility"] == "private"
        return {}

    def space_variables(self, repo_id, method, payload, token) -> dict:
        """A Space's variables, as get_space_variables / add_space_variable / delete_space_variable see them:
        {key: {"value", "description", "updatedAt"}}. Only a writer reads or changes them."""
        repo = self._writable("space", repo_id, token)
        if method == "POST":
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", payload.get("key") or ""):
                raise HubError(400, None, f"Invalid variable name {payload.get('key')!r}")
            old = repo.variables.get(payload["key"], {})
            description = payload.get("description", old.get("description"))
            repo.variables[payload["key"]] = {"value": payload["value"], "description": description,
                                              "updatedAt": _now()}
        elif method == "DELETE":
            repo.variables.pop(payload.get("key"), None)
        return {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in repo.variables.items()}

    def _writable(self, repo_type, repo_id, token) -> _Repo:
        repo = self._repo(repo_type, repo_id, token)  # missing, or private and not yours: "not found"
        if not self._can_write(token, repo_id):
            raise HubError(403 if token else 401, None, f"You don't have the rights to push to {repo_id}")
        return repo

    def _pushable(self, repo_type, repo_id, revision, token, create_pr) -> _Repo:
        """A branch takes a writer's commits; `refs/pr/N` its author's too; anyone who can read may open a PR."""
        if not create_pr and not revision.startswith("refs/pr/"):
            return self._writable(repo_type, repo_id, token)
        repo, user = self._repo(repo_type, repo_id, token), self.user(token)
        if create_pr:
            if revision not in repo.refs or revision.startswith("refs/"):  # a PR targets a branch
                raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return repo
        pr = next((d for d in repo.discussions if d.is_pr and d.ref == revision), None)
        if pr is None:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        if user != pr.author and not self._can_write(token, repo_id):
            raise HubError(403, None, f"You don't have the rights to push to {revision} of {repo_id}")
        if pr.status in ("closed", "merged"):
            raise HubError(400, None, f"Pull request #{pr.num} is {pr.status}: it takes no more commits")
        return repo

    def preupload(self, repo_type, repo_id, revision, payload, token, create_pr) -> dict:
        _, files = self._commit(self._pushable(repo_type, repo_id, revision, token, create_pr), revision)
        # "oid" of a file already there lets the client skip an unchanged one (no empty commit).
        return {
            "files": [
                {
                    "path": f["path"],
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    "oid": git_blob_sha(files[f["path"]]) if f["path"] in files else None,
                }
                for f in payload["files"]
            ]
        }

    def commit(self, repo_type, repo_id, revision, entries, token, create_pr) -> dict:
        if self.commits_fail:  # the Hub going away mid-upload: the commit never lands
            raise HubError(503, None, "Service Unavailable")
        repo = self._pushable(repo_type, repo_id, revision, token, create_pr)
        if revision not in repo.refs:  # a commit goes to a branch or a PR, never a sha
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        head, header = repo.refs[revision], entries[0]["value"] if entries and entries[0]["key"] == "header" else {}
        parent = header.get("parentCommit")
        if create_pr and parent is not None:  # a PR opened from parent_commit
            head = self._commit(repo, parent)[0]
        elif parent not in (None, head):
            raise HubError(412, None, "A commit has happened since. Please refresh and try again.")
        files, title = dict(repo.commits[head]), header.get("summary", "")
        for entry in entries:
            key, value = entry["key"], entry["value"]
            if key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    raise HubError(404, "EntryNotFound", f'{value["path"]} does not exist on "{revision}"')
            elif key == "deletedFolder":
                files = {k: v for k, v in files.items() if not k.startswith(value["path"].rstrip("/") + "/")}
            elif key != "header":  # lfsFile: content the client put in Xet storage, which this fake does not hold
                raise HubError(501, None, f"FakeHub takes regular files only, not {key}")
        pr = None
        if create_pr:
            pr = self._open(repo, self.user(token), title, header.get("description", ""), True, "open", revision, head)
            revision = pr.ref
        sha = self._new_commit(repo, repo_type, repo_id, revision, files, title, self.user(token))
        if pr := pr or next((d for d in repo.discussions if d.is_pr and d.ref == revision), None):
            self._event(pr, "commit", self.user(token), {"subject": title, "oid": sha})
        return {
            "commitUrl": f"{self._url(repo_type, repo_id)}/commit/{sha}",
            "commitOid": sha,
            "pullRequestUrl": f"{self._url(repo_type, repo_id)}/discussions/{pr.num}" if create_pr else None,
            "success": True,
        }

    # --- discussions and pull requests ---

    def _event(self, d: _Discussion, kind: str, user: str, data: dict) -> dict:
        event = {"id": f"{next(self._counter):024x}", "type": kind, "createdAt": _now(), "author": {"name": user}}
        d.events.append(event | {"data": data})
        return d.events[-1]

    def _comment(self, d: _Discussion, user: str, text: str) -> dict:
        latest = {"raw": text, "html": f"<p>{html.escape(text)}</p>", "updatedAt": _now(), "author": {"name": user}}
        data = {"edited": False, "hidden": False, "latest": latest, "history": [latest]}
        return self._event(d, "comment", user, data)

    def _open(self, repo, user, title, description, is_pr, status, target="main", base=None) -> _Discussion:
        d = _Discussion(len(repo.discussions) + 1, title, user, is_pr, status)
        self._comment(d, user, description)
        if is_pr:  # the PR's ref starts at its target's head
            d.target, d.base = target, base or repo.refs[target]
            repo.refs[d.ref] = d.base
        repo.discussions.append(d)
        return d

    @staticmethod
    def _merge(repo: _Repo, d: _Discussion) -> tuple[dict[str, bytes], list[str]]:
        """The target branch with the PR's changes since its base, and the paths the branch changed otherwise."""
        base, head, target = (repo.commits[repo.refs.get(r, r)] for r in (d.base, d.ref, d.target))
        merged, conflicts = dict(target), []
        for path in {p for _, a, b in _changes(base, head) for p in (a, b)}:
            if base.get(path) != target.get(path) != head.get(path):  # the branch changed it too, differently
                conflicts.append(path)
            if path in head:
                merged[path] = head[path]
            else:
                merged.pop(path, None)
        return merged, sorted(conflicts)

    def _discussion_json(self, repo_type, repo_id, d: _Discussion) -> dict:
        return {
            "num": d.num,
            "title": d.title,
            "status": d.status,
            "createdAt": d.created_at,
            "author": {"name": d.author},
            "repo": {"name": repo_id, "type": repo_type},
            "isPullRequest": d.is_pr,
            "pinned": False,
            "numComments": sum(e["type"] == "comment" for e in d.events),
        }

    PAGE_SIZE = 50  # discussions per page of the listing (the Hub's); a test may lower it to exercise paging

    def discussions(self, repo_type, repo_id, num, action, post, query, body, token) -> dict:
        repo = self._repo(repo_type, repo_id, token)
        if num is None and post:  # create_discussion / create_pull_request: a PR opens as a draft
            title = (body.get("title") or "").strip()
            if not title:
                raise HubError(400, None, "title is required")
            is_pr, description = bool(body.get("pullRequest")), body.get("description") or ""
            d = self._open(repo, self.user(token), title, description, is_pr, "draft" if is_pr else "open")
            return {"num": d.num, "url": f"{self._url(repo_type, repo_id)}/discussions/{d.num}"}
        if num is None:  # newest first; "open" takes drafts, "closed" merged PRs
            kind, status, page = query.get("type", "all"), query.get("status", "all"), int(query.get("p", 0))
            chosen = [
                d
                for d in reversed(repo.discussions)
                if kind in ("all", "pull_request" if d.is_pr else "discussion")
                and status in ("all", "closed" if d.status in ("closed", "merged") else "open")
                and query.get("author") in (None, d.author)
            ]
            start = page * self.PAGE_SIZE
            return {
                "discussions": [self._discussion_json(repo_type, repo_id, d) for d in chosen[start:][: self.PAGE_SIZE]],
                "count": len(chosen),
                "start": start,
                "numClosedDiscussions": sum(d.status in ("closed", "merged") for d in repo.discussions),
            }
        if not 0 < num <= len(repo.discussions):
            raise HubError(404, None, "Discussion not found")
        d = repo.discussions[num - 1]
        if not post and action is None:
            out = self._discussion_json(repo_type, repo_id, d) | {"events": d.events}
            if d.is_pr:
                out["changes"] = {"base": f"refs/heads/{d.target}"}
                out["changes"] |= {"mergeCommitId": d.merge_commit} if d.merge_commit else {}
                out["filesWithConflicts"] = self._merge(repo, d)[1] if d.status in ("draft", "open") else []
                if query.get("diff") == "1":
                    out["diff"] = git_diff(repo.commits[d.base], repo.commits[repo.refs[d.ref]])
            return out
        user = self.user(token) if post else None
        owner = user == d.author or self._can_write(token, repo_id)
        if post and action == "comment":
            return {"newMessage": self._comment(d, user, body["comment"])}
        if post and (m := re.fullmatch(r"comment/([0-9a-f]+)/edit", action or "")):
            comment = next((e for e in d.events if e["id"] == m[1] and e["type"] == "comment"), None)
            if comment is None:
                raise HubError(404, None, "Comment not found")
            if comment["author"]["name"] != user:
                raise HubError(403, None, "You can only edit your own comments")
            latest = {"raw": body["content"], "html": f"<p>{html.escape(body['content'])}</p>"}
            comment["data"]["latest"] = latest | {"updatedAt": _now(), "author": {"name": user}}
            comment["data"]["history"].insert(0, comment["data"]["latest"])
            comment["data"]["edited"] = True
            return {"updatedComment": comment}
        if post and action == "title":
            if not owner:
                raise HubError(403, None, f"You don't have the rights to rename discussion #{num} of {repo_id}")
            event = self._event(d, "title-change", user, {"from": d.title, "to": body["title"]})
            d.title = body["title"]
            return {"newTitle": event}
        if post and action == "status":  # close, reopen, or publish a draft PR
            if not owner:
                raise HubError(403, None, f"You don't have the rights to change the status of #{num} of {repo_id}")
            if d.status == "merged" or body["status"] not in ("open", "closed"):
                raise HubError(400, None, f"Cannot change the status of a {d.status} discussion to {body['status']}")
            if body.get("comment"):
                self._comment(d, user, body["comment"])
            d.status = body["status"]
            return {"newStatus": self._event(d, "status-change", user, {"status": d.status})}
        if post and action == "merge":
            if not self._can_write(token, repo_id):
                raise HubError(403, None, f"You don't have the rights to merge pull requests of {repo_id}")
            if not d.is_pr or d.status != "open":
                why = "publish it to be able to merge" if d.status == "draft" else "only an open pull request"
                raise HubError(400, None, f"Cannot merge #{num}, which is {d.status if d.is_pr else 'not a PR'}: {why}")
            files, conflicts = self._merge(repo, d)
            if conflicts:
                raise HubError(409, None, f"Merge conflicts in {', '.join(conflicts)}", filesWithConflicts=conflicts)
            if body.get("comment"):
                self._comment(d, user, body["comment"])
            d.merge_commit = self._new_commit(repo, repo_type, repo_id, d.target, files, f"{d.title} (#{num})", user)
            d.status = "merged"
            self._event(d, "status-change", user, {"status": "merged"})
            return {"mergeCommitId": d.merge_commit}
        raise HubError(404, None, f"FakeHub has no route for discussion #{num} {action}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the client pools connections; every reply has a Content-Length

    def log_message(self, format, *args):  # noqa: A002 - keep the test output clean
        pass

    def do_HEAD(self):
        self._handle(send_body=False)

    def do_GET(self):
        self._handle(send_body=True)

    def do_POST(self):
        self._handle(send_body=True)

    def do_PUT(self):
        self._handle(send_body=True)

    def do_DELETE(self):
        self._handle(send_body=True)

    def _handle(self, send_body: bool) -> None:
        hub: FakeHub = self.server.hub  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        hub.requests.append((self.command, unquote(url.path)))
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        # Read the body first, whatever the route: an unread one would be parsed as the next keep-alive request.
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        post = self.command != "GET" and self.command != "HEAD"  # PUT and DELETE write too
        try:
            with hub._lock:
                status, headers, body = self._route(hub, url.path, query, data, token, post)
        except Exception as exc:  # a FakeHub bug fails fast as a 501: the client would retry a 500 or a dropped socket
            e = exc if isinstance(exc, HubError) else HubError(501, None, f"FakeHub failed: {exc!r}")
            status, body = e.status, json.dumps({"error": e.message, **e.body}).encode()
            headers = {"Content-Type": "application/json", "X-Error-Message": e.message}
            headers.update({"X-Error-Code": e.code} if e.code else {})
            headers.update({"X-Repo-Commit": e.commit} if e.commit else {})
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))  # on HEAD too: it is how the client learns the size
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _route(self, hub: FakeHub, path: str, query: dict, data: bytes, token: str | None, post: bool):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            raise HubError(501, None, "FakeHub reads bodies with a Content-Length only")
        if not post and (m := _RESOLVE.match(path)):
            repo_id, revision, filename = map(unquote, m.groups()[1:])
            kind = _API_KINDS[m[1] or "models"]
            return hub.resolve(kind, repo_id, revision, filename, token, self.headers.get("Range"))
        if m := _SETTINGS.match(path):
            if self.command != "PUT":
                raise HubError(404, None, f"FakeHub has no route for {self.command} {path}")
            return self._json(hub.update_settings(_API_KINDS[m[1]], unquote(m[2]), json.loads(data), token))
        if m := _VARIABLES.match(path):
            payload = json.loads(data) if data else {}
            return self._json(hub.space_variables(unquote(m[1]), self.command, payload, token))
        if self.command not in ("GET", "HEAD", "POST"):
            raise HubError(404, None, f"FakeHub has no route for {self.command} {path}")
        payload = self._api(hub, path, query, data, token, post)
        return self._json(payload)

    @staticmethod
    def _json(payload) -> tuple[int, dict, bytes]:
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    @staticmethod
    def _api(hub: FakeHub, path: str, query: dict, data: bytes, token: str | None, post: bool):
        if post and path == "/api/repos/create":
            return hub.create_repo(json.loads(data), token)
        if not post and path == "/api/whoami-v2":  # a token's account: what Gradio's local OAuth mock signs in as
            name = hub.user(token)
            return {"type": "user", "name": name, "fullname": name.title(), "avatarUrl": "", "orgs": []}
        if post and path == "/api/validate-yaml":  # upload_* send a README.md here before anything else
            return hub.validate_yaml(json.loads(data)["content"])
        if m := _DISCUSSIONS.match(path):
            num, body = int(m[3]) if m[3] else None, json.loads(data) if data else {}
            return hub.discussions(_API_KINDS[m[1]], unquote(m[2]), num, m[4], post, query, body, token)
        m = _API.match(path)
        if m is None or post != (m[3] in ("paths-info", "preupload", "commit")):
            raise HubError(404, None, f"FakeHub has no route for {'POST' if post else 'GET'} {path}")
        repo_type, repo_id, revision = _API_KINDS[m[1]], unquote(m[2]), unquote(m[4] or "main")
        if m[3] == "commits":
            return hub.commit_log(repo_type, repo_id, revision, token)
        if m[3] == "tree":
            recursive = query.get("recursive", "false").lower() in ("true", "1")
            return hub.tree(repo_type, repo_id, revision, unquote(m[5] or ""), recursive, token)
        if m[3] == "paths-info":  # a form: paths=a&paths=b&expand=False
            return hub.paths_info(repo_type, repo_id, revision, parse_qs(data.decode()).get("paths", []), token)
        if m[3] == "preupload":
            return hub.preupload(repo_type, repo_id, revision, json.loads(data), token, query.get("create_pr") == "1")
        if m[3] == "commit":  # NDJSON: a header line, then one line per operation
            entries = [json.loads(line) for line in data.splitlines() if line.strip()]
            return hub.commit(repo_type, repo_id, revision, entries, token, query.get("create_pr") == "1")
        return hub.info(repo_type, repo_id, revision, token)


def use_hub_endpoint(monkeypatch: pytest.MonkeyPatch, endpoint: str, hf_home: str | os.PathLike) -> None:
    """Point huggingface_hub at `endpoint` with a private cache, online. Setting the env vars is not enough:
    huggingface_hub.constants reads them once at import, so the constants the download path reads are patched too."""
    from huggingface_hub import constants, hf_api
    from huggingface_hub.utils import _cache_manager

    hf_home = str(hf_home)
    cache = os.path.join(hf_home, "hub")
    for key, value in {"HF_ENDPOINT": endpoint, "HF_HOME": hf_home, "HF_HUB_CACHE": cache}.items():
        monkeypatch.setenv(key, value)
    # Tokens are read at call time: none from the developer's environment may leak into a test.
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)  # HfApi() default endpoint; hf_hub_url's endpoint swap
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", cache)  # default cache_dir of hf_hub_download/snapshot_download
    monkeypatch.setattr(_cache_manager, "HF_HUB_CACHE", cache)  # scan_cache_dir imported the name itself
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", os.path.join(hf_home, "token"))  # no implicit login token
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", os.path.join(hf_home, "stored_tokens"))
    # huggingface_hub.model_info, list_repo_tree, ... are methods of a module-level HfApi built at import.
    monkeypatch.setattr(hf_api.api, "endpoint", endpoint)
    # Else the first request of the process makes build_hf_headers GET {ENDPOINT}/api/agent-harnesses (agent
    # detection for the user-agent, cached under the real HF_HOME): a stray request a test would count.
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    use_datasets_cache(monkeypatch, os.path.join(hf_home, "datasets"))
    import datasets.config as dconfig  # it too copies its settings at import (about 1 s, once per process)

    monkeypatch.setattr(dconfig, "HF_ENDPOINT", endpoint)  # HfApi/HfFileSystem(endpoint=...), hf:// URLs
    monkeypatch.setattr(dconfig, "HUB_DATASETS_URL", endpoint + "/datasets/{repo_id}/resolve/{revision}/{path}")
    # Two calls that would leave loopback: load_dataset HEADs a file on s3.amazonaws.com to count downloads, and asks
    # the dataset viewer at "datasets-server." + the endpoint's host (a DNS lookup) for the parquet export's infos.
    monkeypatch.setattr(dconfig, "HF_UPDATE_DOWNLOAD_COUNTS", False)
    monkeypatch.setattr(dconfig, "USE_PARQUET_EXPORT", False)
    set_hf_offline(monkeypatch, False)


def use_evaluate_endpoint(monkeypatch: pytest.MonkeyPatch, endpoint: str, cache: str | os.PathLike) -> None:
    """Let `evaluate.load("org/name")` fetch a module from the Space `org/name` at `endpoint`, online, with its
    downloads cached under `cache`. evaluate speaks plain `requests` (HEAD, then GET of
    `{endpoint}/spaces/org/name/resolve/<rev>/name.py`, first at rev "v<evaluate version>", then "main"), and reads
    its endpoint, offline switch and caches once, at import: those copies are patched. The imported module itself
    still goes to the modules cache (HF_MODULES_CACHE, on sys.path): moving it mid-process would break imports."""
    import evaluate.config as econfig

    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "0")
    monkeypatch.setattr(econfig, "HF_EVALUATE_OFFLINE", False)
    monkeypatch.setattr(econfig, "HF_ENDPOINT", endpoint)
    monkeypatch.setattr(econfig, "HUB_EVALUATE_URL", endpoint + "/spaces/{path}/resolve/{revision}/{name}")
    monkeypatch.setattr(econfig, "HF_UPDATE_DOWNLOAD_COUNTS", False)  # else a HEAD to s3.amazonaws.com per load
    cache = Path(cache)
    monkeypatch.setattr(econfig, "HF_EVALUATE_CACHE", cache)
    monkeypatch.setattr(econfig, "DOWNLOADED_EVALUATE_PATH", cache / "downloads")
    monkeypatch.setattr(econfig, "EXTRACTED_EVALUATE_PATH", cache / "downloads" / "extracted")


def use_datasets_cache(monkeypatch: pytest.MonkeyPatch, cache: str | os.PathLike) -> None:
    """Make `datasets` cache (prepared Arrow tables, downloads, extractions) under `cache`, not ~/.cache/huggingface.
    Its config derives these paths from HF_HOME / HF_DATASETS_CACHE once, at import, so they are patched."""
    import datasets.config as dconfig

    cache = Path(cache)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    monkeypatch.setattr(dconfig, "HF_DATASETS_CACHE", cache)
    downloads = cache / dconfig.DOWNLOADED_DATASETS_DIR
    monkeypatch.setattr(dconfig, "DOWNLOADED_DATASETS_PATH", downloads)
    monkeypatch.setattr(dconfig, "EXTRACTED_DATASETS_PATH", downloads / dconfig.EXTRACTED_DATASETS_DIR)


def set_hf_offline(monkeypatch: pytest.MonkeyPatch, offline: bool = True) -> None:
    """Switch offline mode mid-test. The client checks `constants.HF_HUB_OFFLINE` in a request hook, so offline
    requests fail before any byte leaves the process and hf_hub_download falls back to the cache. `datasets` keeps
    its own copy (from HF_DATASETS_OFFLINE, else huggingface_hub's), read by load_dataset: patched alike."""
    import datasets.config as dconfig
    from huggingface_hub import constants

    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(key, "1" if offline else "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(dconfig, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(dconfig, "HF_DATASETS_OFFLINE", offline)


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """A running FakeHub that huggingface_hub and datasets use, online, with their caches under tmp_path. Everything
    is restored afterwards (monkeypatch), so the rest of the suite stays offline."""
    from huggingface_hub import HfFileSystem, close_session

    hub = FakeHub()
    use_hub_endpoint(monkeypatch, hub.url, tmp_path / "hf_home")
    hub._monkeypatch = monkeypatch
    yield hub
    close_session()  # drop pooled keep-alive connections to this server before it goes away
    # fsspec keeps HfFileSystem instances (and their listings) per endpoint+token: a later test's server may get
    # this port again, and must not be answered from this one's listings.
    HfFileSystem.clear_instance_cache()
    hub.stop()
