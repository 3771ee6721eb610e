"""The merge job: merge a submission pull request only as it was reviewed.

A pull request's head can move after its review (the submitter pushes again). The job reads the pull request
afresh, applies the path rules once more, and merges only when its head is the one the last maintainers' job
(review or private scoring) recorded in the ledger; otherwise it refuses and says to review again. Merging through
the Hub's button bypasses this check, but not the board's: the aggregate job ranks a result only when its sha256
is the ledger's.
"""

from __future__ import annotations

from rexrank.backend import ledger
from rexrank.backend.pull import owner_of, read_pull_request
from rexrank.rules import SubmissionRejected, check_submission


def merge(repo_id: str, num: int, token: str | None = None) -> str:
    """Merge pull request `num` of `repo_id` if its head is the reviewed one; the submission's id."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    pr = read_pull_request(api, repo_id, num)
    main = api.repo_info(repo_id, repo_type="dataset").sha
    files = api.list_repo_files(repo_id, repo_type="dataset", revision=main)
    known = ledger.read_hub(api, repo_id, main, files)
    submission = pr.submission_id
    check_submission(pr.touched, submission, owner_of(known, files, submission), author=pr.author,
                     maintained=known.private_results(submission))
    reviewed = known.submissions.get(submission, {}).get("reviewed")
    if not reviewed or reviewed.get("pr") != num:
        raise SubmissionRejected(submission, [f"pull request #{num} was never reviewed: run the review job first"])
    if reviewed.get("head") != pr.head:
        raise SubmissionRejected(submission, [
            f"pull request #{num} changed after its review (head {pr.head[:12]}, reviewed {str(reviewed['head'])[:12]})"
            ": review it again"])
    api.merge_pull_request(repo_id, num, repo_type="dataset",
                           comment=f"Merged by rexrank at the reviewed head {pr.head[:12]}.")
    return submission
