"""The maintainers' ledger: what the review and private jobs verified and scored, kept on the results repo's main
branch under `ledger/`, where no pull request may write (the security rules refuse every path outside the
submission's own folder, and the merge job merges only the head a review recorded).

    ledger/submissions/<id>.json           the submission's owner (the author of the first pull request a job
                                           accepted), the names it was reviewed under, per result
                                           (`<dataset>.<task>`; `rexvqa.vqa.<split>` for ReXVQA's, in vqa/) the
                                           sha256 of the file the job wrote, the pull
                                           request, its head after the job's commit, the job and the time; the last
                                           job's record (`reviewed`: the head it read and the head it left); and
                                           the submission folder as each job left it (`trees`: path -> content id)
    ledger/private/<time>.<id>.<task>.json one private scoring: who asked (pull request author, institution), when,
                                           and a digest per study of the predictions scored (near copies of an
                                           earlier set are refused: `rexrank.backend.private`)
    ledger/imported/<name>.json            a maintainer vouches for `imported/<name>.json`, a figure rexrank does not
                                           ship: its sha256, who, when, a note (docs/security.md, rule 21)
    ledger/reviews/<id>.<dataset>.<task>.json  a maintainer reviewed the judge verdicts the deterministic metrics
                                           contradict in exactly that result file: its sha256, the metrics and their
                                           contradicted studies' count, who, when, a note (rule 22)

Both last kinds are written by `python -m rexrank.backend approve PATH` (`approval`), and count only for the bytes
they name.

`ledger/` is on main, which the Hub's merge button writes too: so every entry is signed by the job that wrote it
(`rexrank.rules.signing`, Ed25519 over the entry's path and record), and every reader (`read_folder`, `read_hub`, a
job about to update an entry) counts only entries whose signature verifies under the maintainers' public keys; any
other is named in `Ledger.unreadable` with the reason and ignored, as if it were not there.

The aggregate job ranks a scored result only when its file's sha256 is the ledger's, and a submission only when its
folder on main is one a job left (every file: cards and tables too): a number nobody re-scored, or a file changed
after its review (a push after the check, a merge by the Hub's button), is listed unranked with the reason.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatch
from pathlib import Path

from rexrank.errors import InputError
from rexrank.rules import signing
from rexrank.rules.layout import result_file

LEDGER = "ledger"
SUBMISSIONS = f"{LEDGER}/submissions"
PRIVATE = f"{LEDGER}/private"
IMPORTS = f"{LEDGER}/imported"
REVIEWS = f"{LEDGER}/reviews"
MAX_RECORD_BYTES = 4 * 1024 * 1024  # a private record holds one digest per study: about 250 KB for 10,000
COMMIT_TRIES = 5  # another job committed to main between our read and our write: read again
MAX_TREES = 20  # reviewed states of a submission's folder kept (each a few KB): any of them may be on main


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_id(blob_id: str, lfs_sha256: str | None) -> str:
    """A file's content as the Hub's tree names it: the sha256 of an LFS file, the git blob id of any other."""
    return f"sha256:{lfs_sha256}" if lfs_sha256 else f"git:{blob_id}"


def content_ids(data: bytes) -> tuple[str, str]:
    """Both ids `data` could be listed under (a local copy does not say whether the Hub keeps it in LFS)."""
    return f"sha256:{sha256(data)}", f"git:{hashlib.sha1(b'blob %d' % len(data) + bytes(1) + data).hexdigest()}"


def folder_tree(api, repo_id: str, revision: str, submission: str) -> dict[str, str]:
    """path -> content id of every file of `submission`'s folder at `revision` (a commit)."""
    folder = f"submissions/{submission}"
    try:
        entries = api.list_repo_tree(repo_id, repo_type="dataset", revision=revision, path_in_repo=folder,
                                     recursive=True)
        return {e.path: content_id(e.blob_id, e.lfs.sha256 if e.lfs else None) for e in entries
                if hasattr(e, "blob_id")}  # folders have no blob
    except Exception as err:  # noqa: BLE001 - a folder not there yet lists as nothing, whatever the client raises
        from huggingface_hub.errors import HfHubHTTPError

        if isinstance(err, HfHubHTTPError) and err.response is not None and err.response.status_code == 404:
            return {}
        raise


