"""The inference job's VQA track: a submission that serves VQA (model.yaml `serves`, ReXrank's words) runs on ReXVQA's
questions in the same sandbox, staging, save-file reader and bounds as a report run (rexrank.inference.runner.infer
with the questions as its input), and its answers are scored by `rexrank score-vqa`'s scorer (rexrank.vqa.score).

- **public**: a `--public rexvqa=QUESTIONS,IMAGES` source (a folder built by `rexrank build-dataset rexvqa`, or a Hub
  dataset of one): the result and its per-question table committed to the pull request as generated
  (`vqa/rexvqa.vqa.<split>.json`, `.per_question.parquet`), recorded in the ledger as the report sets' are.
- **private**: `--vqa-private QUESTIONS[,IMAGES]`, the challenge's questions (a folder the maintainers hold, or a
  private dataset read with their token), its images those of `--private-images` unless named. The answers are kept
  nowhere once scored; only the aggregates are published, at the board's BOARD_DECIMALS places and without the
  count of correct answers (which would undo the rounding); no per-question file. Before scoring, as the report
  sets' degenerate-set rules (rexrank.backend.private), a set is refused when:
    - more than UNREAD_SHARE of its answers give no option (empty, or no letter read: the empty-prediction rule);
    - one letter is read for more than ONE_LETTER_SHARE of its questions (a constant answer: the identical-text
      rule; every question has four options, so an honest model's most frequent letter is far below half, while
      a constant answer's accuracy is the share of that letter among the private answers, per category);
    - its letters differ on fewer than CHANGED_SHARE of the questions from a set scored before (the near-copy rule:
      two sets one answer apart would give that answer's correctness through the accuracy).
  The ledger keeps, per question, a digest of the letter read keyed by the private answers themselves (a letter
  alone hashes to one of four values anyone can try; without the answers, no one can), never the letter.
  Quotas are the report sets' (PER_SUBMITTER, PER_ORGANISATION in WINDOW_DAYS), counted for the task `vqa`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from rexrank.backend.names import name_key
from rexrank.backend.private import EMPTY_SHARE, near_copy, over_quota, unreviewed
from rexrank.backend.pull import open_submission
from rexrank.catalog import REXVQA, VQA_TASK
from rexrank.files import file_sha256
from rexrank.inference.inputs import question_records
from rexrank.inference.runner import infer
from rexrank.results import BOARD_DECIMALS, ModelInfo
from rexrank.rules import SubmissionRejected, ledger
from rexrank.rules.layout import SUBMISSIONS, VQA_FOLDER, VQA_PRIVATE_SPLIT, VQA_STEM
from rexrank.rules.vqa import TABLE
from rexrank.text import to_markdown

SOURCE = REXVQA.name  # a --public source of this name is ReXVQA's questions
UNREAD_SHARE = EMPTY_SHARE
ONE_LETTER_SHARE = 0.50
GENERATED = {"generated_by": "rexrank inference job"}


def questions_of(source: str | Path, token: str | None = None, work: Path | None = None):
    """(questions, split) from a folder built by `rexrank build-dataset rexvqa`, or a Hub dataset of one (fetched
    with `token` into `work`)."""
    from rexrank.vqa.dataset import load_questions

    if not Path(source).is_dir():
        from huggingface_hub import snapshot_download

        source = snapshot_download(str(source), repo_type="dataset", token=token,
                                   local_dir=work if work is not None else None)
    return load_questions(source)


def run(model, questions, split: str, images: str | Path, out: Path, interpreters, cache, *, gpus: int = 0,
        timeout: float, keep_logs: bool = True, limit: int | None = None):
    """The model on the questions (their first `limit`), as `rexrank.inference.runner.infer` runs a report task."""
    records = question_records(questions, split)
    if limit is not None:
        records = dict(list(records.items())[:limit])
    return infer(model.folder, None, images, out, task=VQA_TASK, python=interpreters[0], environment=interpreters[1],
                 weights_cache=cache, gpus=gpus, timeout=timeout, keep_logs=keep_logs, records=records)


def _scored(questions, out: Path, resamples: int, where: str):
    from rexrank.vqa.score import read_predictions, score

    return score(questions, read_predictions(out), resamples, where=where)


def _model_info(opened) -> ModelInfo:
    card = opened.checked.card
    known = opened.ledger.submissions.get(opened.checked.submission_id, {})
    if card:
        return ModelInfo(card.name, card.institution, card.url)
    return ModelInfo((known.get("names") or [opened.checked.submission_id])[-1], known.get("institution", ""))


def public(api, repo_id: str, num: int, model, test_set, interpreters, cache, work: Path, resamples: int, gpus: int,
           timeout: float) -> list[dict]:
    """The model on a public ReXVQA split, scored, committed to the pull request as generated with its table."""
    from huggingface_hub import CommitOperationAdd

    from rexrank.vqa.score import result_record

    questions, split = questions_of(test_set.split)
    out = work / "public" / f"{VQA_STEM}.{split}.jsonl"
    run(model, questions, split, test_set.images, out, interpreters, cache, gpus=gpus, timeout=timeout)
    scores = _scored(questions, out, resamples, out.name)
    key = f"{VQA_STEM}.{split}"
    table = work / "public" / f"{key}.per_question.parquet"
    scores.per_question.to_parquet(table, index=False)
    with tempfile.TemporaryDirectory(prefix="rexrank-public-") as tmp:
        opened = open_submission(api, repo_id, num, Path(tmp))
        info, submission = _model_info(opened), opened.checked.submission_id
        record = {**result_record(info.name, split, scores, table.name), "institution": info.institution,
                  "url": info.url, "provenance": "generated", "checks": GENERATED,
                  "companions": {TABLE: file_sha256(table)}}
        data = (json.dumps(record, indent=2) + "\n").encode()
        prefix = f"{SUBMISSIONS}/{submission}/{VQA_FOLDER}"
        head = api.create_commit(repo_id, [CommitOperationAdd(f"{prefix}/{key}.json", data),
                                           CommitOperationAdd(f"{prefix}/{table.name}", str(table))],
                                 repo_type="dataset", revision=opened.pr.revision, parent_commit=opened.pr.head,
                                 commit_message=f"Inference: {SOURCE} {split} answered by the submitted model").oid
    ledger.record_results(api, repo_id, submission, owner=opened.ledger.owner(submission) or opened.pr.author,
                          name=info.name, institution=info.institution, files={key: data}, pr=num,
                          read=opened.pr.head, head=head, tree=ledger.folder_tree(api, repo_id, head, submission),
                          job="inference")
    return [record]


def private(repo_id: str, num: int, model, source: str, images: Path, interpreters, cache, work: Path,
            resamples: int, gpus: int, timeout: float, token: str | None, now: datetime | None = None) -> list[dict]:
    """The model on the private questions (`source`: a folder or a private dataset), its answers kept nowhere once
    scored; aggregates only published."""
    try:
        questions, _ = questions_of(source, token, work / "private-questions")
        out = work / "private" / f"{VQA_STEM}.{VQA_PRIVATE_SPLIT}.jsonl"
        run(model, questions, VQA_PRIVATE_SPLIT, images, out, interpreters, cache, gpus=gpus, timeout=timeout,
            keep_logs=False)
        return score_private(repo_id, num, questions, out, resamples, token, now)
    finally:  # the answers and the questions fetched for the run go, scored or not
        shutil.rmtree(work / "private", ignore_errors=True)
        shutil.rmtree(work / "private-questions", ignore_errors=True)


def salt(questions) -> bytes:
    """A key only the private answers make: the digests of the letters read are keyed by it."""
    pairs = sorted(zip(questions["question_id"].astype(str), questions["correct_answer"].astype(str)))
    return hashlib.sha256(json.dumps(pairs).encode()).digest()


def digests(per_question, key: bytes) -> dict[str, str]:
    return {q: hashlib.sha256(key + f"{q}\0{a or ''}".encode()).hexdigest()[:16]
            for q, a in zip(per_question["question_id"], per_question["answer"])}


def degenerate(per_question, earlier: list[dict], key: bytes) -> str | None:
    """Why a private answer set may not be scored (the module's rules); None when it may."""
    n = len(per_question)
    unread = int(per_question["answer"].isna().sum())
    if unread > UNREAD_SHARE * n:
        return f"{unread:,} of {n:,} answers give no option (at most {UNREAD_SHARE:.0%} may)"
    letters = Counter(a for a in per_question["answer"] if isinstance(a, str))
    if letters and (top := letters.most_common(1)[0][1]) > ONE_LETTER_SHARE * n:
        return f"{top:,} of {n:,} answers are the same letter (at most {ONE_LETTER_SHARE:.0%} may be)"
    return near_copy(digests(per_question, key), earlier, "answers")


def published(rows: list[dict]) -> list[dict]:
    """The private rows as published: values at the board's precision, no count of correct answers."""
    return [{k: round(v, BOARD_DECIMALS) if k in ("accuracy", "low", "high") else v for k, v in row.items()
             if k != "correct"} for row in rows]


def score_private(repo_id: str, num: int, questions, out: Path, resamples: int, token: str | None,
                  now: datetime | None = None) -> list[dict]:
    """Score the private answers in `out` under the module's rules; commit and record the aggregates."""
    from huggingface_hub import CommitOperationAdd, HfApi

    from rexrank.vqa.score import result_record

    api, now = HfApi(token=token), now or datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="rexrank-private-") as tmp:
        opened = open_submission(api, repo_id, num, Path(tmp))
    pr, submission = opened.pr, opened.checked.submission_id
    if why := unreviewed(opened.ledger.submissions.get(submission, {}).get("reviewed"), num, pr.head):
        raise SubmissionRejected(submission, [why])
    info = _model_info(opened)
    organisation = name_key(info.institution)
    if why := over_quota(opened.ledger.private, VQA_TASK, pr.author, organisation, now):
        raise SubmissionRejected(submission, [f"{SOURCE} {VQA_PRIVATE_SPLIT}: {why}"])
    scores = _scored(questions, out, resamples, f"the {VQA_TASK} answers its model generated")
    key = salt(questions)
    if why := degenerate(scores.per_question, [r for r in opened.ledger.private if r.get("task") == VQA_TASK], key):
        raise SubmissionRejected(submission, [f"{SOURCE} {VQA_PRIVATE_SPLIT}: {why}"])
    record = {**result_record(info.name, VQA_PRIVATE_SPLIT, scores, None), "institution": info.institution,
              "url": info.url, "provenance": "generated",
              "checks": {**GENERATED, "scored_by": "rexrank private job", "precision": f"{BOARD_DECIMALS} decimals"}}
    record["rows"] = published(record["rows"])
    data = (json.dumps(record, indent=2) + "\n").encode()
    name = f"{VQA_STEM}.{VQA_PRIVATE_SPLIT}"
    head = api.create_commit(repo_id, [CommitOperationAdd(f"{SUBMISSIONS}/{submission}/{VQA_FOLDER}/{name}.json",
                                                          data)],
                             commit_message=f"{SOURCE} {VQA_PRIVATE_SPLIT}: aggregate accuracy of {submission}",
                             repo_type="dataset", revision=pr.revision, parent_commit=pr.head).oid
    ledger.record_results(api, repo_id, submission, owner=opened.ledger.owner(submission) or pr.author,
                          name=info.name, institution=info.institution, files={name: data}, pr=num, read=pr.head,
                          head=head, tree=ledger.folder_tree(api, repo_id, head, submission), job="private")
    ledger.record_private(api, repo_id, {"submission": submission, "pr": num, "task": VQA_TASK, "author": pr.author,
                                         "organisation": organisation, "at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                         "questions": len(scores.per_question),
                                         "digests": digests(scores.per_question, key)})
    api.comment_discussion(repo_id, num, comment(record["rows"]), repo_type="dataset")
    return [record]


def comment(rows: list[dict]) -> str:
    lines = [f"**{SOURCE} (private questions)**: accuracy at {BOARD_DECIMALS} decimals; per-question results stay "
             "private.", "", "| category | accuracy | 95% CI | questions | failed extractions |",
             "|---|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {to_markdown(r['category'], 60)} | {r['accuracy']:.{BOARD_DECIMALS}f} | "
                     f"[{r['low']:.{BOARD_DECIMALS}f}, {r['high']:.{BOARD_DECIMALS}f}] | {r['questions']:,} | "
                     f"{r['failed_extractions']:,} |")
    return "\n".join(lines)
