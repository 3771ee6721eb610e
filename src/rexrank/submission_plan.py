"""What the board will do with each piece of a submission, in words: `rexrank submit --dry-run` prints it before
anything is sent (the studies a result covers against the official split, whether it can be ranked, the provenance
its row will carry)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import PRIVATE_DATASETS, TEST_SETS
from rexrank.data.known import recognise
from rexrank.data.split import jsonl_records
from rexrank.results import Result, companions, result_name
from rexrank.scorers import RANK_BY, spec


@dataclass(frozen=True)
class Piece:
    """One file of a submission: where it goes in the submission folder, and where it comes from."""

    path: str  # relative to submissions/<id>/
    source: Path


def board_plan(pieces: list[Piece]) -> list[str]:
    """What the board will do with each piece of a submission, a few lines each: for a result, the studies it covers
    against the official split, whether it can be ranked (the review re-scores the metrics the result carries, so a
    result without 1/RadCliQ-v1 or its components stays unranked) and the provenance its row will carry; for private
    predictions, a code submission and RadRBench-CXR accuracy, who makes their numbers."""
    from rexrank.inference.contract import MODEL_FOLDER, check_model
    from rexrank.rules import RADRBENCH_FILE

    radcliq = RANK_BY
    needs = spec(radcliq).needs
    lines = []
    for piece in pieces:
        kind, _, name = piece.path.partition("/")
        if kind == "results":
            dataset, task, _ = result_name(name)
            result, test_set = Result.read(piece.source), TEST_SETS[dataset]
            predictions = companions(piece.source)[1]
            match = recognise(str(record.get("study_id")) for _, record in jsonl_records(predictions))
            c = result.counts
            against = match.describe() if match is not None else "of no official split (a synthetic stand-in?)"
            value = result.metrics[radcliq].value if radcliq in result.metrics else None
            if match is None:
                ranked = (f"no: the board's review re-scores on the official {test_set.title} {test_set.split} split "
                          f"({test_set.studies:,} studies), and these ids are not its")
            elif radcliq in result.metrics:
                yours = "mean <= 0, no inverse" if value is None else f"yours {value:.3f}"
                ranked = (f"among the self-reported only, by 1/RadCliQ-v1 ({yours}; the review's number stands); the "
                          "board ranks what the maintainers made: add model/ (--model) for a ranked row")
            else:
                missing = [m for m in needs if m not in result.metrics]
                weights = any("models download" in result.skipped.get(m, "") for m in (*missing, radcliq))
                ranked = ("no: no 1/RadCliQ-v1, and the review re-scores only the metrics a result carries ("
                          + (f"missing {', '.join(missing)}" if missing else "radcliq_v1 missing")
                          + ("; their weights were not here: `rexrank models download --all`, then score again"
                             if weights else "; score with them") + ")")
            lines += [f"{dataset} {task}:",
                      f"  studies: {c.get('scored', 0):,} scored of the split's {c.get('split_studies', 0):,} "
                      f"({c.get('dropped_by_task', 0):,} left out by the task); its study ids are {against}",
                      f"  ranked: {ranked}",
                      f"  provenance: scored (the maintainers' review re-scores its predictions with "
                      f"{', '.join(result.metrics) or 'no metric'}; the row is self-reported: shown with their CIs, "
                      "marked †)"]
        elif kind == "predictions" and (result_name(name.replace(".jsonl", ".json")) or ("",))[0] in PRIVATE_DATASETS:
            dataset, task, _ = result_name(name.replace(".jsonl", ".json"))
            studies = sum(1 for _ in jsonl_records(piece.source))
            private_set = TEST_SETS[dataset]
            lines += [f"{dataset} {task}:",
                      f"  studies: {studies:,} predictions for the private {private_set.title} {private_set.split} "
                      f"split ({private_set.studies:,} studies)",
                      "  ranked: among the self-reported only, when the gated job's metrics include 1/RadCliQ-v1; add "
                      "model/ (--model) for a ranked row",
                      "  provenance: scored (the maintainers' gated job scores them and publishes aggregates only, "
                      "no per-study scores; the row is self-reported)"]
        elif piece.path == f"{MODEL_FOLDER}/model.yaml":
            model = check_model(piece.source.parent)
            lines += [f"{MODEL_FOLDER}/: a code submission ({' and '.join(model.serves)}: {', '.join(model.runs)})",
                      "  provenance: generated (the maintainers' inference job runs it in the sandbox: a smoke test "
                      "on a public split, then the private images (ReXGradient's; ReXVQA's questions on them for "
                      "VQA); its rows show generated by maintainers)"]
        elif piece.path == RADRBENCH_FILE:
            lines += [f"{RADRBENCH_FILE}:", "  RadRBench-CXR accuracy, shown on its tab as rexrank score-radrbench "
                      "wrote it (checked by the rules, not re-scored)"]
    return lines
