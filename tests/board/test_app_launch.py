"""`rexrank leaderboard` launches the app with its options, fails at once on a results repo that is not there, shows
the official tables when nothing is named, and the app leaves no folder behind when it ends."""

import os

import pytest
from fixtures.board import results_repo

from rexrank.board import views


def test_rexrank_leaderboard_launches_the_app_with_its_options(monkeypatch, tmp_path):
    import rexrank.board.app as app_module
    from rexrank.cli import main

    calls = []
    monkeypatch.setattr(app_module, "main", lambda results, port, demo: calls.append((results, port, demo)))
    repo = results_repo(tmp_path / "results")
    assert main(["leaderboard", "--results", str(repo), "--port", "7999"]) == 0
    assert main(["leaderboard"]) == 0
    assert main(["leaderboard", "--demo"]) == 0
    # None: REXRANK_RESULTS, else the official tables
    assert calls == [(str(repo), 7999, False), (None, None, False), (None, None, True)]


def test_a_results_repo_that_is_not_there_fails_at_once(monkeypatch, tmp_path, capsys):
    import rexrank.board.app as app_module
    from rexrank.cli import main

    monkeypatch.setattr(app_module, "main", lambda *a, **k: pytest.fail("launched on a board that is not there"))
    assert main(["leaderboard", "--results", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rexrank: error: --results {tmp_path / 'nowhere'}: cannot read a board there") and \
        "Traceback" not in err
    assert main(["leaderboard", "--results", "someone/no-such-repo"]) == 2  # offline, not in the cache
    assert "cannot read a board there" in capsys.readouterr().err


def test_with_nothing_named_the_board_is_the_official_tables_as_published(monkeypatch):
    from rexrank.board.sources import OFFICIAL, BoardSource, read_board, read_radrbench

    monkeypatch.delenv("REXRANK_RESULTS", raising=False)
    board = read_board(None)
    from rexrank.official import shipped_figures

    assert len(board) == len(shipped_figures()) and set(board["provenance"]) == {"imported"}
    assert board["rank"].notna().all()
    assert BoardSource().name.startswith("the official ReXrank tables as published") and read_radrbench(OFFICIAL).empty
    shown = views.table(board, "mimic-cxr", "findings_impression")
    assert set(shown["Source"]) == {"as published, no CI"} and "±" not in "".join(shown["1/RadCliQ-v1"])
    radfm = shown[shown["Model"].str.contains("RadFM")].iloc[0]
    assert radfm["Note"].startswith("published 1/RadCliQ-v1 0.625 is outside [0.6226, 0.6241]")
    published = [name for name in shipped_figures() if name.startswith("mimic-cxr.findings_impression.")]
    assert shown["Rank"].tolist()[:1] == ["1"] and len(shown) == len(published)  # a row per imported file


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_app_leaves_no_folder_behind_when_it_ends(tmp_path):
    """The demo's results repo and the CSV exports live in folders of their own while the app runs; a Space or a
    `rexrank leaderboard` that ends removes them (ten runs' leftovers once filled a disk)."""
    import subprocess
    import sys

    code = ("import glob, sys; from rexrank.board.app import build; from rexrank.board.sources import DEMO; "
            "build(DEMO); sys.stdout.write(repr(sorted(glob.glob(sys.argv[1] + '/rexrank-*'))))")
    made = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                          env={**os.environ, "TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert "rexrank-board-csv-" in made.stdout and "rexrank-demo-board-" in made.stdout  # there while it ran
    assert not list(tmp_path.glob("rexrank-*"))  # and gone once it ended


def test_the_events_that_write_one_component_queue_as_one_in_arrival_order():
    """A visitor who picks a Dataset and then an Access filter at once sends two redraws; side by side, the older
    (unfiltered) one could finish last and stay shown under the newer filter (it did, in CI's browser). Every two
    queued events that write one component share a queue that runs one event at a time (Gradio keeps its order)."""
    from rexrank.board.app import build

    demo = build(None, refresh_s=3600)
    queued = [fn for fn in demo.fns.values() if fn.fn is not None]
    writers: dict[int, list] = {}
    for fn in queued:
        for block in fn.outputs:
            writers.setdefault(block._id, []).append(fn)
    shared = {block: fns for block, fns in writers.items() if len(fns) > 1}
    assert shared, "no component has two writers: the test checks nothing"
    for block, fns in shared.items():
        assert {fn.concurrency_id for fn in fns} == {fns[0].concurrency_id}, demo.blocks[block]
        assert {fn.concurrency_limit for fn in fns} == {1}, demo.blocks[block]
    # the leaderboard's table of each task is among them: every filter's redraw, the header sort, the refresh
    tables = [fns for fns in shared.values() if len(fns) >= 8]
    assert tables and len({fn.concurrency_id for fn in queued}) > 1  # not one queue for the whole page
