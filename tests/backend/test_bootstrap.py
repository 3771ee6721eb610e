"""A results repo started from the official ReXrank figures in one command, on the fake Hub, and what the board then
reads from it; a second run leaves the submissions alone."""

import pytest
from fixtures.submissions import score
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.board.sources import read_board
from rexrank.board.views import table
from rexrank.cli import main
from rexrank.official import SHIPPED, shipped_figures

pytestmark = pytest.mark.slow  # starts a results repo on the loopback Hub and scores into it

REPO = "rexrank/results"


def test_one_command_starts_a_results_repo_that_shows_the_official_field(fake_hub, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["bootstrap", "--hub", REPO]) == 0
    n = len(shipped_figures())  # the official rows rexrank ships (src/rexrank/resources/official)
    assert f"{REPO}: {n} official rows imported; the board has {n} rows, {n} ranked" in capsys.readouterr().out
    files = fake_hub.files(REPO, repo_type="dataset")
    shipped = {f"imported/{p.name}": p.read_bytes() for p in (SHIPPED / "imported").iterdir()}
    assert {k: v for k, v in files.items() if k.startswith("imported/")} == shipped
    board = read_board(REPO)
    assert len(board) == len(shipped_figures()) and board["rank"].notna().all()
    assert set(board["provenance"]) == {"imported"}
    shown = table(board, "iu-xray", "findings_impression")
    published = [name for name in shipped_figures() if name.startswith("iu-xray.findings_impression.")]
    assert len(shown) == len(published) and (shown["Note"] != "").sum() == 5  # five whose 1/RadCliQ-v1 is off

    monkeypatch.setenv("HF_TOKEN", "hf_researcher")  # a submission arrives and is merged; then a rerun
    results = score(tmp_path / "mine")
    assert main(["submit", "--results", str(results), "--name", "Mine", "--institution", "Lab", "--repo", REPO]) == 0
    [pr] = fake_hub.pull_requests(REPO, repo_type="dataset")
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    HfApi().merge_pull_request(REPO, pr.num, repo_type="dataset")
    submitted = {k: v for k, v in fake_hub.files(REPO, repo_type="dataset").items() if k.startswith("submissions/")}
    assert submitted
    assert backend(["bootstrap", "--hub", REPO]) == 0
    again = fake_hub.files(REPO, repo_type="dataset")
    assert {k: v for k, v in again.items() if k.startswith("submissions/")} == submitted
    assert {k: v for k, v in again.items() if k.startswith("imported/")} == shipped
    board = read_board(REPO)
    # the submission's two rows, unranked until reviewed
    assert len(board) == len(shipped_figures()) + 2 and board["rank"].isna().sum() == 2
