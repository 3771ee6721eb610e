"""A ReXVQA result in a submission's folder (vqa/rexvqa.vqa.<split>.json and a public split's per-question table):
accepted only as the bytes the inference job wrote (the ledger's sha256), its rows' arithmetic and a public split's
accuracy recomputed from its table; a private split's never with its table or its counts of correct answers."""

import hashlib
import io
import json
from pathlib import Path

import pytest
from fixtures.submissions import BASE, SID, card_json, write

from rexrank.backend.vqa import published
from rexrank.cli import main
from rexrank.rules import SubmissionRejected, check_submission
from rexrank.rules.layout import result_file
from rexrank.rules.ledger import Ledger
from rexrank.rules.vqa import TABLE
from rexrank.vqa.dataset import load_questions
from rexrank.vqa.score import read_predictions, result_record, score

DEMO = Path(__file__).resolve().parents[2] / "src" / "rexrank" / "demo" / "rexvqa"
PUBLIC, PRIVATE = f"{BASE}/vqa/rexvqa.vqa.test.json", f"{BASE}/vqa/rexvqa.vqa.private.json"
TABLE_PATH = f"{BASE}/vqa/rexvqa.vqa.test.per_question.parquet"


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    out = tmp_path_factory.mktemp("vqa") / "rexvqa"
    assert main(["build-dataset", "rexvqa", "--source", str(DEMO), "--out", str(out)]) == 0
    questions, _ = load_questions(out)
    return score(questions, read_predictions(DEMO / "predictions" / "demo-prose.json"), 200)


def files(scores, table_bytes=None, private_rows=None, **more) -> dict[str, bytes]:
    buffer = io.BytesIO()
    scores.per_question.to_parquet(buffer, index=False)
    table = table_bytes if table_bytes is not None else buffer.getvalue()
    public = {**result_record("Lab Model", "test", scores, "rexvqa.vqa.test.per_question.parquet"),
              "provenance": "generated", "companions": {TABLE: hashlib.sha256(buffer.getvalue()).hexdigest()}, **more}
    private = {**result_record("Lab Model", "private", scores, None), "provenance": "generated"}
    private["rows"] = private_rows if private_rows is not None else published(private["rows"])
    return {f"{BASE}/submission.json": card_json(), PUBLIC: json.dumps(public).encode(), TABLE_PATH: table,
            PRIVATE: json.dumps(private).encode()}


def maintained(written: dict[str, bytes]) -> dict[str, str]:
    return {p: hashlib.sha256(d).hexdigest() for p, d in written.items() if p.endswith(".json") and "/vqa/" in p}


def test_the_jobs_files_are_accepted_and_read(scores, tmp_path):
    written = files(scores)
    checked = check_submission(write(tmp_path, written), SID, maintained=maintained(written))
    assert set(checked.vqa) == {"test", "private"}
    assert checked.vqa["test"]["rows"][-1]["accuracy"] == scores.rows.iloc[-1]["accuracy"]
    assert "correct" not in checked.vqa["private"]["rows"][-1]


def test_a_vqa_result_a_pull_request_carries_is_refused(scores, tmp_path):
    written = files(scores)
    with pytest.raises(SubmissionRejected, match="a ReXVQA result is written by the maintainers' inference job"):
        check_submission(write(tmp_path, written), SID)


def test_a_changed_table_is_refused_and_a_wrong_count_named(scores, tmp_path):
    tampered = scores.per_question.copy()
    tampered["correct"] = True
    buffer = io.BytesIO()
    tampered.to_parquet(buffer, index=False)
    written = files(scores, table_bytes=buffer.getvalue())
    with pytest.raises(SubmissionRejected, match="not the per-question table its result names"):
        check_submission(write(tmp_path / "a", written), SID, maintained=maintained(written))
    # the job's own bytes, but rows that do not add up to its table (the result's sha names the tampered table)
    written = files(scores, table_bytes=buffer.getvalue(),
                    companions={TABLE: hashlib.sha256(buffer.getvalue()).hexdigest()})
    with pytest.raises(SubmissionRejected, match="overall: the table counts 20 questions, 20 correct"):
        check_submission(write(tmp_path / "b", written), SID, maintained=maintained(written))


def test_a_private_split_never_publishes_its_table_or_its_counts(scores, tmp_path):
    written = files(scores) | {f"{BASE}/vqa/rexvqa.vqa.private.per_question.parquet": b"PAR1"}
    with pytest.raises(SubmissionRejected, match="its per-question results are never published"):
        check_submission(write(tmp_path / "a", written), SID, maintained=maintained(written))
    exact = result_record("Lab Model", "private", scores, None)["rows"]  # with correct, unrounded
    written = files(scores, private_rows=exact)
    with pytest.raises(SubmissionRejected, match="a private split publishes its accuracy rounded, not its count"):
        check_submission(write(tmp_path / "b", written), SID, maintained=maintained(written))


def test_the_ledger_names_a_vqa_result_in_vqa_and_a_report_result_in_results():
    assert result_file(SID, "rexvqa.vqa.test") == PUBLIC
    assert result_file(SID, "mimic-cxr.findings") == f"{BASE}/results/mimic-cxr.findings.json"
    ledger = Ledger(submissions={SID: {"results": {"rexvqa.vqa.private": {"sha256": "ab", "job": "private"}}}})
    assert ledger.private_results(SID) == {PRIVATE: "ab"}
