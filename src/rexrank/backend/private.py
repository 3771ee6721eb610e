"""The gated job: score a pull request's predictions for the private ReXGradient test set and publish only the
aggregates (value, 95% CI, n, signature, at the board's precision) into the pull request.

The references are read from a private Hub dataset with the token in the environment, held in memory, and never
written: no per-study table, no predictions echoed back, and no message carries their text. An error raised inside
scoring is reported by stage and type only, since its message could quote a reference; a malformed reference is
named by study and field, never by value.

The aggregates must not become a way to read the references study by study (a set of empty predictions but one
gives that study's BLEU-2 from the mean). So, before any scoring:

- a prediction set is refused when more than EMPTY_SHARE of its predictions are empty, when one text (compared
  case-folded, whitespace collapsed) is more than IDENTICAL_SHARE of them, or when it differs in fewer than
  CHANGED_SHARE of its studies from a set scored before for the same task, by anyone (the ledger keeps a digest per
  study of every scored set, never the text);
- each submitter (the pull request's author) may have PER_SUBMITTER scorings of a task and each organisation (the
  card's institution, compared as names are) PER_ORGANISATION, in any WINDOW_DAYS days, as the ledger records them;
- values, means and CI bounds are published rounded to the board's BOARD_DECIMALS places, so a one-study change of
  a 10,000-study mean (at most 1e-4) does not show.

A 10,000-study scoring takes hours on a CPU. Given a `work` folder, the job keeps each finished chunk of studies
there (per-study scores, never text) and a rerun after a kill continues from the last one; the folder is emptied
once the aggregates are published. It holds numbers made from the references, so it must be the maintainers' own.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import tempfile
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rexrank import stats
from rexrank.backend.names import name_key
from rexrank.backend.pull import open_submission
from rexrank.catalog import PRIVATE_DATASETS
from rexrank.data import align, load_predictions, load_split
from rexrank.data.predictions import Aligned
from rexrank.errors import InputError
from rexrank.reports import MalformedReference
from rexrank.results import BOARD_DECIMALS, MetricResult, ModelInfo, Result
from rexrank.rules import SubmissionRejected, ledger
from rexrank.rules.layout import SUBMISSIONS
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import spec
from rexrank.text import to_markdown

DATASET = PRIVATE_DATASETS[0]
EMPTY_SHARE = 0.10
IDENTICAL_SHARE = 0.50
CHANGED_SHARE = 0.05
PER_SUBMITTER = 3
PER_ORGANISATION = 6
WINDOW_DAYS = 30


class PrivateJobError(InputError):
    """The private job could not finish; the message names the stage and never the references' text."""


def _withheld(stage: str, err: Exception) -> PrivateJobError:
    return PrivateJobError(f"{stage} failed ({type(err).__name__}); details withheld: the references are private")


def digest(prediction: str) -> str:
    """A prediction as the copy check compares it: case-folded, whitespace collapsed, hashed (64 bits)."""
    return hashlib.sha256(" ".join(prediction.casefold().split()).encode()).hexdigest()[:16]


def degenerate(predictions: dict[str, str], earlier: list[dict]) -> str | None:
    """Why a prediction set may not be scored (see the module's rules); None when it may. `earlier`: the ledger's
    records of sets scored before for the same task."""
    n = len(predictions)
    if n == 0:
        return None
    empty = sum(not p.strip() for p in predictions.values())
    if empty > EMPTY_SHARE * n:
        return f"{empty:,} of {n:,} predictions are empty (at most {EMPTY_SHARE:.0%} may be)"
    digests = {study: digest(p) for study, p in predictions.items()}
    _, count = Counter(digests.values()).most_common(1)[0]
    if count > IDENTICAL_SHARE * n:
        return f"{count:,} of {n:,} predictions are the same text (at most {IDENTICAL_SHARE:.0%} may be)"
    return near_copy(digests, earlier, "studies")


def near_copy(digests: dict[str, str], earlier: list[dict], what: str) -> str | None:
    """Why a set (item -> digest) is too close to one scored before (the ledger's `earlier` records): it differs in
    fewer than CHANGED_SHARE of its `what` (studies, answers); None when it is not."""
    n = len(digests)
    for record in earlier:
        before = record.get("digests", {})
        changed = sum(before.get(item) != d for item, d in digests.items())
        if changed < max(1, math.ceil(CHANGED_SHARE * n)):
            return (f"differs from the set scored for pull request #{record.get('pr')} ({record.get('at')}) in "
                    f"{changed:,} of {n:,} {what} (at least {CHANGED_SHARE:.0%} must differ)")
    return None


