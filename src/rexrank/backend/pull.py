"""A submission pull request as the backend jobs read it: what it changes, from the Hub's own trees (never from
parsing diff text, whose paths can hold spaces, ` b/`, quotes or newlines), its files downloaded at one pinned commit
into a scratch folder, and every security rule applied before anything parses them.

What the Hub merges is the pull request's changes since its merge base, so that is what is compared: the tree at the
pull request's head against the tree at the newest commit it shares with its target branch, path by path (blob id,
LFS sha256, size). Files are downloaded at that head commit, not at `refs/pr/N`, and a job's own commit names the head
as its parent: a push by the submitter in between makes the commit fail instead of mixing two revisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rexrank.rules import Checked, SubmissionRejected, Touched, check_submission
from rexrank.rules.layout import SUBMISSIONS
from rexrank.rules.ledger import Ledger


@dataclass(frozen=True)
class PullRequest:
    repo_id: str
    num: int
    author: str
    touched: tuple[Touched, ...]
    head: str  # the commit the jobs read: refs/pr/N when it was listed
    base: str  # the merge base on the target branch
    status: str = "open"

    @property
    def revision(self) -> str:
        return f"refs/pr/{self.num}"

    @property
    def submission_id(self) -> str:
        """The one submission folder the pull request touches (the checks refuse any other path)."""
        ids = {t.path.split("/")[1] for t in self.touched if t.path.startswith(f"{SUBMISSIONS}/") and
               t.path.count("/") >= 2}
        if len(ids) != 1:
            shown = ", ".join(repr(i)[1:-1][:70] for i in sorted(ids))
            raise SubmissionRejected(f"pull request #{self.num}", [
                f"touches {len(ids)} submission folders ({shown or 'none'}); exactly one is allowed"])
        return ids.pop()


def _tree(api, repo_id: str, revision: str) -> dict[str, tuple]:
    """path -> (blob id, LFS sha256 or None, size) of every file at `revision` (a commit sha)."""
    return {entry.path: (entry.blob_id, entry.lfs.sha256 if entry.lfs else None, entry.size)
            for entry in api.list_repo_tree(repo_id, repo_type="dataset", revision=revision, recursive=True)
            if hasattr(entry, "blob_id")}  # folders have no blob


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> tuple[Touched, ...]:
    """Every path whose file differs between two trees: added, modified (any of blob, LFS oid, size) or deleted."""
    touched = [Touched(path, after[path][2], "added" if path not in before else "modified")
               for path in after if before.get(path) != after[path]]
    touched += [Touched(path, 0, "deleted") for path in before if path not in after]
    return tuple(sorted(touched, key=lambda t: t.path))


def read_pull_request(api, repo_id: str, num: int) -> PullRequest:
    details = api.get_discussion_details(repo_id, num, repo_type="dataset")
    if not details.is_pull_request:
        raise SubmissionRejected(f"#{num}", ["is a discussion, not a pull request"])
    if details.status not in ("open", "draft"):
        raise SubmissionRejected(f"#{num}", [f"is {details.status}: only an open pull request is read"])
    history = api.list_repo_commits(repo_id, repo_type="dataset", revision=f"refs/pr/{num}")
    # The target's whole history: its head may have moved on since the pull request was opened.
    target = {c.commit_id for c in api.list_repo_commits(repo_id, repo_type="dataset",
                                                         revision=details.target_branch or "main")}
    head = history[0].commit_id
    base = next((c.commit_id for c in history if c.commit_id in target), None)
    if base is None:
        raise SubmissionRejected(f"#{num}", ["shares no commit with its target branch"])
    touched = changes(_tree(api, repo_id, base), _tree(api, repo_id, head))
    return PullRequest(repo_id, num, details.author, touched, head, base, details.status)


def checked_download(api, pr: PullRequest, into: Path, owner: str | None, maintained: dict[str, str]) -> Checked:
    """Apply the path rules to the touched paths, download the added and modified files at the pull request's head
    commit into `into` (repo layout), then check their contents. Nothing is downloaded before the path rules pass.
    `maintained`: the files the maintainers' jobs wrote into the pull request (path -> sha256)."""
    from huggingface_hub import hf_hub_download

    submission = pr.submission_id
    rules = {"author": pr.author, "maintained": maintained}
    check_submission(pr.touched, submission, owner, **rules)  # paths, sizes, ownership
    for t in pr.touched:
        if t.change != "deleted":
            hf_hub_download(pr.repo_id, t.path, repo_type="dataset", revision=pr.head, local_dir=into,
                            token=api.token)
    return check_submission(pr.touched, submission, owner, root=into, **rules)


