"""`rexrank leaderboard --results DIR` on a `rexrank score --out` folder: the researcher's own results as unverified
rows beside the official field (never ranked, their Note saying where they would place), or, when nothing there is
a board or a result of a test set the board ranks, a failure at once naming what it expected."""

import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.board import sources, views
from rexrank.cli import main


def score(out, name="Mine", dataset_name="mimic-cxr", metrics="bleu2", task="findings"):
    assert main(["score", "--predictions", str(demo.predictions("demo-careful", task)), "--dataset",
                 str(demo.DATASET), "--task", task, "--metrics", metrics, "--out", str(out), "--quiet",
                 "--model-name", name, *(("--dataset-name", dataset_name) if dataset_name else ())]) in (0, 3)
    return out


@pytest.fixture
def launched(monkeypatch):
    import rexrank.board.app as app_module

    calls = []
    monkeypatch.setattr(app_module, "main", lambda results, port, demo: calls.append(results))
    return calls


@pytest.mark.slow
def test_a_score_folder_is_shown_as_unverified_rows_beside_the_official_field(tmp_path, launched, capsys):
    out = score(tmp_path / "out")
    score(out, task="findings_impression")
    board = sources.read_board(out)
    official = sources.read_board(None)
    assert len(board) == len(official) + 2 and board.attrs["unreadable"] == []
    mine = board[board["model"] == "Mine"]
    assert set(mine["provenance"]) == {sources.UNVERIFIED} and mine["rank"].isna().all()
    assert mine["bleu2"].notna().all() and mine["per_study_sha256"].isna().all()  # never compared as verified
    shown = views.table(board, "mimic-cxr", "findings")
    row = shown[shown["Model"] == "Mine"].iloc[0]
    assert row["Rank"] == views.OWN_MARK and row["Source"] == "yours, unverified"  # marked, in words
    assert shown["Model"].tolist()[0] == "Mine"  # first: a board of one's results is about them
    assert row["Note"].startswith("yours, unverified (rexrank score on this machine): no 1/RadCliQ-v1, by which the "
                                  "board ranks; rexrank submit sends it")
    # the official field keeps its ranks
    ranked = views.table(official, "mimic-cxr", "findings")
    assert shown[shown["Model"] != "Mine"]["Rank"].tolist() == ranked["Rank"].tolist()
    # the Source filter keeps one's own rows, by the word the address and the menu share, still marked
    mine_only = views.table(board, "mimic-cxr", "findings", filters=views.Filters(source="yours"))
    assert mine_only["Model"].tolist() == ["Mine"] and mine_only["Rank"].tolist() == [views.OWN_MARK]

    assert main(["leaderboard", "--results", str(out)]) == 0 and launched == [str(out)]
    assert "2 result(s) of rexrank score shown as unverified rows" in capsys.readouterr().out


def test_an_own_result_with_radcliq_says_where_it_would_place(tmp_path):
    from dataclasses import replace

    from rexrank.results import Result

    out = score(tmp_path / "out")
    path = written(out, "mimic-cxr.findings.json")
    result = Result.read(path)
    official = sources.read_board(None)
    field = official[(official["dataset"] == "mimic-cxr") & (official["task"] == "findings")]
    value = float(field["radcliq_v1"].sort_values().iloc[-2]) + 1e-4  # between the best and the second
    radcliq = replace(result.metrics["bleu2"], value=value, mean=1 / value, low=value - 0.01, high=value + 0.01,
                      statistic="inverse_mean")
    replace(result, metrics=result.metrics | {"radcliq_v1": radcliq}).write(path)
    row = sources.read_board(out).query("model == 'Mine'").iloc[0]
    assert row["unranked"].startswith(f"yours, unverified (rexrank score on this machine): its 1/RadCliQ-v1 would "
                                      f"place it 2 of {len(field) + 1};")
    assert row["rank"] is not None and str(row["rank"]) == "<NA>"  # placed in words, never ranked


@pytest.mark.slow
def test_results_the_board_does_not_rank_are_left_out_by_name_or_fail_at_once(tmp_path, launched, capsys):
    demo_only = score(tmp_path / "demo", dataset_name=None)  # the demo's own split: no test set of the board
    with pytest.raises(FileNotFoundError, match="none of a test set the board ranks") as raised:
        sources.read_board(demo_only)
    # the error names the file left out and why (the CLI's line may cut it short: the path's length decides where)
    assert "dataset.findings.Mine.json: dataset test is not a test set the board ranks" in str(raised.value)
    assert main(["leaderboard", "--results", str(demo_only)]) == 2
    err = capsys.readouterr().err
    [line] = err.splitlines()  # one line, the error's own words at its head, never a traceback
    head = f"rexrank: error: --results {demo_only}: cannot read a board there (FileNotFoundError: "
    tail = "); give a results repo folder, a rexrank score --out folder or a Hub dataset ORG/NAME"
    assert line.startswith(head) and line.endswith(tail)
    shown = line[len(head):-len(tail)]  # the error read_board raises, whole or its head, however long the path
    assert shown.startswith(f"{demo_only} holds results of rexrank score") and str(raised.value).startswith(shown)

    score(demo_only / "mimic", name="Mine")  # one level down, as `rexrank demo --out` writes its systems
    board = sources.read_board(demo_only)
    assert board.attrs["unreadable"] == ["dataset.findings.Mine.json: dataset test is not a test set the board ranks"]
    assert (board["model"] == "Mine").sum() == 1
    banner = sources.BoardSource(demo_only).load()[1]
    assert banner.startswith("⚠️ 1 result file left out: dataset.findings.Mine.json")

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["leaderboard", "--results", str(empty)]) == 2
    assert capsys.readouterr().err == (f"rexrank: error: --results {empty}: neither a results repo "
                                       "(leaderboard.parquet, submissions/ or imported/) nor a rexrank score --out "
                                       "folder (<dataset>.<task>.<model>.json results): nothing to show\n")
    assert launched == []
    assert sources.read_board(empty).empty  # the Space, given an empty new repo, still shows an empty board