def over_quota(records: list[dict], task: str, author: str, organisation: str, now: datetime) -> str | None:
    """Why `author` (of `organisation`, a name key) may not have `task` scored now; None when they may."""
    since = now - timedelta(days=WINDOW_DAYS)
    recent = [r for r in records if r.get("task") == task and _when(r) >= since]
    mine = sum(r.get("author") == author for r in recent)
    if mine >= PER_SUBMITTER:
        return f"{author} had {task} scored {mine} times in the last {WINDOW_DAYS} days (at most {PER_SUBMITTER})"
    theirs = sum(r.get("organisation") == organisation for r in recent)
    if organisation and theirs >= PER_ORGANISATION:
        return (f"this organisation had {task} scored {theirs} times in the last {WINDOW_DAYS} days (at most "
                f"{PER_ORGANISATION})")
    return None


def _when(record: dict) -> datetime:
    try:
        return datetime.strptime(str(record.get("at")), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)  # an unreadable time counts as recent


def rounded(metric: MetricResult) -> MetricResult:
    """A private aggregate at the board's precision."""
    def cut(x: float | None) -> float | None:
        return None if x is None else round(x, BOARD_DECIMALS)

    return replace(metric, value=cut(metric.value), mean=cut(metric.mean), low=cut(metric.low), high=cut(metric.high))


def _aligned(references: str, predictions: dict[str, tuple[Path, str]], earlier: list[dict]) -> tuple[dict, list]:
    """Each task's predictions (task -> (file, the name a message gives it)) aligned with the private references,
    and the tasks whose predictions are degenerate against this and earlier submissions. Errors name study ids
    only: the references' text never reaches a message."""
    try:
        split = load_split(references, "test", DATASET)
    except Exception as err:  # noqa: BLE001 - whatever went wrong, its text stays here
        raise _withheld(f"reading the references {references}", err) from None
    aligned, problems = {}, []
    for task, (source, named) in predictions.items():
        try:
            task_references = split.references(task)
        except MalformedReference:
            raise  # names the study and the field only
        except Exception as err:  # noqa: BLE001
            raise _withheld(f"reading the {task} references", err) from None
        aligned[task] = align(task_references, load_predictions(source), named)  # names study ids only
        rows = aligned[task].rows
        if why := degenerate(dict(zip(rows["study_id"], rows["prediction"])),
                             [r for r in earlier if r.get("task") == task]):
            problems.append(f"{DATASET} {task}: {why}")
    return aligned, problems


def _scored(task: str, aligned: Aligned, metric_set: MetricSet, resamples: int, checkpoint: Path | None):
    """One task's scores; a failure's text is withheld, and a judge that failed publishes nothing."""
    try:
        scores = score(aligned.rows, metric_set, resamples, dataset=DATASET, text=aligned.text, checkpoint=checkpoint)
    except Exception as err:  # noqa: BLE001
        raise _withheld(f"scoring {task}", err) from None
    if judged := sorted(m for m in scores.skipped if spec(m).judged):  # a judge that failed scores nothing
        raise PrivateJobError(f"scoring {task}: the judge could not score {', '.join(judged)} (its server "
                              "failed, or most answers could not be read); details withheld: the references "
                              "are private. Nothing was published: run the job again")
    return scores