def owner_of(ledger: Ledger, main_files: list[str], submission: str) -> str | None:
    """Who may change `submission`: its owner in the ledger; for a folder on main the ledger does not know, a marker
    no author matches (changing it is the maintainers' work); None when the id is new."""
    if (owner := ledger.owner(submission)) is not None:
        return owner
    return "(maintainers)" if any(f.startswith(f"{SUBMISSIONS}/{submission}/") for f in main_files) else None


@dataclass(frozen=True)
class Opened:
    """A pull request read and checked: what it holds, and main as the jobs saw it."""

    pr: PullRequest
    checked: Checked
    ledger: Ledger
    main: str  # the commit of main the ledger and cards were read at


def open_submission(api, repo_id: str, num: int, into: Path) -> Opened:
    """Read pull request `num` and main, check every rule (paths, sizes, ownership, contents, the name not another
    owner's lookalike), with its files downloaded into `into`. Raises SubmissionRejected saying why."""
    from rexrank.rules import ledger as ledgers

    pr = read_pull_request(api, repo_id, num)
    main = api.repo_info(repo_id, repo_type="dataset").sha
    files = api.list_repo_files(repo_id, repo_type="dataset", revision=main)
    ledger = ledgers.read_hub(api, repo_id, main, files)
    submission = pr.submission_id
    checked = checked_download(api, pr, into, owner_of(ledger, files, submission), ledger.private_results(submission))
    if checked.card is not None:
        taken = lookalike_of(checked.card.name, pr.author, checked.submission_id, ledger,
                             _main_cards(api, repo_id, main, files, ledger))
        if taken:
            raise SubmissionRejected(checked.submission_id, [
                f"name {checked.card.name!r} looks like {taken} (compared after NFKC and by Unicode confusable "
                "skeleton): choose a name of your own"])
    return Opened(pr, checked, ledger, main)


def lookalike_of(name: str, author: str, submission: str, ledger: Ledger, cards: dict[str, str]) -> str | None:
    """Another owner's name that `name` looks like, as "'NAME' (submission ID)"; None when there is none. `cards`:
    names on main of submissions the ledger does not know (their owner is the maintainers)."""
    from rexrank.backend.names import name_key

    key = name_key(name)
    known = [*ledger.names(), *((sid, "(maintainers)", card) for sid, card in cards.items())]
    for other_id, owner, other in known:
        if key and owner != author and other_id != submission and name_key(other) == key:
            return f"{other!r} (submission {other_id})"
    return None


def _main_cards(api, repo_id: str, main: str, files: list[str], ledger: Ledger) -> dict[str, str]:
    """The card names on main of the submissions the ledger does not record (merged before it existed)."""
    import json

    from huggingface_hub import hf_hub_download

    from rexrank.errors import InputError
    from rexrank.rules import check_card
    from rexrank.rules.layout import CARD

    names = {}
    for path in files:
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == SUBMISSIONS and parts[2] == CARD and parts[1] not in ledger.submissions:
            try:
                local = hf_hub_download(repo_id, path, repo_type="dataset", revision=main, token=api.token)
                names[parts[1]] = check_card(Path(local).read_bytes()).name
            except (InputError, OSError, json.JSONDecodeError):
                continue  # an unreadable legacy card names nobody
    return names
