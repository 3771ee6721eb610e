"""Where the leaderboard Space's board comes from: a local folder (its leaderboard.parquet, or its results ranked in
memory), the Hub, the embedded demo; a banner and the last good table when that fails."""

import shutil

import pytest
from fixtures.board import results_repo

from rexrank.board import sources, views
from rexrank.board.aggregate import aggregate
from rexrank.board.schema import BOARD, COLUMNS, RADRBENCH_BOARD


@pytest.mark.slow
def test_a_local_folder_is_read_from_its_leaderboard_parquet(tmp_path):
    board = aggregate(results_repo(tmp_path))
    source = sources.BoardSource(tmp_path)
    shown, banner = source.load()
    assert banner == "" and source.banner == ""
    assert shown["model"].tolist() == board["model"].tolist() and shown["rank"].tolist() == board["rank"].tolist()
    assert views.table(shown, "mimic-cxr", "findings")["Model"].tolist()[:2] == ["B", "Official D"]


def test_a_folder_without_a_board_yet_is_ranked_in_memory_and_left_untouched(tmp_path):
    results_repo(tmp_path)
    shown = sources.read_board(tmp_path)
    assert views.table(shown, "mimic-cxr", "findings")["Rank"].tolist() == ["1", "2", "3", ""]  # C made otherwise
    assert not (tmp_path / BOARD).exists()


def test_a_result_of_an_unknown_schema_version_is_left_out_under_a_banner(tmp_path):
    results_repo(tmp_path)  # no leaderboard.parquet: the Space ranks the folder's results itself
    bad = tmp_path / "submissions" / "lab-c" / "results" / "mimic-cxr.findings.json"
    bad.write_text(bad.read_text().replace('"schema_version": 1', '"schema_version": 2'))
    shown, banner = sources.BoardSource(tmp_path).load()
    assert banner.startswith("⚠️ 1 result file left out: ") and "schema_version 2 is not 1" in banner
    assert "mimic-cxr.findings.json" in banner
    assert views.table(shown, "mimic-cxr", "findings")["Model"].tolist() == ["B", "Official D", "A"]


def test_a_missing_folder_gives_a_banner_and_keeps_the_last_good_table(tmp_path):
    repo = tmp_path / "results"
    repo.mkdir()
    aggregate(results_repo(repo))
    source = sources.BoardSource(repo)
    good, _ = source.load()
    shutil.rmtree(repo)
    shown, banner = source.load()
    assert "Could not read the board" in banner and str(repo) in banner and "showing the table read at" in banner
    assert shown is good and len(shown) == 5

    never = sources.BoardSource(tmp_path / "gone")  # a first failure: an empty board and the banner, not a crash
    shown, banner = never.load()
    assert shown.empty and "no results folder" in banner and "no earlier table" in banner
    assert views.table(shown, "mimic-cxr", "findings").empty


def test_an_empty_results_repo_is_an_empty_table_not_a_crash(tmp_path):
    (tmp_path / "empty").mkdir()
    empty = tmp_path / "empty"
    for board in (sources.read_board(empty), aggregate(empty), sources.read_board(empty)):
        shown = views.table(board, "rexgradient", "findings")
        assert shown.empty and "1/RadCliQ-v1" in shown.columns and "Model" in shown.columns
        assert views.overview(board, "findings").empty


def test_a_board_of_another_schema_shows_missing_columns_blank(tmp_path):
    board = aggregate(results_repo(tmp_path)).drop(columns=["bleu2", "bleu2_low", "bleu2_high", "institution"])
    board["future_metric"] = 1.0
    board.to_parquet(tmp_path / BOARD, index=False)
    shown = views.table(sources.read_board(tmp_path), "mimic-cxr", "findings")
    assert shown["BLEU"].tolist() == [""] * 4 and shown["Institution"].tolist() == [""] * 4


@pytest.mark.slow
def test_a_hub_results_repo_downloads_only_the_board_and_survives_the_hub_going_away(tmp_path, fake_hub):
    from huggingface_hub import close_session

    local = tmp_path / "repo"
    local.mkdir()
    aggregate(results_repo(local))
    files = {p.relative_to(local).as_posix(): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    fake_hub.add_repo("rexrank/results", files, repo_type="dataset")
    source = sources.BoardSource("rexrank/results")
    shown, banner = source.load()
    assert banner == "" and views.table(shown, "mimic-cxr", "findings")["Model"].tolist()[0] == "B"
    resolved = {p.rsplit("/", 1)[-1] for _, p in fake_hub.requests if "/resolve/" in p}
    assert resolved == {BOARD, RADRBENCH_BOARD}  # the two tables, not the submissions
    assert source.radrbench.empty  # this repo's submissions carry no RadRBench-CXR result

    older = {k: v for k, v in files.items() if k != RADRBENCH_BOARD}  # aggregated before the RadRBench-CXR table
    fake_hub.add_repo("rexrank/older", older, repo_type="dataset")
    old_source = sources.BoardSource("rexrank/older")
    _, banner = old_source.load()
    assert banner == "" and old_source.radrbench.empty

    fake_hub.stop()  # the Hub unreachable: the banner says so and the last good table stays
    close_session()  # (a pooled keep-alive connection would still reach the stopped server's handler thread)
    again, banner = source.load()
    assert again is shown and "Could not read the board from rexrank/results" in banner

    restarted = sources.BoardSource("rexrank/results")  # a new process, the Hub still down: the HF cache's copy
    cached, banner = restarted.load()
    assert cached["model"].tolist() == shown["model"].tolist() and "copy in the local Hub cache" in banner

    unknown = sources.BoardSource("rexrank/nothing-here")
    shown, banner = unknown.load()
    assert shown.empty and banner


@pytest.mark.slow
def test_the_embedded_demo_board_covers_every_dataset_and_task():
    sources._demo.cache_clear()
    board = sources.read_board(sources.DEMO)
    for dataset in views.DATASET_TITLES:
        for task in views.TASKS:
            shown = views.table(board, dataset, task)
            assert shown["Rank"].tolist() == ["1", "2", "†", "†"]  # the self-reported two: shown, not ranked
            assert set(shown["Source"]) == {"generated by maintainers", "self-reported",
                                            "as published, no CI"}  # each provenance, on every table
            assert shown.loc[shown["Source"] != "as published, no CI", "GREEN"].str.contains("±|\\[", regex=True).all()
    assert set(board.columns) >= set(COLUMNS)
    assert sources.BoardSource(sources.DEMO).name == "the embedded synthetic demo board"
