"""The review job: re-score a submission pull request's public-split predictions and never trust its numbers.

For each result the pull request carries (and each public predictions file without one), the predictions are scored
again against the maintainers' copy of that test set with the same metrics (judged ones only when a judge is
configured); the comment shows submitted and re-scored values side by side, flagging a submitted value outside the
re-scored 95% CI; the re-scored result and per-study table replace the submitted ones in the pull request, and the
ledger on main records the sha256 of each result the job wrote, so what is ranked is what rexrank computed. A result
for a dataset the job has no copy of stays as submitted, is said to be not re-scored, and is never ranked.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rexrank import stats
from rexrank.backend.pull import open_submission
from rexrank.catalog import PUBLIC_DATASETS
from rexrank.data import align, load_predictions, load_split
from rexrank.data.identity import identify
from rexrank.data.known import is_demo
from rexrank.files import file_sha256
from rexrank.llm.radiology import not_radiology
from rexrank.official import SPLITS
from rexrank.results import ModelInfo, Result
from rexrank.rules import SubmissionRejected, ledger
from rexrank.rules.copies import copy_problem
from rexrank.rules.layout import SUBMISSIONS
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import AVAILABLE, spec
from rexrank.text import to_markdown


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
            return "not re-scored: never ranked"
        if self.submitted is None:
            return "missing in the submission"
        if abs(self.submitted - self.rescored) <= 1e-9:
            return "ok"
        inside = self.low is not None and self.high is not None and self.low <= self.submitted <= self.high
        return "differs within the CI" if inside else "MISMATCH beyond the CI"


def review(repo_id: str, num: int, datasets: dict[str, str], token: str | None = None,
           resamples: int = stats.RESAMPLES) -> list[Check]:
    """Review pull request `num`: `datasets` maps a dataset name to the maintainers' copy (a folder, file or Hub
    id). Commits the re-scored results to the pull request, records them in the ledger, comments the table."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=token)
    checks: list[Check] = []
    operations, written = [], {}
    with tempfile.TemporaryDirectory(prefix="rexrank-review-") as tmp:
        root = Path(tmp)
        try:
            opened = open_submission(api, repo_id, num, root)
        except SubmissionRejected as err:  # tell the submitter why; the problems are escaped for markdown
            api.comment_discussion(repo_id, num, refusal(err), repo_type="dataset")
            raise
        pr, checked = opened.pr, opened.checked
        folder = root / SUBMISSIONS / checked.submission_id
        prefix = f"{SUBMISSIONS}/{checked.submission_id}"
        card, known = checked.card, opened.ledger.submissions.get(checked.submission_id, {})
        name = card.name if card else (known.get("names") or [checked.submission_id])[-1]
        model = ModelInfo(name, card.institution, card.url) if card else ModelInfo(name, known.get("institution", ""))
        keys = sorted({*checked.results, *(k for k in checked.predictions if k[0] in PUBLIC_DATASETS)})
        splits = {d: load_split(datasets[d], SPLITS[d], d) for d in sorted({d for d, _ in keys if d in datasets})}
        aligned_sets = {(d, t): align(splits[d].references(t), load_predictions(folder / "predictions" /
                                                                                 f"{d}.{t}.jsonl"))
                        for d, t in keys if d in splits}
        copied = [f"{d} {t}: {why}" for (d, t), a in aligned_sets.items() if not is_demo(splits[d].source)
                  and (why := copy_problem(a.rows["study_id"].tolist(), a.rows["prediction"].tolist(),
                                           a.rows["reference"].tolist()))]
        if copied:  # the public references sent back are no model's predictions: nothing is scored
            err = SubmissionRejected(checked.submission_id, copied)
            api.comment_discussion(repo_id, num, refusal(err), repo_type="dataset")
            raise err
        addressing = {key: found for key, a in aligned_sets.items()
                      if (found := addressed_studies(a.rows["study_id"].tolist(), a.rows["prediction"].tolist(),
                                                     a.rows["reference"].tolist()))}
        for dataset, task in keys:
            submitted = checked.results.get((dataset, task))
            if submitted is not None and submitted.provenance == "generated":
                continue  # the inference job's: the rules let it in only as the bytes the ledger says that job wrote
            names = [m for m in (submitted.metrics if submitted else AVAILABLE) if not spec(m).judged]
            if dataset not in datasets:
                checks += [Check(dataset, task, m, v.value, None, None, None)
                           for m, v in (submitted.metrics.items() if submitted else [])]
                continue
            split = splits[dataset]
            predictions_path = folder / "predictions" / f"{dataset}.{task}.jsonl"
            aligned = aligned_sets[(dataset, task)]
            card_scores = score(aligned.rows, MetricSet(names, progress=False), resamples, dataset=identify(split),
                                text=aligned.text)
            for metric in names:
                ours = card_scores.metrics.get(metric)
                theirs = submitted.metrics.get(metric) if submitted else None
                checks.append(Check(dataset, task, metric, theirs and theirs.value, ours and ours.value,
                                    ours and ours.low, ours and ours.high))
            table = root / f"{dataset}.{task}.parquet"
            card_scores.write_per_study(table, dataset, split.split, task)
            rescored = Result(model, dataset, split.split, task, card_scores.metrics,
                              aligned.counts, card_scores.skipped, checks={"rescored_by": "rexrank review job"},
                              companions={"per_study.parquet": file_sha256(table),
                                          "predictions.jsonl": file_sha256(predictions_path)})
            written[f"{dataset}.{task}"] = data = rescored.to_json().encode()
            operations += [CommitOperationAdd(f"{prefix}/results/{dataset}.{task}.json", data),
                           CommitOperationAdd(f"{prefix}/per_study/{dataset}.{task}.parquet", str(table))]
        head = pr.head
        if operations:  # on the head that was checked: a push since then fails this commit instead of mixing
            head = api.create_commit(repo_id, operations, repo_type="dataset", revision=pr.revision,
                                     parent_commit=pr.head, commit_message="Review: results re-scored by rexrank"
                                     ).oid
    ledger.record_results(api, repo_id, checked.submission_id, owner=opened.ledger.owner(checked.submission_id)
                          or pr.author, name=name, institution=model.institution, files=written, pr=num, read=pr.head,
                          head=head, tree=ledger.folder_tree(api, repo_id, head, checked.submission_id), job="review")
    api.comment_discussion(repo_id, num, comment(checks, checked.radrbench, addressing), repo_type="dataset")
    return checks


