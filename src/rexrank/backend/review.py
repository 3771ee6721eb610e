"""The review job: re-score a submission pull request's public-split predictions and never trust its numbers.

For each result the pull request carries, the predictions are scored again against the maintainers' copy of that
test set with the same metrics (judged ones only when a judge is configured); the comment shows submitted and
re-scored values side by side, flagging a submitted value outside the re-scored 95% CI; the re-scored result and
per-study table replace the submitted ones in the pull request, so what is merged is what rexrank computed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rexrank import stats
from rexrank.backend.pull import checked_download, owner_of, read_pull_request
from rexrank.backend.security import SubmissionRejected, to_markdown
from rexrank.data import align, load_predictions, load_split
from rexrank.official import SPLITS
from rexrank.results import ModelInfo, Result
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import JUDGED
from rexrank.submission import SUBMISSIONS


@dataclass(frozen=True)
class Check:
    dataset: str
    task: str
    metric: str
    submitted: float | None
    rescored: float | None
    low: float | None
    high: float | None

    @property
    def verdict(self) -> str:
        if self.rescored is None:
            return "not re-scored"
        if self.submitted is None:
            return "missing in the submission"
        if abs(self.submitted - self.rescored) <= 1e-9:
            return "ok"
        inside = self.low is not None and self.high is not None and self.low <= self.submitted <= self.high
        return "differs within the CI" if inside else "MISMATCH beyond the CI"


def review(repo_id: str, num: int, datasets: dict[str, str], token: str | None = None,
           resamples: int = stats.RESAMPLES) -> list[Check]:
    """Review pull request `num`: `datasets` maps a dataset name to the maintainers' copy (a folder, file or Hub
    id). Comments the table on the pull request and commits the re-scored results to it."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=token)
    checks: list[Check] = []
    operations = []
    with tempfile.TemporaryDirectory(prefix="rexrank-review-") as tmp:
        root = Path(tmp)
        try:
            pr = read_pull_request(api, repo_id, num)
            checked = checked_download(api, pr, root, owner_of(api, repo_id, pr.submission_id))
        except SubmissionRejected as err:  # tell the submitter why; the problems are escaped for markdown
            api.comment_discussion(repo_id, num, "**rexrank review**: refused, nothing was scored.\n\n" + "\n".join(
                f"- {to_markdown(problem, 300)}" for problem in err.problems), repo_type="dataset")
            raise
        folder = root / SUBMISSIONS / checked.submission_id
        card = checked.card
        model = ModelInfo(card.name, card.institution, card.url) if card else None
        for (dataset, task), submitted in sorted(checked.results.items()):
            if dataset not in datasets:
                checks += [Check(dataset, task, m, v.value, None, None, None) for m, v in submitted.metrics.items()]
                continue
            split = load_split(datasets[dataset], SPLITS[dataset], dataset)
            predictions = load_predictions(folder / "predictions" / f"{dataset}.{task}.jsonl")
            aligned = align(split.references(task), predictions)
            names = [m for m in submitted.metrics if m not in JUDGED]
            card_scores = score(aligned.rows, MetricSet(names, progress=False), resamples, dataset=dataset)
            for name, value in submitted.metrics.items():
                ours = card_scores.metrics.get(name)
                checks.append(Check(dataset, task, name, value.value, ours and ours.value, ours and ours.low,
                                    ours and ours.high))
            rescored = Result(model or submitted.model, dataset, split.split, task, card_scores.metrics,
                              aligned.counts, card_scores.skipped, checks={"rescored_by": "rexrank review job"})
            table = root / f"{dataset}.{task}.parquet"
            card_scores.write_per_study(table)
            prefix = f"{SUBMISSIONS}/{checked.submission_id}"
            operations += [CommitOperationAdd(f"{prefix}/results/{dataset}.{task}.json", rescored.to_json().encode()),
                           CommitOperationAdd(f"{prefix}/per_study/{dataset}.{task}.parquet", str(table))]
        if operations:
            api.create_commit(repo_id, operations, repo_type="dataset", revision=pr.revision,
                              commit_message="Review: results re-scored by rexrank")
    api.comment_discussion(repo_id, num, comment(checks, checked.radrbench), repo_type="dataset")
    return checks


def comment(checks: list[Check], radrbench: dict | None = None) -> str:
    def shown(x: float | None) -> str:
        return "" if x is None else f"{x:.4f}"

    flagged = sum(c.verdict.startswith("MISMATCH") for c in checks)
    lines = [f"**rexrank review**: {len(checks)} numbers re-scored from the submitted predictions; "
             f"{flagged} outside the re-scored 95% CI. The re-scored results replace the submitted ones.", "",
             "| dataset | task | metric | submitted | re-scored | 95% CI | verdict |",
             "|---|---|---|---:|---:|---|---|"]
    for c in checks:
        ci = "" if c.low is None or c.high is None else f"[{c.low:.4f}, {c.high:.4f}]"
        lines.append(f"| {c.dataset} | {c.task} | {c.metric} | {shown(c.submitted)} | {shown(c.rescored)} | {ci} | "
                     f"{c.verdict} |")
    if radrbench is not None:  # checked by the security rules (shape, numbers consistent); its outputs stay private
        total = next(r for r in radrbench["rows"] if r["source"] == "all" and r["task"] == "all")
        lines += ["", f"RadRBench-CXR: accuracy {total['accuracy']:.4f} [{total['low']:.4f}, {total['high']:.4f}] over "
                  f"{total['items']} items, as submitted (checked for shape and consistency, not re-scored: a "
                  "submission carries no model outputs for RadRBench-CXR)."]
    return "\n".join(lines)


def open_pull_requests(repo_id: str, token: str | None = None) -> list[int]:
    """The numbers of the results repo's open pull requests, oldest first (a sweep reviews each)."""
    from huggingface_hub import HfApi

    found = HfApi(token=token).get_repo_discussions(repo_id, repo_type="dataset", discussion_type="pull_request",
                                                    discussion_status="open")
    return sorted(d.num for d in found)
