"""The merge job: merge a submission pull request only as it was reviewed.

A pull request's head can move after its review (the submitter pushes again). The job reads the pull request
afresh, applies the path rules once more, and merges only when its head is the one the last maintainers' job
(review or private scoring) left in the ledger; otherwise it refuses and says to review again.

The Hub's merge call takes no expected head, so a push between that check and the call is merged too. So after the
merge the job lists the submission's folder on main and compares it, file by file, with the tree the job recorded
at the reviewed head: whatever differs is put back as it was reviewed (files restored from the reviewed head,
files added since deleted) in one commit on main. Should that commit fail, the board still ranks nothing of the
submission, since its folder on main is no state a job left (`Ledger.changed_since_review`); merging through the
Hub's button meets the same rule.
"""

from __future__ import annotations

from pathlib import Path

from rexrank.backend.pull import owner_of, read_pull_request
from rexrank.rules import SubmissionRejected, check_submission, ledger


def merge(repo_id: str, num: int, token: str | None = None) -> str:
    """Merge pull request `num` of `repo_id` if its head is the reviewed one, and put back anything else that reached
    main with it; the submission's id."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    pr = read_pull_request(api, repo_id, num)
    main = api.repo_info(repo_id, repo_type="dataset").sha
    files = api.list_repo_files(repo_id, repo_type="dataset", revision=main)
    known = ledger.read_hub(api, repo_id, main, files)
    submission = pr.submission_id
    check_submission(pr.touched, submission, owner_of(known, files, submission), author=pr.author,
                     maintained=known.private_results(submission))
    record = known.submissions.get(submission, {})
    reviewed = record.get("reviewed")
    if not reviewed or reviewed.get("pr") != num:
        raise SubmissionRejected(submission, [f"pull request #{num} was never reviewed: run the review job first"])
    if reviewed.get("head") != pr.head:
        raise SubmissionRejected(submission, [
            f"pull request #{num} changed after its review (head {pr.head[:12]}, reviewed {str(reviewed['head'])[:12]})"
            ": review it again"])
    tree = next((t["tree"] for t in reversed(record.get("trees", [])) if t.get("head") == pr.head), None)
    if tree is None:  # a ledger written before trees were kept: what the review saw, listed now
        tree = ledger.folder_tree(api, repo_id, pr.head, submission)
    api.merge_pull_request(repo_id, num, repo_type="dataset",
                           comment=f"Merged by rexrank at the reviewed head {pr.head[:12]}.")
    merged = api.repo_info(repo_id, repo_type="dataset").sha
    if changed := _differences(ledger.folder_tree(api, repo_id, merged, submission), tree):
        _put_back(api, repo_id, num, merged, pr.head, tree, changed)
    return submission


def _differences(found: dict[str, str], reviewed: dict[str, str]) -> list[str]:
    return sorted(p for p in {*found, *reviewed} if found.get(p) != reviewed.get(p))


def _put_back(api, repo_id: str, num: int, merged: str, head: str, tree: dict[str, str], paths: list[str]) -> None:
    """One commit on main (on the merge itself: a commit in between fails it) restoring `paths` as they were at the
    reviewed `head`; raises SubmissionRejected saying what reached main unreviewed."""
    import tempfile

    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, hf_hub_download

    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    with tempfile.TemporaryDirectory(prefix="rexrank-merge-") as tmp:
        operations = [CommitOperationAdd(p, Path(hf_hub_download(repo_id, p, repo_type="dataset", revision=head,
                                                                  local_dir=tmp, token=api.token)).read_bytes())
                      if p in tree else CommitOperationDelete(p) for p in paths]
        try:
            api.create_commit(repo_id, operations, repo_type="dataset", parent_commit=merged,
                              commit_message=f"Put back what reached main unreviewed with #{num}: {shown}")
        except Exception as err:  # noqa: BLE001 - whatever the Hub said, the board will not rank the difference
            raise SubmissionRejected(f"pull request #{num}", [
                f"merged, but {shown} changed after its review and could not be put back ({type(err).__name__}): "
                "the board ranks none of the submission until main holds what was reviewed"]) from None
    raise SubmissionRejected(f"pull request #{num}", [
        f"merged, but {shown} changed between the review check and the merge: put back as reviewed at "
        f"{head[:12]}"])
