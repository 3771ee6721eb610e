"""The gated job: score a pull request's predictions for the private ReXGradient test set and publish only the
aggregates (value, 95% CI, n, signature) into the pull request.

The references are read from a private Hub dataset with the token in the environment, held in memory, and never
written: no per-study table, no predictions echoed back, and no message carries their text. An error raised inside
scoring is reported by stage and type only, since its message could quote a reference.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rexrank import stats
from rexrank.backend.pull import checked_download, owner_of, read_pull_request
from rexrank.data import align, load_predictions, load_split
from rexrank.errors import InputError
from rexrank.results import ModelInfo, Result
from rexrank.scorecard import MetricSet, score
from rexrank.submission import PRIVATE_DATASETS, SUBMISSIONS

DATASET = PRIVATE_DATASETS[0]


class PrivateJobError(InputError):
    """The private job could not finish; the message names the stage and never the references' text."""


def _withheld(stage: str, err: Exception) -> PrivateJobError:
    return PrivateJobError(f"{stage} failed ({type(err).__name__}); details withheld: the references are private")


def score_pull_request(repo_id: str, pr_num: int, references: str, metrics: list[str], token: str | None = None,
                       resamples: int = stats.RESAMPLES) -> list[Result]:
    """Score the ReXGradient predictions of pull request `pr_num` on `repo_id` against the private dataset
    `references`; commit the aggregate results to the pull request and comment them. The results."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=token)
    pr = read_pull_request(api, repo_id, pr_num)
    with tempfile.TemporaryDirectory(prefix="rexrank-private-") as tmp:
        checked = checked_download(api, pr, Path(tmp), owner_of(api, repo_id, pr.submission_id))  # every rule first
        submission = checked.submission_id
        tasks = sorted(task for dataset, task in checked.predictions if dataset == DATASET)
        if not tasks:
            raise InputError(f"{repo_id} pull request #{pr_num}: no {DATASET} predictions "
                             f"({SUBMISSIONS}/{submission}/predictions/{DATASET}.<task>.jsonl)")
        card = checked.card
        model = ModelInfo(card.name, card.institution, card.url) if card else ModelInfo(submission)
        try:
            split = load_split(references, "test", DATASET)
        except Exception as err:  # noqa: BLE001 - whatever went wrong, its text stays here
            raise _withheld(f"reading the references {references}", err) from None
        metric_set = MetricSet(metrics, progress=False)
        results, operations = [], []
        for task in tasks:
            path = f"{SUBMISSIONS}/{submission}/predictions/{DATASET}.{task}.jsonl"
            aligned = align(split.references(task), load_predictions(Path(tmp) / path), path)  # names ids only
            try:
                scores = score(aligned.rows, metric_set, resamples, dataset=DATASET)
            except Exception as err:  # noqa: BLE001
                raise _withheld(f"scoring {task}", err) from None
            result = Result(model, DATASET, "test", task, scores.metrics, aligned.counts, scores.skipped,
                            checks={"scored_by": "rexrank private job", "references": references})
            results.append(result)
            operations.append(CommitOperationAdd(f"{SUBMISSIONS}/{submission}/results/{DATASET}.{task}.json",
                                                 result.to_json().encode()))
    api.create_commit(repo_id, operations, commit_message=f"{DATASET}: aggregate scores of {submission}",
                      repo_type="dataset", revision=pr.revision)
    api.comment_discussion(repo_id, pr_num, comment(results), repo_type="dataset")
    return results


def comment(results: list[Result]) -> str:
    """The pull request comment: one row per task and metric, aggregates only."""
    lines = [f"**{DATASET} (private test set)**: aggregate scores; per-study scores stay private.", "",
             "| task | metric | value | 95% CI | n |", "|---|---|---:|---|---:|"]
    for result in results:
        for name, m in result.metrics.items():
            shown = f"1/{name}" if m.statistic == "inverse_mean" else name
            value = "n/a" if m.value is None else f"{m.value:.4f}"
            ci = "" if m.low is None or m.high is None else f"[{m.low:.4f}, {m.high:.4f}]"
            lines.append(f"| {result.task} | {shown} | {value} | {ci} | {m.n} |")
    return "\n".join(lines)