def score_pull_request(repo_id: str, pr_num: int, references: str, metrics: list[str], token: str | None = None,
                       resamples: int = stats.RESAMPLES, now: datetime | None = None, work: Path | None = None,
                       chunk: int | None = None, generated: dict[str, Path] | None = None) -> list[Result]:
    """Score the ReXGradient predictions of pull request `pr_num` on `repo_id` against the private dataset
    `references`; commit the aggregate results to the pull request, record them in the ledger, comment them.
    `work`: where finished chunks (of `chunk` studies) are kept so that a killed run resumes. `generated`: task ->
    the predictions the inference job made by running the submission's model (rexrank.backend.inference), scored
    in place of any the pull request carries, under the same rules; their results are `generated`."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=token)
    now = now or datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="rexrank-private-") as tmp:
        try:
            opened = open_submission(api, repo_id, pr_num, Path(tmp))  # every rule first
        except SubmissionRejected as err:
            api.comment_discussion(repo_id, pr_num, refusal(err), repo_type="dataset")
            raise
        pr, checked = opened.pr, opened.checked
        submission = checked.submission_id
        if why := unreviewed(opened.ledger.submissions.get(submission, {}).get("reviewed"), pr_num, pr.head):
            raise _refused(api, repo_id, pr_num, submission, [why])
        tasks = sorted(generated) if generated else sorted(t for d, t in checked.predictions if d == DATASET)
        if not tasks:
            raise InputError(f"{repo_id} pull request #{pr_num}: no {DATASET} predictions "
                             f"({SUBMISSIONS}/{submission}/predictions/{DATASET}.<task>.jsonl)")
        known = opened.ledger.submissions.get(submission, {})
        card = checked.card
        name = card.name if card else (known.get("names") or [submission])[-1]
        model = ModelInfo(name, card.institution, card.url) if card else ModelInfo(name, known.get("institution", ""))
        organisation = name_key(model.institution)
        quota = [f"{DATASET} {task}: {why}" for task in tasks
                 if (why := over_quota(opened.ledger.private, task, pr.author, organisation, now))]
        if quota:
            raise _refused(api, repo_id, pr_num, submission, quota)
        carried = {task: f"{SUBMISSIONS}/{submission}/predictions/{DATASET}.{task}.jsonl" for task in tasks}
        predictions = {task: (generated[task], f"the {task} predictions its model generated") if generated else
                       (Path(tmp) / carried[task], carried[task]) for task in tasks}
        aligned, problems = _aligned(references, predictions, opened.ledger.private)
        if problems and generated:  # what the model generated on private images: no word of it reaches a comment
            raise SubmissionRejected(submission, problems)
        if problems:
            raise _refused(api, repo_id, pr_num, submission, problems)
        metric_set = MetricSet(metrics, progress=False, chunk=chunk)
        kept = work / f"{repo_id.replace('/', '--')}.pr-{pr_num}" if work else None
        results, operations, written, records = [], [], {}, []
        for task in tasks:
            rows = aligned[task].rows
            scores = _scored(task, aligned[task], metric_set, resamples, kept / f"{DATASET}.{task}" if kept else None)
            made = {"generated_by": "rexrank inference job"} if generated else {}
            result = Result(model, DATASET, "test", task, {k: rounded(m) for k, m in scores.metrics.items()},
                            aligned[task].counts, scores.skipped,
                            checks={"scored_by": "rexrank private job", "references": references,
                                    "precision": f"{BOARD_DECIMALS} decimals", **made},
                            provenance="generated" if generated else "scored")
            results.append(result)
            written[f"{DATASET}.{task}"] = data = result.to_json().encode()
            operations.append(CommitOperationAdd(f"{SUBMISSIONS}/{submission}/results/{DATASET}.{task}.json", data))
            records.append({"submission": submission, "pr": pr_num, "task": task, "author": pr.author,
                            "organisation": organisation, "at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                            "studies": len(rows),
                            "digests": {s: digest(p) for s, p in zip(rows["study_id"], rows["prediction"])}})
    head = api.create_commit(repo_id, operations, commit_message=f"{DATASET}: aggregate scores of {submission}",
                             repo_type="dataset", revision=pr.revision, parent_commit=pr.head).oid
    ledger.record_results(api, repo_id, submission, owner=opened.ledger.owner(submission) or pr.author, name=name,
                          institution=model.institution, files=written, pr=pr_num, read=pr.head, head=head,
                          tree=ledger.folder_tree(api, repo_id, head, submission), job="private")
    for record in records:
        ledger.record_private(api, repo_id, record)
    api.comment_discussion(repo_id, pr_num, comment(results), repo_type="dataset")
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
    return results


def unreviewed(reviewed: dict | None, num: int, head: str) -> str | None:
    """Why pull request `num` at `head` may not be scored privately: the review job must have left it at exactly this
    head (a push since, a forged result or a renamed card, would otherwise be recorded as reviewed)."""
    if not reviewed or reviewed.get("pr") != num:
        return f"pull request #{num} has not been reviewed: the review job reads it first"
    if reviewed.get("head") != head:
        return (f"pull request #{num} changed after its review (head {head[:12]}, reviewed "
                f"{str(reviewed.get('head'))[:12]}): the review job reads it again first")
    return None


def _refused(api, repo_id: str, num: int, submission: str, problems: list[str]) -> SubmissionRejected:
    err = SubmissionRejected(submission, problems)
    api.comment_discussion(repo_id, num, refusal(err), repo_type="dataset")
    return err


def refusal(err: SubmissionRejected) -> str:
    return f"**{DATASET} (private test set)**: refused, nothing was scored.\n\n" + "\n".join(
        f"- {to_markdown(problem, 300)}" for problem in err.problems)


def comment(results: list[Result]) -> str:
    """The pull request comment: one row per task and metric, aggregates only, at the board's precision."""
    lines = [f"**{DATASET} (private test set)**: aggregate scores at {BOARD_DECIMALS} decimals; per-study scores stay "
             "private.", "", "| task | metric | value | 95% CI | n |", "|---|---|---:|---|---:|"]
    for result in results:
        for name, m in result.metrics.items():
            shown = to_markdown(f"1/{name}" if m.statistic == "inverse_mean" else name, 60)
            value = "n/a" if m.value is None else f"{m.value:.{BOARD_DECIMALS}f}"
            ci = "" if m.low is None or m.high is None else f"[{m.low:.{BOARD_DECIMALS}f}, {m.high:.{BOARD_DECIMALS}f}]"
            lines.append(f"| {to_markdown(result.task, 60)} | {shown} | {value} | {ci} | {m.n} |")
    return "\n".join(lines)

