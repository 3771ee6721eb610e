"""A submission pull request as the backend jobs read it: the paths it touches (from its diff against main), their
sizes, its files downloaded into a scratch folder, and every security rule applied before anything parses them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rexrank.backend.security import Checked, SubmissionRejected, Touched, check_submission
from rexrank.submission import SUBMISSIONS

_DIFF_HEADER = re.compile(r"^diff --git a/(.+) b/(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class PullRequest:
    repo_id: str
    num: int
    author: str
    touched: tuple[Touched, ...]

    @property
    def revision(self) -> str:
        return f"refs/pr/{self.num}"

    @property
    def submission_id(self) -> str:
        """The one submission folder the pull request touches (the checks refuse any other path)."""
        ids = {t.path.split("/")[1] for t in self.touched if t.path.startswith(f"{SUBMISSIONS}/") and
               t.path.count("/") >= 2}
        if len(ids) != 1:
            raise SubmissionRejected(f"pull request #{self.num}", [
                f"touches {len(ids)} submission folders ({', '.join(sorted(ids)) or 'none'}); exactly one is allowed"])
        return ids.pop()


def _changes(diff: str) -> dict[str, str]:
    """path -> added / modified / deleted, from a git diff (both sides of a rename)."""
    changes: dict[str, str] = {}
    blocks = _DIFF_HEADER.split(diff)[1:]  # a, b, body, a, b, body, ...
    for a, b, body in zip(blocks[::3], blocks[1::3], blocks[2::3], strict=True):
        if "\ndeleted file mode" in body or body.startswith("deleted file mode"):
            changes[a] = "deleted"
        elif "new file mode" in body:
            changes[b] = "added"
        else:
            changes[b] = "modified"
            if a != b:
                changes[a] = "deleted"  # renamed away
    return changes


def read_pull_request(api, repo_id: str, num: int) -> PullRequest:
    details = api.get_discussion_details(repo_id, num, repo_type="dataset")
    if not details.is_pull_request:
        raise SubmissionRejected(f"#{num}", ["is a discussion, not a pull request"])
    changes = _changes(details.diff or "")
    sizes = {entry.path: getattr(entry, "size", 0) or 0 for entry in api.list_repo_tree(
        repo_id, repo_type="dataset", revision=f"refs/pr/{num}", recursive=True)}
    touched = tuple(Touched(path, 0 if change == "deleted" else sizes.get(path, 0), change)
                    for path, change in sorted(changes.items()))
    return PullRequest(repo_id, num, details.author, touched)


def checked_download(api, pr: PullRequest, into: Path, owner: str | None) -> Checked:
    """Apply the path rules to the touched paths, download the added and modified files into `into` (repo layout),
    then check their contents. Nothing is parsed before the path rules pass."""
    from huggingface_hub import hf_hub_download

    submission = pr.submission_id
    check_submission(pr.touched, submission, owner, author=pr.author)  # paths, sizes, ownership
    for t in pr.touched:
        if t.change != "deleted":
            hf_hub_download(pr.repo_id, t.path, repo_type="dataset", revision=pr.revision, local_dir=into,
                            token=api.token)
    return check_submission(pr.touched, submission, owner, author=pr.author, root=into)


def owner_of(api, repo_id: str, submission: str) -> str | None:
    """None when `submission` is new on main; else a marker no author matches: changing a merged submission is the
    maintainers' work (the results repo records no author per submission yet)."""
    files = api.list_repo_files(repo_id, repo_type="dataset")
    return "(maintainers)" if any(f.startswith(f"{SUBMISSIONS}/{submission}/") for f in files) else None
