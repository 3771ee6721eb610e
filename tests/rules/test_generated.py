"""A generated result (predictions the maintainers' inference job made by running the submitted model) is never a
submitter's: the rules refuse a pull request's file that claims it unless the ledger says a maintainers' job wrote
exactly those bytes, `rexrank submit` refuses to send one, and the aggregate never ranks one the ledger does not vouch
for."""

import hashlib
import json

import pandas as pd
from fixtures.board import results_repo, reviewed
from fixtures.outputs import written
from fixtures.submissions import BASE, SID, clean_files, refused, result_json, score, touched, write

from rexrank.board.aggregate import aggregate
from rexrank.cli import main
from rexrank.rules import check_submission
from rexrank.rules.contents import GENERATED_RESULT

RESULT = f"{BASE}/results/mimic-cxr.findings.json"


def claiming_generated(data: bytes = result_json()) -> bytes:
    record = json.loads(data)
    record["provenance"] = "generated"
    record["checks"] = {"generated_by": "rexrank inference job"}  # what the job writes; a submitter can too
    return json.dumps(record).encode()


def test_a_submitters_file_claiming_generated_is_refused_in_every_form(tmp_path):
    files = clean_files() | {RESULT: claiming_generated()}
    folder = refused(write(tmp_path / "folder", files), SID)
    assert f"{RESULT}: {GENERATED_RESULT}" in folder.problems
    listed = refused(touched(files), SID, root=write(tmp_path / "root", files))
    assert f"{RESULT}: {GENERATED_RESULT}" in listed.problems
    assert listed.problems[1:] == ("per_study/mimic-cxr.findings.parquet: without results/mimic-cxr.findings.json "
                                   "and its predictions",)  # what follows from the refused result, nothing else


def test_a_generated_result_passes_only_as_the_bytes_a_maintainers_job_wrote(tmp_path):
    written = claiming_generated()
    files = clean_files() | {RESULT: written}
    root = write(tmp_path / "root", files)
    by_the_job = {RESULT: hashlib.sha256(written).hexdigest()}
    checked = check_submission(touched(files), SID, root=root, maintained=by_the_job)
    assert checked.results[("mimic-cxr", "findings")].provenance == "generated"

    edited = claiming_generated(result_json(name="Model, improved"))  # the job's file, then changed by its submitter
    root = write(tmp_path / "edited", clean_files() | {RESULT: edited})
    err = refused(touched(clean_files() | {RESULT: edited}), SID, root=root, maintained=by_the_job)
    assert err.problems[0] == f"{RESULT}: {GENERATED_RESULT}"
    other = {f"{BASE}/results/iu-xray.findings.json": by_the_job[RESULT]}  # the job wrote it elsewhere, not here
    err = refused(touched(files), SID, root=write(tmp_path / "elsewhere", files), maintained=other)
    assert err.problems[0] == f"{RESULT}: {GENERATED_RESULT}"


def test_a_scored_result_still_passes_and_an_imported_one_is_still_refused(tmp_path):
    check_submission(write(tmp_path / "scored", clean_files()), SID)
    imported = json.loads(result_json())
    imported["provenance"] = "imported"
    err = refused(write(tmp_path / "imported", clean_files() | {RESULT: json.dumps(imported).encode()}), SID)
    assert any("provenance 'imported': a submission carries scored results only" in p for p in err.problems)


def test_rexrank_submit_refuses_to_send_a_generated_result(tmp_path, capsys):
    out = score(tmp_path / "out")
    path = written(out, "mimic-cxr.findings.json")
    path.write_bytes(claiming_generated(path.read_bytes()))
    assert main(["submit", "--results", str(out), "--name", "X", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{path.name}: a generated result is written by the maintainers' inference job" in err


def test_a_generated_claim_the_ledger_does_not_vouch_for_is_never_ranked(tmp_path):
    """Merged anyway (the Hub's merge button, a push after the review): the aggregate lists it unranked; the same
    claim in the bytes a maintainers' job recorded is ranked with the scored rows."""
    repo = results_repo(tmp_path)
    path = repo / "submissions" / "lab-a" / "results" / "mimic-cxr.findings.json"
    path.write_bytes(claiming_generated(path.read_bytes()))  # lab-a's reviewed file, now claiming generated
    board = aggregate(repo).set_index("model")
    assert board.loc["A", "provenance"] == "generated" and pd.isna(board.loc["A", "rank"])
    assert board.loc["A", "unranked"].startswith("changed since the review job wrote it")

    reviewed(repo, "lab-a", {"mimic-cxr.findings": path.read_bytes()})  # now the ledger holds these bytes
    board = aggregate(repo).set_index("model")
    assert board.loc["A", "provenance"] == "generated" and board.loc["A", "rank"] == 3  # B 1.1, Official D 1.0
    assert pd.isna(board.loc["A", "unranked"])