def tree_changes(local: dict[str, tuple[str, str]], tree: dict[str, str]) -> list[str]:
    """The paths where a folder (path -> its `content_ids`) differs from a recorded tree: missing, added, other."""
    return sorted({*(p for p in tree if p not in local), *(p for p in local if p not in tree),
                   *(p for p in local if p in tree and tree[p] not in local[p])})


def local_ids(root: str | Path, folder: str | Path) -> dict[str, tuple[str, str]]:
    """Repo path -> `content_ids` of every file under `folder` of a local copy of the results repo at `root`."""
    root = Path(root)
    return {path.relative_to(root).as_posix(): content_ids(path.read_bytes())
            for path in sorted(Path(folder).rglob("*")) if path.is_file() and not path.is_symlink()}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ledger:
    submissions: dict[str, dict] = field(default_factory=dict)  # submission id -> its record
    private: list[dict] = field(default_factory=list)  # private scorings, oldest first
    unreadable: list[str] = field(default_factory=list)  # ledger files not counted (unreadable, not signed), why
    imports: dict[str, dict] = field(default_factory=dict)  # imported file name -> the maintainer's record
    reviews: dict[str, dict] = field(default_factory=dict)  # "<id>.<dataset>.<task>" -> the maintainer's review

    def owner(self, submission: str) -> str | None:
        record = self.submissions.get(submission)
        return record.get("owner") if record else None

    def names(self) -> list[tuple[str, str, str]]:
        """(submission, owner, name) for every name a submission was accepted under."""
        return [(sid, record.get("owner", ""), name) for sid, record in self.submissions.items()
                for name in record.get("names", [])]

    def private_results(self, submission: str) -> dict[str, str]:
        """repo path -> sha256 of each result a maintainers' job wrote into `submission` that no submitter may: the
        private job's (a private set's aggregates) and the inference job's (generated results)."""
        results = self.submissions.get(submission, {}).get("results", {})
        return {result_file(submission, key): entry["sha256"] for key, entry in results.items()
                if entry.get("job") in ("private", "inference")}

    def changed_since_review(self, submission: str, local: dict[str, tuple[str, str]],
                             only: tuple[str, ...] = ("*",)) -> list[str] | None:
        """None when `local` (the submission folder on main: repo path -> `content_ids`) is a state a maintainers'
        job left it in, or when the ledger predates trees; else the paths that differ from the nearest such state.
        `only`: the path patterns compared (the files a local copy holds)."""
        def kept(tree: dict) -> dict:
            return {p: v for p, v in tree.items() if any(fnmatch(p, pattern) for pattern in only)}

        local = kept(local)
        trees = [kept(t["tree"]) for t in self.submissions.get(submission, {}).get("trees", []) if isinstance(t, dict)
                 and isinstance(t.get("tree"), dict)]
        if not trees:
            return None
        differences = [tree_changes(local, tree) for tree in trees]
        return None if any(not d for d in differences) else min(differences, key=len)

    def unverified(self, submission: str, key: str, data: bytes) -> str | None:
        """Why the result file `data` of `submission` (`key` = "<dataset>.<task>") may not be ranked; None when a
        maintainers' job wrote exactly these bytes."""
        entry = self.submissions.get(submission, {}).get("results", {}).get(key)
        if entry is None:
            return "not re-scored by the maintainers' review job"
        if entry.get("sha256") != sha256(data):
            return f"changed since the {entry.get('job', 'review')} job wrote it (pull request #{entry.get('pr')})"
        return None


    def import_problem(self, name: str, data: bytes) -> str | None:
        """None when a maintainer recorded exactly these bytes as `imported/<name>`; else why not."""
        entry = self.imports.get(name.removesuffix(".json"))
        if entry is None:
            return f"not recorded by the maintainers ({IMPORTS}/)"
        if entry.get("sha256") != sha256(data):
            return f"changed since {entry.get('by') or 'a maintainer'} recorded it ({entry.get('at', '')})"
        return None

    def reviewed(self, submission: str, key: str, data: bytes) -> dict | None:
        """The maintainers' review of the result file `data` of `submission` ("<dataset>.<task>"), when it names
        exactly these bytes."""
        entry = self.reviews.get(f"{submission}.{key}")
        return entry if entry is not None and entry.get("sha256") == sha256(data) else None


