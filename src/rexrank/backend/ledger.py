"""The maintainers' ledger: what the review and private jobs verified and scored, kept on the results repo's main
branch under `ledger/`, where no pull request may write (the security rules refuse every path outside the
submission's own folder, and the merge job merges only the head a review recorded).

    ledger/submissions/<id>.json           the submission's owner (the author of the first pull request a job
                                           accepted), the names it was reviewed under, and per result
                                           (`<dataset>.<task>`) the sha256 of the file the job wrote, the pull
                                           request, its head after the job's commit, the job and the time
    ledger/private/<time>.<id>.<task>.json one private scoring: who asked (pull request author, institution), when,
                                           and a digest per study of the predictions scored (near copies of an
                                           earlier set are refused: `rexrank.backend.private`)

The aggregate job ranks a scored result only when its file's sha256 is the ledger's: a number nobody re-scored, or
one changed after its review, is listed unranked with the reason.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rexrank.errors import InputError

LEDGER = "ledger"
SUBMISSIONS = f"{LEDGER}/submissions"
PRIVATE = f"{LEDGER}/private"
MAX_RECORD_BYTES = 4 * 1024 * 1024  # a private record holds one digest per study: about 250 KB for 10,000
COMMIT_TRIES = 5  # another job committed to main between our read and our write: read again


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ledger:
    submissions: dict[str, dict] = field(default_factory=dict)  # submission id -> its record
    private: list[dict] = field(default_factory=list)  # private scorings, oldest first
    unreadable: list[str] = field(default_factory=list)  # ledger files that could not be read, by path

    def owner(self, submission: str) -> str | None:
        record = self.submissions.get(submission)
        return record.get("owner") if record else None

    def names(self) -> list[tuple[str, str, str]]:
        """(submission, owner, name) for every name a submission was accepted under."""
        return [(sid, record.get("owner", ""), name) for sid, record in self.submissions.items()
                for name in record.get("names", [])]

    def private_results(self, submission: str) -> dict[str, str]:
        """repo path -> sha256 of each private set's result the private job wrote for `submission`."""
        results = self.submissions.get(submission, {}).get("results", {})
        return {f"submissions/{submission}/results/{key}.json": entry["sha256"] for key, entry in results.items()
                if entry.get("job") == "private"}

    def unverified(self, submission: str, key: str, data: bytes) -> str | None:
        """Why the result file `data` of `submission` (`key` = "<dataset>.<task>") may not be ranked; None when a
        maintainers' job wrote exactly these bytes."""
        entry = self.submissions.get(submission, {}).get("results", {}).get(key)
        if entry is None:
            return "not re-scored by the maintainers' review job"
        if entry.get("sha256") != sha256(data):
            return f"changed since the {entry.get('job', 'review')} job wrote it (pull request #{entry.get('pr')})"
        return None


def read_folder(root: str | Path) -> Ledger:
    """The ledger of a local copy of the results repo (an empty one when it has none)."""
    root = Path(root)
    ledger = Ledger()
    for path in sorted((root / SUBMISSIONS).glob("*.json")):
        if (record := _record(path, ledger)) is not None:
            ledger.submissions[path.stem] = record
    ledger.private = [r for path in sorted((root / PRIVATE).glob("*.json")) if (r := _record(path, ledger))]
    return ledger


def _record(path: Path, ledger: Ledger) -> dict | None:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_RECORD_BYTES:
            raise ValueError("too large or a symlink")
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not an object")
        return record
    except (OSError, ValueError) as err:
        ledger.unreadable.append(f"{path.name}: {type(err).__name__}")
        return None


def read_hub(api, repo_id: str, revision: str = "main", files: list[str] | None = None) -> Ledger:
    """The ledger on the Hub at `revision` (main, or the commit a job read); `files`: the repo's files there, when
    already listed."""
    from huggingface_hub import snapshot_download

    if files is not None and not any(f.startswith(f"{LEDGER}/") for f in files):
        return Ledger()
    with tempfile.TemporaryDirectory(prefix="rexrank-ledger-") as tmp:
        snapshot_download(repo_id, repo_type="dataset", revision=revision, local_dir=tmp, token=api.token,
                          allow_patterns=[f"{LEDGER}/**"])
        return read_folder(tmp)


def with_results(record: dict | None, submission: str, *, owner: str, name: str, institution: str,
                 files: dict[str, bytes], pr: int, head: str, job: str) -> dict:
    """`record` (None for a new submission) updated with what `job` wrote: `files` maps "<dataset>.<task>" to the
    result file's bytes; `head` is pull request `pr`'s head after the job's commit."""
    record = record or {"submission": submission, "owner": owner, "names": [], "results": {}}
    if record["owner"] != owner:
        raise InputError(f"{submission} belongs to {record['owner']!r}, not to {owner!r}")
    if name not in record["names"]:
        record["names"].append(name)
    record["institution"] = institution
    stamp = now()
    for key, data in files.items():
        record["results"][key] = {"sha256": sha256(data), "pr": pr, "head": head, "job": job, "at": stamp}
    record["reviewed"] = {"pr": pr, "head": head, "job": job, "at": stamp}
    return record


def record_results(api, repo_id: str, submission: str, **entry) -> None:
    """Record on main what a job wrote for `submission` (`with_results`); the first record names its owner."""
    _commit_json(api, repo_id, f"{SUBMISSIONS}/{submission}.json",
                 lambda record: with_results(record, submission, **entry),
                 f"Ledger: {entry['job']} of {submission} (#{entry['pr']})")


def record_folder(root: str | Path, submission: str, **entry) -> None:
    """`record_results` in a local copy of the results repo (the synthetic demo board and the tests write one)."""
    path = Path(root) / SUBMISSIONS / f"{submission}.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(with_results(record, submission, **entry), indent=1, sort_keys=True) + "\n",
                    encoding="utf-8")


def record_private(api, repo_id: str, record: dict) -> None:
    """Add one private scoring's record (a file of its own: records never collide)."""
    name = f"{record['at'].replace(':', '')}.{record['submission']}.{record['task']}.json"
    _commit_json(api, repo_id, f"{PRIVATE}/{name}", lambda _: record,
                 f"Ledger: private scoring of {record['submission']} (#{record['pr']})")


def _commit_json(api, repo_id: str, path: str, update, message: str) -> None:
    """Read `path` at main's head, `update` it, commit it on that head; another commit in between: read again."""
    from huggingface_hub import CommitOperationAdd, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    for _ in range(COMMIT_TRIES):
        head = api.repo_info(repo_id, repo_type="dataset").sha
        try:
            current = json.loads(Path(hf_hub_download(repo_id, path, repo_type="dataset", revision=head,
                                                      token=api.token)).read_text(encoding="utf-8"))
        except EntryNotFoundError:
            current = None
        data = (json.dumps(update(current), indent=1, sort_keys=True) + "\n").encode()
        try:
            api.create_commit(repo_id, [CommitOperationAdd(path, data)], commit_message=message, repo_type="dataset",
                              parent_commit=head)
            return
        except HfHubHTTPError as err:
            if err.response is None or err.response.status_code != 412:
                raise
    raise InputError(f"{repo_id}: main kept moving; the ledger could not be written after {COMMIT_TRIES} tries")