def addressed_studies(studies: list[str], predictions: list[str], references: list[str]) -> list[tuple[str, str]]:
    """(study, why) for each prediction with a sentence that is not radiology, which no judge is sent
    (rexrank.llm.radiology)."""
    return [(study, why) for study, text, reference in zip(studies, predictions, references)
            if (why := not_radiology(text, reference))]


def refusal(err: SubmissionRejected) -> str:
    return "**rexrank review**: refused, nothing was scored.\n\n" + "\n".join(
        f"- {to_markdown(problem, 300)}" for problem in err.problems)


def comment(checks: list[Check], radrbench: dict | None = None,
            addressing: dict[tuple[str, str], list[tuple[str, str]]] | None = None) -> str:
    """The review's table. Every cell is escaped for markdown: dataset, task and metric names are known names by
    now, but a comment the maintainer account posts never renders what a submitter wrote as markup."""
    def shown(x: float | None) -> str:
        return "" if x is None else f"{x:.4f}"

    flagged = sum(c.verdict.startswith("MISMATCH") for c in checks)
    skipped = sum(c.rescored is None for c in checks)
    lines = [f"**rexrank review**: {len(checks) - skipped} numbers re-scored from the submitted predictions; "
             f"{flagged} outside the re-scored 95% CI. The re-scored results replace the submitted ones."
             + (f" {skipped} numbers could not be re-scored here: they are never ranked." if skipped else ""), "",
             "| dataset | task | metric | submitted | re-scored | 95% CI | verdict |",
             "|---|---|---|---:|---:|---|---|"]
    for c in checks:
        ci = "" if c.low is None or c.high is None else f"[{c.low:.4f}, {c.high:.4f}]"
        cells = [to_markdown(x, 60) for x in (c.dataset, c.task, c.metric)]
        lines.append(f"| {' | '.join(cells)} | {shown(c.submitted)} | {shown(c.rescored)} | {ci} | {c.verdict} |")
    for (dataset, task), found in sorted((addressing or {}).items()):
        study, why = found[0]
        lines += ["", f"{to_markdown(dataset, 40)} {to_markdown(task, 40)}: {len(found):,} predictions have a "
                  f"sentence that is not radiology (first: study {to_markdown(study, 60)}: {to_markdown(why, 160)}); "
                  "every LLM-judged "
                  "metric counts each at its worst value and never sends it to the judge (docs/security.md, rule 19)."]
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