def approval_path(path: str) -> str:
    """Where the ledger records a maintainer's approval of the repo file `path`: an imported row, or a submission's
    result whose judge verdicts were reviewed; InputError for any other file."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "imported" and parts[1].endswith(".json") and parts[1] != ".json":
        return f"{IMPORTS}/{parts[1]}"
    if len(parts) == 4 and parts[0] == "submissions" and parts[2] == "results" and parts[3].endswith(".json"):
        return f"{REVIEWS}/{parts[1]}.{parts[3]}"
    raise InputError(f"{path}: only imported/<name>.json or submissions/<id>/results/<dataset>.<task>.json can be "
                     "approved")


def approval(path: str, data: bytes, by: str, note: str = "", **more) -> dict:
    """The record of a maintainer's approval of exactly `data` at `path` (`more`: what was reviewed)."""
    return {"path": path, "sha256": sha256(data), "by": by, "at": now(), "note": note, **more}


def record_approval(api, repo_id: str, path: str, record: dict) -> None:
    _commit_json(api, repo_id, approval_path(path), lambda _: record, f"Ledger: {record['by']} approves {path}",
                 keep=False)


def _write_signed(root: Path, path: str, record: dict, key: signing.SigningKey | None) -> None:
    """Write `record`, signed with `key` (the maintainers' key of the environment by default), at repo path `path`
    of a local copy of the results repo (the demo board and the tests write one)."""
    key = key or signing.signing_key()
    write_to = root / path
    write_to.parent.mkdir(parents=True, exist_ok=True)
    write_to.write_text(json.dumps(key.sign(path, record), indent=1, sort_keys=True) + "\n", encoding="utf-8")


def approve_folder(root: str | Path, path: str, record: dict, key: signing.SigningKey | None = None) -> None:
    """`record_approval` in a local copy of the results repo."""
    _write_signed(Path(root), approval_path(path), record, key)


def read_folder(root: str | Path, keys: dict[str, bytes] | None = None) -> Ledger:
    """The ledger of a local copy of the results repo (an empty one when it has none): the entries signed by one of
    `keys` (id -> public key; the configured ones, `signing.public_keys()`, by default); the others in `unreadable`."""
    root = Path(root)
    ledger = Ledger()
    if not (root / LEDGER).is_dir():
        return ledger
    keys = signing.public_keys() if keys is None else keys

    def records(folder: str):
        for path in sorted((root / folder).glob("*.json")):
            if (record := _record(root, path, ledger, keys)) is not None:
                yield path.stem, record

    ledger.submissions.update(records(SUBMISSIONS))
    ledger.private = [record for _, record in records(PRIVATE)]
    ledger.imports.update(records(IMPORTS))
    ledger.reviews.update(records(REVIEWS))
    return ledger


def _record(root: Path, path: Path, ledger: Ledger, keys: dict[str, bytes]) -> dict | None:
    name = path.relative_to(root).as_posix()
    try:
        if path.is_symlink() or path.stat().st_size > MAX_RECORD_BYTES:
            raise ValueError("too large or a symlink")
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except (OSError, ValueError, RecursionError) as err:  # RecursionError: JSON nested past the parser's depth
        ledger.unreadable.append(f"{name}: {type(err).__name__}")
        return None
    if why := signing.problem(name, record, keys):
        ledger.unreadable.append(f"{name}: {why}; not counted")
        return None
    return record


def read_hub(api, repo_id: str, revision: str = "main", files: list[str] | None = None,
             keys: dict[str, bytes] | None = None) -> Ledger:
    """The ledger on the Hub at `revision` (main, or the commit a job read): its signed entries (`read_folder`);
    `files`: the repo's files there, when already listed."""
    from huggingface_hub import snapshot_download

    if files is not None and not any(f.startswith(f"{LEDGER}/") for f in files):
        return Ledger()
    with tempfile.TemporaryDirectory(prefix="rexrank-ledger-") as tmp:
        snapshot_download(repo_id, repo_type="dataset", revision=revision, local_dir=tmp, token=api.token,
                          allow_patterns=[f"{LEDGER}/**"])
        return read_folder(tmp, keys)


def with_results(record: dict | None, submission: str, *, owner: str, name: str, institution: str,
                 files: dict[str, bytes], pr: int, head: str, job: str, read: str | None = None,
                 tree: dict[str, str] | None = None) -> dict:
    """`record` (None for a new submission) updated with what `job` wrote: `files` maps "<dataset>.<task>" to the
    result file's bytes; `read` is the head of pull request `pr` the job read and checked, `head` its head after the
    job's own commit (`read` by default), `tree` the submission folder there (`folder_tree`; a local copy written
    by the demo has none)."""
    record = record or {"submission": submission, "owner": owner, "names": [], "results": {}}
    if record["owner"] != owner:
        raise InputError(f"{submission} belongs to {record['owner']!r}, not to {owner!r}")
    if name not in record["names"]:
        record["names"].append(name)
    record["institution"] = institution
    stamp = now()
    for key, data in files.items():
        record["results"][key] = {"sha256": sha256(data), "pr": pr, "head": head, "job": job, "at": stamp}
    record["reviewed"] = {"pr": pr, "read": read or head, "head": head, "job": job, "at": stamp}
    if tree is not None:
        record["trees"] = [*record.get("trees", []), {"pr": pr, "head": head, "tree": tree}][-MAX_TREES:]
    return record


def record_results(api, repo_id: str, submission: str, **entry) -> None:
    """Record on main what a job wrote for `submission` (`with_results`); the first record names its owner."""
    _commit_json(api, repo_id, f"{SUBMISSIONS}/{submission}.json",
                 lambda record: with_results(record, submission, **entry),
                 f"Ledger: {entry['job']} of {submission} (#{entry['pr']})")


def record_folder(root: str | Path, submission: str, key: signing.SigningKey | None = None, **entry) -> None:
    """`record_results` in a local copy of the results repo (the synthetic demo board and the tests write one),
    signed with `key` (the environment's by default)."""
    key = key or signing.signing_key()
    name = f"{SUBMISSIONS}/{submission}.json"
    path = Path(root) / name
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if record is not None and (why := signing.problem(name, record, {**signing.public_keys(), key.id: key.public})):
        raise InputError(f"{name}: {why}; nothing is written over it")
    _write_signed(Path(root), name, with_results(record, submission, **entry), key)


def record_private(api, repo_id: str, record: dict) -> None:
    """Add one private scoring's record (a file of its own: records never collide)."""
    name = f"{record['at'].replace(':', '')}.{record['submission']}.{record['task']}.json"
    _commit_json(api, repo_id, f"{PRIVATE}/{name}", lambda _: record,
                 f"Ledger: private scoring of {record['submission']} (#{record['pr']})")


def _commit_json(api, repo_id: str, path: str, update, message: str, keep: bool = True) -> None:
    """Read `path` at main's head, `update` it, sign it, commit it on that head; another commit in between: read
    again. With `keep` (`update` builds on what is there), an entry that is there but not signed by the
    maintainers' keys is refused, never built on and signed again: a record a merged pull request forged."""
    from huggingface_hub import CommitOperationAdd, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    key, keys = signing.signing_key(), signing.public_keys()
    for _ in range(COMMIT_TRIES):
        head = api.repo_info(repo_id, repo_type="dataset").sha
        try:
            current = json.loads(Path(hf_hub_download(repo_id, path, repo_type="dataset", revision=head,
                                                      token=api.token)).read_text(encoding="utf-8"))
        except EntryNotFoundError:
            current = None
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: not the jobs' either
            current = "unreadable"
        if keep and current is not None and (why := signing.problem(path, current, keys)
                                             if isinstance(current, dict) else "not a JSON object"):
            raise InputError(f"{repo_id}: {path}: {why}; the job writes nothing over it (docs/security.md, rule 20)")
        data = (json.dumps(key.sign(path, update(current)), indent=1, sort_keys=True) + "\n").encode()
        try:
            api.create_commit(repo_id, [CommitOperationAdd(path, data)], commit_message=message, repo_type="dataset",
                              parent_commit=head)
            return
        except HfHubHTTPError as err:
            if err.response is None or err.response.status_code != 412:
                raise
    raise InputError(f"{repo_id}: main kept moving; the ledger could not be written after {COMMIT_TRIES} tries")
