"""The leaderboard Space: where its board comes from (a local folder, the Hub, the embedded demo; a banner and the
last good table when that fails), and the app itself launched on loopback and driven through its API with
gradio_client. gradio is in the `dev` extra: without it these tests fail, they are not skipped."""

import base64
import io
import json
import os
import re
import shutil
import socket
import time

import pandas as pd
import pytest
from fixtures.board import results_repo
from fixtures.browser import PAGE_WAIT_MS

from rexrank.board import about, model_page, radrbench, sources, views, vqa
from rexrank.board.aggregate import aggregate
from rexrank.board.schema import BOARD, COLUMNS, RADRBENCH_BOARD, RANK_BY
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.demo.board import DRAWN, demo_keys, demo_results_repo
from rexrank.vqa.official import shipped


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


# --- the app on loopback ----------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cells(update) -> pd.DataFrame:
    """A table as the visitor reads it: its display text where the cells are numbers shown as text."""
    value = update["value"] if "value" in update else update
    shown = (value.get("metadata") or {}).get("display_value") or value["data"]
    # a CI's no-break space (`answers.unbroken_ci`: a phone breaks a cell only before its CI) reads as a space
    table = pd.DataFrame(shown, columns=value["headers"])
    return table.map(lambda x: x.replace("\xa0", " ") if isinstance(x, str) else x)


def _numbers(update) -> pd.DataFrame:
    """The values under the shown text: what sorting on a header orders."""
    value = update["value"] if "value" in update else update
    return pd.DataFrame(value["data"], columns=value["headers"])


def _launch(folder, monkeypatch):
    """The demo board's app on loopback, with a gradio_client on it: (demo, (client, results repo, board)). The app
    trusts the demo's ledger key beside the tests' own, as a Space is configured with the key its repo is signed with:
    the VQA tab reads the repo's signed ledger itself (the report tabs read the parquet `aggregate` made here)."""
    trusted = " ".join(base64.b64encode(k).decode() for k in demo_keys().values())
    monkeypatch.setenv("REXRANK_LEDGER_KEYS", f"{os.environ.get('REXRANK_LEDGER_KEYS', '')} {trusted}".strip())
    repo = demo_results_repo(folder / "results")
    board = aggregate(repo, demo_keys())
    from gradio_client import Client

    from rexrank.board.app import build, launch_options

    demo = build(str(repo), refresh_s=3600)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True,
                **launch_options())
    return demo, (Client(demo.local_url, verbose=False), repo, board)


def _digest(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory):
    """One app for the module's tests that only read it (an app takes about 3 s to build and launch)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
        demo, app = _launch(tmp_path_factory.mktemp("shared-app"), monkeypatch)
        try:
            yield app
        finally:
            demo.close()


@pytest.fixture
def app(shared_app):
    """The module's app, lent to a test that only reads it: its results repo must be as it was when the test ends
    (a test that changes it takes `own_app`)."""
    before = _digest(shared_app[1])
    yield shared_app
    assert _digest(shared_app[1]) == before, "a test changed the shared app's results repo: give it own_app"


@pytest.fixture
def own_app(tmp_path, monkeypatch):
    """An app of the test's own, for a test that changes its results repo."""
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    demo, app = _launch(tmp_path, monkeypatch)
    try:
        yield app
    finally:
        demo.close()


def test_the_app_switches_dataset_and_task_and_searches_through_its_api(app):
    client, repo, board = app
    everything = list(views.DEFAULT_METRICS)  # the columns a first view shows
    seen = {}
    for dataset in ("mimic-cxr", "iu-xray"):
        findings, both = client.predict(dataset, "", everything, "rank", api_name="/tables")
        for update, task in ((findings, "findings"), (both, "findings_impression")):
            got, want = _cells(update), views.table(board, dataset, task, details=False)
            assert got.columns.tolist() == want.columns.tolist()
            assert got.values.tolist() == want.values.tolist()
            assert update["datatype"][got.columns.get_loc("Model")] == "markdown"
            seen[dataset, task] = got.values.tolist()
    assert len({str(v) for v in seen.values()}) == 4  # each dataset and task its own numbers

    findings, _ = client.predict("chexpert-plus", "template", ["radcliq_v1"], "rank", api_name="/tables")
    got = _cells(findings)
    want = views.table(board, "chexpert-plus", "findings", "template", ("radcliq_v1",), details=False)
    assert got["Model"].tolist() == ["[Demo\\-Template](https://example.org/template)"]
    assert got["1/RadCliQ-v1"].tolist() == want["1/RadCliQ-v1"].tolist() and "BLEU" not in got.columns

    overview = _cells(client.predict("findings_impression", api_name="/overview"))
    assert overview.values.tolist() == views.overview(board, "findings_impression").values.tolist()


def test_the_app_filters_by_source_through_its_api(app):
    client, repo, board = app
    findings, _ = client.predict("mimic-cxr", "", ["radcliq_v1"], "rank", False, "any", "any", "published",
                                 api_name="/tables")
    assert _cells(findings)["Model"].tolist() == ["Demo\\-Imported \\(synthetic\\)"]  # markdown, escaped
    findings, both = client.predict("mimic-cxr", "", ["radcliq_v1"], "rank", True, "any", "any", "generated",
                                    api_name="/tables")
    for update in (findings, both):  # the demo's code submission, run by the maintainers, on each task
        assert _cells(update)[["Model", "Source"]].values.tolist() == [
            ["[Demo\\-Careful](https://example.org/careful)", "generated by maintainers"]]
    findings, _ = client.predict("mimic-cxr", "", ["radcliq_v1"], "rank", False, "any", "no", "verified",
                                 api_name="/tables")
    want = views.table(board, "mimic-cxr", "findings", metrics=("radcliq_v1",), details=False,
                       filters=views.Filters(mimic="no", source="verified"))
    assert _cells(findings).values.tolist() == want.values.tolist() and len(want) == 3  # trained on synthetic text
    findings, _ = client.predict("mimic-cxr", "", ["radcliq_v1"], "rank", False, "api", "any", "any",
                                 api_name="/tables")
    assert _cells(findings)["Model"].tolist() == ["[Demo\\-Template](https://example.org/template)"]


def test_the_app_sorts_by_a_metric_as_numbers_not_text(app):
    client, repo, board = app
    findings, _ = client.predict("mimic-cxr", "", ["bleu2", "green"], "green", api_name="/tables")
    got = _cells(findings)
    shown = board[(board["dataset"] == "mimic-cxr") & (board["task"] == "findings")]
    numbers = shown.set_index("model")["green"]
    order = [m for m in numbers.sort_values(ascending=False, na_position="last").index]
    names = {views.model_cell(m, u): m for m, u in zip(shown["model"], shown["url"])}
    assert [names[m] for m in got["Model"]] == order  # best GREEN first, the imported row (no GREEN) last
    assert got["GREEN"].tolist()[-1] == "" and got["Rank"].tolist() != ["1", "2", "3", "4"]


def test_the_model_page_gives_its_bars_numbers_and_card_through_its_api(app):
    client, repo, board = app
    plot, card, numbers, reasoning, pairs, _ = client.predict("Demo-Template", api_name="/model")
    assert reasoning.get("visible") is False  # no RadRBench-CXR result: no reasoning plot
    assert [key for _, key in pairs["choices"]] == [f"{d}.{t}" for d in ("mimic-cxr", "iu-xray", "chexpert-plus")
                                                    for t in views.TASKS]  # per-study scores: never the private set
    plot = plot["value"]
    assert plot["type"] == "matplotlib" and plot["plot"].startswith("data:image/")
    assert len(base64.b64decode(plot["plot"].split(",", 1)[1])) > 10_000  # a rendered figure, not a blank
    want = model_page.model_numbers(model_page.model_bars(board, "Demo-Template"))
    got = _cells(numbers)
    assert got.columns.tolist() == want.columns.tolist() and got.values.tolist() == want.values.tolist()
    assert got["1/RadCliQ-v1"].str.contains("±|\\[", regex=True).all() and len(got) == 8
    assert "**Institution:** rexrank demo" in card and "(https://example.org/template)" in card

    _, card, numbers, _, _, note = client.predict("Demo-Imported (synthetic)", api_name="/model")  # no CIs
    got = _cells(numbers)
    assert got.columns.tolist() == ["Dataset", "Task", "BLEU", "1/RadCliQ-v1"] and "±" not in str(got.values)
    assert "**Numbers:** imported as published, on 8 dataset and task pairs" in card and "**URL:** —" in card
    assert "MIMIC-CXR · Findings: ReXrank's figure as published, with no per-study scores" in note["value"]

    _, card, numbers, reasoning, _, _ = client.predict("Demo-Reasoner", api_name="/model")  # RadRBench-CXR only
    assert reasoning["visible"] is True and reasoning["value"]["plot"].startswith("data:image/")
    assert _cells(numbers).empty and "**Institution:** rexrank demo" in card
    assert "(https://example.org/reasoner)" in card and "RadRBench-CXR only" in card


def test_two_models_compare_through_the_api_as_the_board_computes_them(app):
    from rexrank.board.compare import compare

    client, repo, board = app
    heading, numbers = client.predict("iu-xray", "findings", "Demo-Template", "Demo-Shuffled", api_name="/compare")
    want_heading, want = compare(board, str(repo), "iu-xray", "findings", "Demo-Template", "Demo-Shuffled")
    assert heading == want_heading
    assert "A = Demo\\-Template † (self-reported), B = Demo\\-Shuffled † (self-reported)" in heading
    assert _cells(numbers).values.tolist() == want.values.tolist() and len(want) == len(DRAWN)  # each metric drawn
    heading, numbers = client.predict("iu-xray", "findings", "Demo-Template", "Demo-Imported (synthetic)",
                                      api_name="/compare")
    assert "no per-study scores" in heading and _cells(numbers).empty


def test_rank_stability_through_the_api(app):
    client, repo, board = app
    findings, _ = client.predict("iu-xray", "", ["radcliq_v1"], "rank", api_name="/tables")
    got = _cells(findings)
    assert got["Rank range"].tolist() == views.table(board, "iu-xray", "findings")["Rank range"].tolist()
    plot = client.predict("iu-xray", "findings", api_name="/stability")
    assert plot["type"] == "matplotlib" and len(base64.b64decode(plot["plot"].split(",", 1)[1])) > 5_000


ANY_ROW = ("any", "any", "any")  # the filters: access, trained on MIMIC-CXR, source


def test_refresh_rereads_the_repo_and_keeps_the_last_table_under_a_banner(own_app):
    client, repo, board = own_app
    changed = board.copy()
    row = (changed["dataset"] == "rexgradient") & (changed["task"] == "findings") & (changed["model"] == "Demo-Careful")
    changed.loc[row, "bleu2"] = 0.5
    buffer = io.BytesIO()
    changed.to_parquet(buffer, index=False)
    (repo / BOARD).write_bytes(buffer.getvalue())

    banner, findings, *_ = client.predict("rexgradient", "Careful", ["bleu2"], "rank", False, *ANY_ROW, "findings",
                                          "task", "", api_name="/refresh")
    assert _cells(findings)["BLEU"].tolist()[0].startswith("0.500 ")
    assert not banner.get("visible", True) or not banner.get("value")

    shutil.rmtree(repo)
    banner, findings, *_ = client.predict("rexgradient", "Careful", ["bleu2"], "rank", False, *ANY_ROW, "findings",
                                          "task", "", api_name="/refresh")
    assert "Could not read the board" in banner["value"] and banner["visible"] is True
    assert _cells(findings)["BLEU"].tolist()[0].startswith("0.500 ")  # the last good table, not a blank page


def test_the_radrbench_tab_through_the_api(own_app):
    client, repo, board = own_app
    table = pd.read_parquet(repo / RADRBENCH_BOARD)
    for view in ("task", "source", "radrscore"):
        got, want = _cells(client.predict(view, "", api_name="/radrbench")), radrbench.radrbench_table(table, view)
        assert got.columns.tolist() == want.columns.tolist()
        assert got.astype(str).values.tolist() == want.astype(str).values.tolist()
    got = _cells(client.predict("task", "", api_name="/radrbench"))
    assert got.columns.tolist()[3:9] == ["Overall", "Binary", "Single choice", "Multiple choice", "Multi, no options",
                                         "Temporal"]
    assert got["Overall"].tolist() == ["0.955 [0.864, 1.000]", "0.318 [0.136, 0.501]"]  # over the option tasks
    assert "MS-CXR-T · Temporal" in _cells(client.predict("source", "", api_name="/radrbench")).columns
    reasoning = _cells(client.predict("radrscore", "", api_name="/radrbench"))
    assert reasoning.columns.tolist()[3:8] == ["RadRScore", "Rc (completeness)", "Rf (factuality)",
                                               "Re (effectiveness)", "Judged items"]
    options = table[(table["source"] == "all") & (table["task"] == "all")]["items"].astype(int).astype(str).tolist()
    assert reasoning["RadRScore"].str.contains("±").all() and reasoning["Judged items"].tolist() == options
    # refresh rereads radrbench.parquet too, and gives the per-task plot
    changed = table.copy()
    changed.loc[changed["model"] == "Demo-Guesser", "institution"] = "Guess Lab"
    changed.to_parquet(repo / RADRBENCH_BOARD, index=False)
    *_, radr, plot = client.predict("rexgradient", "", ["bleu2"], "rank", False, *ANY_ROW, "findings", "task", "guess",
                                    api_name="/refresh")
    assert _cells(radr)["Institution"].tolist() == ["Guess Lab"]
    assert plot["type"] == "matplotlib" and len(base64.b64decode(plot["plot"].split(",", 1)[1])) > 10_000


def test_the_vqa_tab_through_the_api(app):
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    for split in [s for _, s in vqa.splits(frame)]:
        for sort_by in ("overall", "presence", "failed"):
            got = _cells(client.predict(split, "", sort_by, "any", api_name="/vqa"))
            want = vqa.vqa_table(frame, split, "", sort_by)
            assert got.columns.tolist() == want.columns.tolist() and got.values.tolist() == want.values.tolist()
    published = _cells(client.predict(VQA_PRIVATE["split"], "", "overall", "published", api_name="/vqa"))
    rows = shipped()["rows"]
    assert len(published) == len(rows)  # ReXrank's table, each figure as shipped (4 decimals, no CI)
    assert [float(x) for x in published["Overall"]] == [r["overall"] for r in rows]
    for category in VQA_CATEGORIES:
        assert [float(x) for x in published[category]] == [r["categories"][category] for r in rows]
    note, section = client.predict("Demo-Careful", api_name="/model_vqa")  # the Model tab's section
    assert "ReXVQA" in note["value"] and section["visible"] is not False
    assert _cells(section).values.tolist() == vqa.model_vqa(frame, "Demo-Careful").values.tolist()
    note, section = client.predict("Demo-Template", api_name="/model_vqa")  # no VQA result: no section
    assert note.get("visible") is False and section.get("visible") is False



def test_the_vqa_view_downloads_as_csv_with_numbers(app):
    """The VQA tab's "Download this view (CSV)": the rows the view shows, in its order, as numbers: the maintainers'
    figures with their CI bounds, ReXrank's published ones without; a view's filters keep the same rows."""
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    for split in [s for _, s in vqa.splits(frame)]:
        for sort_by, source in (("overall", "any"), ("presence", "generated"), ("failed", "published")):
            button = client.predict(split, "", sort_by, source, api_name="/vqa_export")
            got = pd.read_csv(button["value"], keep_default_na=True)
            shown = vqa.vqa_table(frame, split, "", sort_by, source)
            want = vqa.export(frame, split, "", sort_by, source)
            assert got.columns.tolist() == want.columns.tolist() and len(got) == len(shown)
            assert got["rank"].fillna(0).astype(int).astype(str).tolist() == [r or "0" for r in shown["Rank"]]
            assert got["split"].unique().tolist() in ([split], [])
            for column in [c for c in got.columns if c.endswith(("_value", "_low", "_high"))]:
                assert got.empty or got[column].dtype == float  # numbers, not "0.674 ± 0.020"
                assert got[column].tolist() == pytest.approx(want[column].astype(float).tolist(), nan_ok=True)
    private = pd.read_csv(client.predict(VQA_PRIVATE["split"], "", "overall", "any", api_name="/vqa_export")["value"])
    imported, made = private[private["provenance"] == "imported"], private[private["provenance"] != "imported"]
    assert len(imported) == len(shipped()["rows"]) and imported["overall_low"].isna().all()
    assert imported["overall_value"].tolist() == [r["overall"] for r in shipped()["rows"]]  # as published
    assert len(made) and (made["overall_low"] <= made["overall_value"]).all()
    assert (made["overall_value"] <= made["overall_high"]).all()
    keys = [vqa.column_key(c) for c in VQA_CATEGORIES]
    assert [c.removesuffix("_value") for c in private.columns if c.endswith("_value")] == ["overall", *keys]
    hostile = frame.copy()
    hostile.loc[hostile.index[0], "model"] = "=HYPERLINK(\"http://x\")"
    assert vqa.export(hostile, hostile.loc[hostile.index[0], "split"])["model"].str.startswith("'=").any()

# --- the board in a real browser (Debian's Chromium through Playwright) -------------------------------------------

def _rows(page, timeout_s: float = PAGE_WAIT_MS / 1000) -> list[list[str]]:
    """The visible table's body cells, once they have settled (Gradio updates asynchronously); a CI's no-break space
    (`answers.unbroken_ci`) reads as a space, as `_cells` reads it."""
    last, deadline = None, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = [cells for row in page.locator("[role=row]:visible").all()
                if (cells := [c.strip().replace("\xa0", " ")
                              for c in row.locator("[role=gridcell]").all_inner_texts()])]
        if rows and rows == last:
            return rows
        last = rows
        page.wait_for_timeout(300)
    return last or []


def _wait_for(page, check, timeout_s: float = PAGE_WAIT_MS / 1000):
    deadline = time.monotonic() + timeout_s
    while True:
        rows = _rows(page)
        if check(rows) or time.monotonic() > deadline:
            return rows
        page.wait_for_timeout(300)


def _settled(page, quiet_s: float = 1.5, timeout_s: float = PAGE_WAIT_MS / 1000) -> None:
    """Wait until no event is running: no Gradio "processing" overlay for `quiet_s` on end (a chain of events
    shows none for the moment between two of its steps)."""
    busy = page.locator(".progress-text:visible")
    deadline, quiet_since = time.monotonic() + timeout_s, time.monotonic()
    while time.monotonic() < deadline:
        if busy.count():
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the page was still processing after {timeout_s:.0f} s")


def _empty_note(page, expected: str, timeout_s: float = PAGE_WAIT_MS / 1000) -> str:
    """The words the board shows where a filter left no row, read until they are `expected` or time is up: Gradio's
    "processing | 0.0s" overlay sits on the note while each of the filter's updates runs (there may be more than
    one), so one read between two of them is not the settled page."""
    note = page.locator(".board-empty:visible").first
    note.wait_for(timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    while (text := note.inner_text().strip()) != expected and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    return text


def test_the_board_in_a_browser_switches_dataset_and_task_and_searches(own_app, chromium, tmp_path):
    client, repo, board = own_app

    def expected(dataset, task, search="", sort_by=None):
        shown = board[(board["dataset"] == dataset) & (board["task"] == task)]
        want = views.table(board, dataset, task, search, sort_by=sort_by)
        names = dict(zip([views.model_cell(m, u) for m, u in zip(shown["model"], shown["url"])], shown["model"]))
        return [[r, names[m], g] for r, m, g in zip(want["Rank"], want["Model"], want["GREEN"])]

    def seen(rows, headers):
        at = {h: i for i, h in enumerate(headers)}
        return [[row[at["Rank"]], row[at["Model"]], row[at["GREEN"]]] for row in rows]

    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(client.src)
            page.get_by_text("Demo-Careful").first.wait_for()
            headers = [h.strip() for h in page.locator("[role=columnheader]:visible").all_inner_texts()]
            assert headers[:3] == ["Rank", "Rank range", "Model"] and "GREEN" in headers
            want = expected("rexgradient", "findings")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            page.screenshot(path=tmp_path / "board-rexgradient-findings.png", full_page=True)

            page.get_by_label("Dataset").click()
            page.get_by_role("option", name="IU-Xray").click()
            want = expected("iu-xray", "findings")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want

            page.get_by_role("tab", name="Findings + Impression").click()
            want = expected("iu-xray", "findings_impression")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want

            search = page.get_by_label("Search model or institution").filter(visible=True)
            search.fill("template")
            want = expected("iu-xray", "findings_impression", "template")
            assert len(want) == 1
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            page.screenshot(path=tmp_path / "board-iu-xray-findings-impression-search.png", full_page=True)

            search.fill("")  # sorted by GREEN's numbers: best first, the imported row (no GREEN) last
            page.get_by_label("Sort by (best first)").click()
            page.get_by_role("option", name="GREEN").click()
            want = expected("iu-xray", "findings_impression", sort_by="green")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            assert want[-1][2] == "" and [r for r, _, _ in want] != sorted(r for r, _, _ in want)

            page.get_by_role("tab", name="Overview").click()  # mean ranks, and IU-Xray's rank stability plot
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "overview-iu-xray-stability.png", full_page=True)

            # The model page: card, bars with whiskers, numbers. The tab opens on the board's first model; the
            # chooser is picked from once that has settled, as a reader would (picked while the tab's first answer
            # was still coming, the pick had not shown 20 s later on a loaded CI machine), and the page settles on it.
            page.get_by_role("tab", name="Model").click()
            _settled(page)
            page.get_by_label("Model", exact=True).click()
            page.get_by_role("option", name="Demo-Shuffled").click()
            _settled(page)
            assert page.get_by_role("heading", name="Demo-Shuffled").is_visible()
            assert page.get_by_label("Model", exact=True).input_value() == "Demo-Shuffled"
            assert "model=Demo-Shuffled" in page.url
            assert page.get_by_role("figure", name="Demo-Shuffled · MIMIC-CXR · Findings").is_visible()
            want = model_page.model_numbers(model_page.model_bars(board, "Demo-Shuffled")).values.tolist()
            assert _wait_for(page, lambda rows: rows == want) == want
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "model-demo-shuffled.png", full_page=True)

            page.get_by_role("tab", name="RadRBench-CXR").click()  # accuracy per task type, then per source
            radr = pd.read_parquet(repo / RADRBENCH_BOARD)
            want = radrbench.radrbench_table(radr, "task")
            overall = [["1", "Demo-Reasoner", want["Overall"][0]], ["2", "Demo-Guesser", want["Overall"][1]]]

            def radr_seen(rows):
                return [row[:2] + row[3:4] for row in rows if len(row) > 4]

            assert radr_seen(_wait_for(page, lambda rows: radr_seen(rows) == overall)) == overall
            radr_headers = [h.strip() for h in page.locator("[role=columnheader]:visible").all_inner_texts()]
            assert "Temporal" in radr_headers and "Multi, no options" in radr_headers
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "radrbench-by-task.png", full_page=True)
            page.get_by_text("Source and task").click()
            _wait_for(page, lambda rows: any("MS-CXR-T" in h for h in page.locator(
                "[role=columnheader]:visible").all_inner_texts()))
            page.screenshot(path=tmp_path / "radrbench-by-source.png", full_page=True)
            page.get_by_label("Reasoning (RadRScore)").check()
            reasoner = radrbench.radrbench_table(radr, "radrscore")["RadRScore"][0]
            assert _wait_for(page, lambda rows: any(reasoner in row for row in rows))
            page.screenshot(path=tmp_path / "radrbench-radrscore.png", full_page=True)

            # A hostile model name, put in a card and refreshed in: shown as its text, never run, never a link.
            hostile = '<img src=x onerror="window.pwned=1">**Bold** [x](javascript:alert(1)) $x$ _i_'
            card = repo / "submissions" / "demo-template" / "submission.json"
            card.write_text(json.dumps({**json.loads(card.read_text()), "name": hostile}))
            aggregate(repo, demo_keys())
            dialogs = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.get_by_role("tab", name="Leaderboard").click()
            page.get_by_role("button", name="Refresh").click()
            assert any(hostile in row for row in _wait_for(page, lambda rows: any(hostile in r for r in rows)))
            search.fill("onerror")
            rows = _wait_for(page, lambda rows: len(rows) == 1 and hostile in rows[0])
            assert len(rows) == 1 and hostile in rows[0], rows
            assert page.evaluate("window.pwned") is None and dialogs == []
            assert page.locator("img[src='x']").count() == 0 and page.locator("a[href^='javascript']").count() == 0
            page.screenshot(path=tmp_path / "board-hostile-name.png", full_page=True)
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()


# How many lines each hyphenated word of an element's text takes (the tops of its boxes).
LINES_PER_HYPHENATED_WORD = """e => {
  const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), lines = [];
  for (let node; (node = walk.nextNode());) {
    for (const match of node.data.matchAll(/\\S*[-\\u2011]\\S*/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      lines.push(new Set([...range.getClientRects()].map(box => Math.round(box.top))).size);
    }
  }
  return lines;
}"""


def test_the_table_is_compact_proportional_sorts_numbers_and_explains_its_headers_at_both_widths(chromium, tmp_path):
    """The board a first visitor sees (the official tables), at 1400 px and on a 390 px phone."""
    from rexrank.board.app import build, launch_options
    from rexrank.board.page import CONTROLS_LABEL, DETAILS_LABEL, PAGES

    demo = build(None, refresh_s=3600)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True,
                **launch_options())
    # the columns a first view shows (ReXrank's), the ranking metric's first; the others are ticked in Metric columns
    metrics = [views.TITLES[RANK_BY], *[views.TITLES[m] for m in views.DEFAULT_METRICS if m != RANK_BY]]
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(demo.local_url)
                page.get_by_text("MAIRA-2").first.wait_for()
                page.evaluate("document.fonts.ready")

                def header_row(page=page):
                    return [h.strip() for h in page.locator(".board th:visible").all_inner_texts()]
                assert header_row() == ["Rank", "Rank range", "Model", *metrics]  # no metadata until asked for
                tips = about.metric_tooltips()
                for title in metrics:
                    tip = tips[title]
                    assert page.locator(".board th:visible").filter(has_text=title).first.get_attribute("title") == tip
                cell = page.locator(".board [role=gridcell]:visible").nth(2)
                font = cell.evaluate("e => getComputedStyle(e.querySelector('a') || e).fontFamily")
                assert "Mono" not in font and "monospace" not in font, font
                refresh, title = page.locator("#refresh").bounding_box(), page.locator("h1").first.bounding_box()
                assert refresh["height"] < 48  # a small control, not a panel
                assert refresh["width"] >= 60 and refresh["x"] >= title["x"] + title["width"]  # its word, beside
                if width == 390:  # a phone: fixed columns, a cell breaking only before its CI, none cut
                    assert cell.evaluate("e => getComputedStyle(e).whiteSpace") == "normal"  # the model's words
                    for shown in page.locator(".ranked [role=gridcell]:visible").all()[:8]:
                        assert shown.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), shown.inner_text()
                    assert page.locator("h1").first.evaluate(LINES_PER_HYPHENATED_WORD) == [1, 1]  # not "X-" / "ray"
                    for label in PAGES.values():  # every tab in sight, none behind a menu
                        tab = page.get_by_role("tab", name=label, exact=True)
                        box = tab.bounding_box()
                        assert tab.is_visible() and box and 0 <= box["x"] and box["x"] + box["width"] <= 390, label
                    assert not page.get_by_label("More tabs").is_visible()
                    page.get_by_text(CONTROLS_LABEL).click()  # closed on a phone: the table comes first
                    details = page.get_by_text(DETAILS_LABEL)
                    assert details.bounding_box()["width"] > 200  # not squeezed to a sliver beside the metrics
                    page.goto(demo.local_url + "?tab=model&model=MAIRA-2")  # a figure and a table of numbers
                    page.get_by_role("heading", name="MAIRA-2").wait_for()
                    figure = page.locator(".figure img:visible").first
                    figure.wait_for()
                    box = figure.bounding_box()
                    assert box["width"] >= 700 and box["x"] >= 0  # legible, from its left edge; it scrolls sideways
                    numbers = page.locator(".board [role=gridcell]:visible")
                    numbers.first.wait_for()
                    assert all(c.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
                               for c in numbers.all()[:6])
                    page.screenshot(path=tmp_path / "board-390.png", full_page=True)
                    continue
                rank = page.locator(".board th:visible").filter(has_text="Rank").first
                rank.hover()
                rank.locator("button").last.click()
                page.get_by_text("Sort descending").click()
                ranks = [row[0] for row in views.table(sources.read_board(None), "rexgradient", "findings",
                                                       details=False).attrs["numbers"]]
                want = [str(r) for r in sorted(ranks, reverse=True)]  # 25, 24, ...; as text: 9, 8, ..., 25, 24, ...
                shown = _wait_for(page, lambda rows, want=want: len(rows) >= 10 and
                                  [r[0] for r in rows] == want[:len(rows)])
                assert len(shown) >= 10 and [r[0] for r in shown] == want[:len(shown)]  # the rows drawn so far
                page.get_by_label(DETAILS_LABEL).check()
                deadline = time.monotonic() + 20
                while header_row()[-len(views.DETAILS):] != list(views.DETAILS) and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                assert header_row() == ["Rank", "Rank range", "Model", *metrics, *views.DETAILS]
                page.screenshot(path=tmp_path / "board-1400-details.png", full_page=True)
        finally:
            browser.close()
            demo.close()


def test_the_view_downloads_as_csv_with_numbers_and_no_formulas(app):
    client, repo, board = app
    buttons = client.predict("iu-xray", "", list(views.DEFAULT_METRICS), "rank", False, api_name="/export")
    assert len(buttons) == len(views.TASKS)  # a download under each task's table
    for task, button in zip(views.TASKS, buttons):  # the file each download button now serves: its task's rows
        assert pd.read_csv(button["value"])["task"].unique().tolist() == [task]
    got = pd.read_csv(buttons[0]["value"])
    want = views.export(board, "iu-xray", next(iter(views.TASKS)))
    assert len(got) == len(want) > 0 and got.columns.tolist() == want.columns.tolist()
    assert got.columns.tolist()[12:18] == ["source", "provenance", "note", "radcliq_v1_value", "radcliq_v1_low",
                                           "radcliq_v1_high"]
    # every metric the board holds, not only the columns shown (BLEU-4, ROUGE-L, the label F1s...)
    assert [c.removesuffix("_value") for c in got.columns if c.endswith("_value")] == [
        *sorted(views.TITLES, key=lambda m: m != "radcliq_v1")]
    for column in [c for c in got.columns if c.endswith(("_value", "_low", "_high"))]:
        assert got[column].dtype == float  # numbers, not "0.919 ± 0.020"
        assert got[column].tolist() == pytest.approx(want[column].astype(float).tolist(), nan_ok=True)
    imported = got[got["source"] == "imported as published"]
    assert len(imported) and imported["radcliq_v1_low"].isna().all() and imported["radcliq_v1_value"].notna().all()
    assert got.groupby("provenance")["source"].unique().map(list).to_dict() == {
        "generated": ["generated by the maintainers from the model"], "imported": ["imported as published"],
        "scored": ["self-reported: the submitter's predictions, re-scored by the maintainers"]}
    hostile = board.copy()
    hostile.loc[hostile.index[0], "model"] = "=HYPERLINK(\"http://x\")"
    assert views.export(hostile, hostile.loc[hostile.index[0], "dataset"],
                        hostile.loc[hostile.index[0], "task"])["model"].str.startswith("'=").any()


def test_the_address_carries_the_view_and_a_link_opens_it(app, chromium):
    from rexrank.board.compare import compare

    client, repo, board = app
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(client.src + "?dataset=iu-xray&task=findings_impression")
            iu = board[(board["dataset"] == "iu-xray") & (board["task"] == "findings_impression")]
            page.get_by_role("tab", name="Findings + Impression", selected=True).wait_for()
            rows = _wait_for(page, lambda rows: len(rows) == len(iu))
            assert page.get_by_label("Dataset").input_value() == "IU-Xray" and len(rows) == len(iu)

            page.goto(client.src + "?dataset=iu-xray&access=api&source=verified")  # the filters, from a link
            kept = views.export(board, "iu-xray", "findings", filters=views.Filters(access="api", source="verified"))
            assert 0 < len(kept) < len(board[(board["dataset"] == "iu-xray") & (board["task"] == "findings")])
            rows = _wait_for(page, lambda rows: len(rows) == len(kept))
            assert [row[2] for row in rows] == list(kept["model"])  # Rank, Rank range, Model
            assert page.get_by_role("combobox", name="Access", exact=True).input_value() == "API"
            source = page.get_by_role("combobox", name="Source", exact=True)
            assert source.input_value() == views.SOURCE_FILTER["verified"]

            page.goto(client.src + "?tab=model&model=Demo-Template")
            page.get_by_role("tab", name="Model", selected=True).wait_for()
            page.get_by_role("heading", name="Demo-Template").wait_for()

            page.goto(client.src + "?tab=compare&dataset=iu-xray&task=findings&a=Demo-Shuffled&b=Demo-Careful")
            page.get_by_role("tab", name="Compare", selected=True).wait_for()
            # the pair as the heading names it, each marked as the board marks its source (as the page renders it)
            heading, _ = compare(board, str(repo), "iu-xray", "findings", "Demo-Shuffled", "Demo-Careful")
            pair = re.sub(r"\\(.)", r"\1", heading[heading.index("A = "):heading.index(";")])
            assert pair.startswith(f"A = Demo-Shuffled {views.MARK} (") and ", B = Demo-Careful" in pair, pair
            page.get_by_text(pair).wait_for()
            assert page.get_by_label("Test set").input_value() == "IU-Xray"

            page.goto(client.src + "?tab=%3Cscript%3E&dataset=nowhere&model=%22%3E%3Cimg%3E&access=%3Cimg%3E"
                      "&source=imported%22")  # ignored, not run
            page.get_by_role("tab", name="Leaderboard", selected=True).wait_for()
            assert page.get_by_label("Dataset").input_value() == views.DATASET_TITLES[next(iter(views.DATASET_TITLES))]
            assert [page.get_by_role("combobox", name=name, exact=True).input_value()
                    for name in ("Access", "Source")] == ["any", "any"]

            page.get_by_label("Dataset").click()
            page.get_by_role("option", name="CheXpert Plus").click()
            page.get_by_role("combobox", name="Access", exact=True).click()
            page.get_by_role("option", name="open weights").click()
            page.wait_for_function("location.search.includes('access=open-weights')")
            kept = views.export(board, "chexpert-plus", "findings", filters=views.Filters(access="open-weights"))
            assert [row[2] for row in _wait_for(page, lambda rows: len(rows) == len(kept))] == list(kept["model"])
            page.get_by_role("tab", name="Overview").click()
            page.wait_for_function("location.search.includes('tab=overview')")
            assert "dataset=chexpert-plus" in page.url and "tab=overview" in page.url
            page.goto(page.url)  # the link, opened again
            page.get_by_role("tab", name="Overview", selected=True).wait_for()
        finally:
            browser.close()


def test_the_source_filter_in_a_browser_keeps_generated_rows_labels_them_and_says_when_none_match(app, chromium,
                                                                                                   tmp_path):
    """At 1400 px the Source filter is chosen in its menu, on a 390 px phone it comes from a link (?source=generated):
    either way only the rows the maintainers generated from the model are left, each labelled so (its full words
    on hover), the legend says what each source is, and a filter that leaves no row says so instead of a blank."""

    from rexrank.board.page import DETAILS_LABEL

    client, repo, board = app
    kept = views.table(board, "iu-xray", "findings", filters=views.Filters(source="generated"))
    generated = [m for m, p in zip(board["model"], board["provenance"]) if p == "generated"]
    assert len(kept) == 1 and set(generated) == {"Demo-Careful"}  # the demo's one model run by the maintainers
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                source = page.get_by_role("combobox", name="Source", exact=True)
                if width == 1400:
                    page.goto(client.src + "?dataset=iu-xray")
                    _wait_for(page, lambda rows: len(rows) == 4)
                    source.click()
                    offered = [t.split("\n")[-1].strip() for t in page.get_by_role("option").all_inner_texts()]
                    # (the chosen one marked ✓); "yours" only on a board of one's own results
                    assert offered == [label for key, label in views.SOURCE_FILTER.items() if key != "yours"]
                    page.get_by_role("option", name="generated by maintainers", exact=True).click()
                    page.wait_for_function("location.search.includes('source=generated')")
                else:
                    page.goto(client.src + "?dataset=iu-xray&source=generated")
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["Demo-Careful"])
                assert [r[2] for r in rows] == ["Demo-Careful"], rows  # Rank, Rank range, Model
                assert source.input_value() == "generated by maintainers"
                assert source.evaluate("e => e.scrollWidth <= e.clientWidth")  # the chosen words whole, not cut
                legend = page.get_by_text("Source says who made a row's numbers")
                assert legend.is_visible() and "generated by maintainers" in legend.inner_text()

                page.get_by_label(DETAILS_LABEL).check()
                headers = page.locator(".board th:visible")
                deadline = time.monotonic() + 20
                while "Source" not in [h.strip() for h in headers.all_inner_texts()] and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                at = [h.strip() for h in headers.all_inner_texts()].index("Source")
                assert headers.nth(at).get_attribute("title").startswith("Who made the row's numbers: generated by")
                label = page.locator(".board [role=row]:visible").filter(has_text="Demo-Careful").locator(
                    "[role=gridcell]").nth(at)
                label.scroll_into_view_if_needed()  # on the phone the table scrolls sideways to it
                assert label.inner_text().strip() == "generated by maintainers" and label.is_visible()
                box = label.bounding_box()
                assert box and 0 <= box["x"] and box["x"] + box["width"] <= width  # in sight
                deadline = time.monotonic() + 10
                while label.get_attribute("title") is None and time.monotonic() < deadline:
                    page.wait_for_timeout(200)
                assert label.get_attribute("title").startswith("generated by the maintainers from the model: ")
                page.screenshot(path=tmp_path / f"board-source-generated-{width}.png", full_page=True)

                page.get_by_role("combobox", name="Access", exact=True).click()  # Demo-Careful is open weights
                page.get_by_role("option", name="API", exact=True).click()
                says = ("No row matches Access: API and Source: generated by maintainers: IU-Xray, Findings has 4 "
                        "rows; set the filters to any to see them.")
                assert _empty_note(page, says) == says
                assert page.locator(".board [role=gridcell]:visible").count() == 0
                page.screenshot(path=tmp_path / f"board-source-none-{width}.png", full_page=True)
                source.click()
                page.get_by_role("option", name="any", exact=True).click()  # API alone keeps Demo-Template
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["Demo-Template"])
                assert [r[2] for r in rows] == ["Demo-Template"] and not page.locator(".board-empty:visible").count()
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()


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
    assert len(board) == 128 and set(board["provenance"]) == {"imported"} and board["rank"].notna().all()
    assert BoardSource().name.startswith("the official ReXrank tables as published") and read_radrbench(OFFICIAL).empty
    shown = views.table(board, "mimic-cxr", "findings_impression")
    assert set(shown["Source"]) == {"as published, no CI"} and "±" not in "".join(shown["1/RadCliQ-v1"])
    radfm = shown[shown["Model"].str.contains("RadFM")].iloc[0]
    assert radfm["Note"].startswith("published 1/RadCliQ-v1 0.625 is outside [0.6226, 0.6241]")
    assert shown["Rank"].tolist()[:1] == ["1"] and len(shown) == 7


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


# How many lines each word (whitespace-separated) of an element's text takes: a header never breaks inside a word.
LINES_PER_WORD = """e => {
  const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), lines = [];
  for (let node; (node = walk.nextNode());) {
    for (const match of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      lines.push(new Set([...range.getClientRects()].map(box => Math.round(box.top))).size);
    }
  }
  return lines;
}"""
# Scrolls the table's own sideways scroller (the nearest box around its cells that scrolls) to its right end.
SCROLL_TABLE_RIGHT = """e => {
  for (let n = e.querySelector('[role=gridcell]'); n && n !== e.parentElement; n = n.parentElement) {
    if (n.scrollWidth > n.clientWidth + 1 && getComputedStyle(n).overflowX !== 'visible') {
      n.scrollLeft = n.scrollWidth; return true; }
  }
  return false;
}"""


def _official_app():
    from rexrank.board.app import build, launch_options

    demo = build(None, refresh_s=3600)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True,
                **launch_options())
    return demo


def test_the_board_keeps_its_promises_at_both_widths(chromium, tmp_path):
    """Issue 31 item 6, on the board a first visitor meets (the official tables), at 1400 px with a mouse and on a
    390 px touch screen: (a) a click or tap on a metric's header sorts by it, best first, as Sort does, and Rank's
    sorts back; (b) a link to a model's page shows that model's card or a loading note, never another model's, and
    a name the board lacks says so; (c) with Details on, no header breaks inside a word and the Note can be read
    beside its model; (d) the official rows' access and training data filter them, and a filter leaving none says
    so; (f) a header's explanation names a page of the board, and on a touch screen a tap shows it, linking there;
    (g) on a phone the filters are closed and the table starts near the top (about 1,220 px down before)."""
    from rexrank.board.page import CONTROLS_LABEL, DETAILS_LABEL, LOADING

    board = sources.read_board(None)
    tips = about.metric_tooltips()

    def names(dataset="rexgradient", **how):  # the models as views.table orders them
        return list(views.export(board, dataset, "findings", **how)["model"])

    demo = _official_app()
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                touch = width == 390
                page = browser.new_page(viewport={"width": width, "height": 900}, has_touch=touch)

                def press(locator, touch=touch):
                    locator.tap() if touch else locator.click()

                def header(title, page=page):
                    return page.locator(".ranked th:visible").filter(has_text=title).first

                page.goto(demo.local_url)
                rows = _wait_for(page, lambda rows: len(rows) >= 10)
                assert [r[2] for r in rows] == names()[:len(rows)]
                # (g) the filters: open on a desktop, closed on a phone, and the table near the top
                toggle = page.locator("#view-controls > .label-wrap")
                first = page.locator(".ranked [role=gridcell]:visible").first.bounding_box()["y"]
                if touch:
                    deadline = time.monotonic() + 10
                    while "open" in toggle.get_attribute("class") and time.monotonic() < deadline:
                        page.wait_for_timeout(100)
                    assert "open" not in toggle.get_attribute("class") and not page.get_by_label(
                        "Search model or institution").is_visible()
                    first = page.locator(".ranked [role=gridcell]:visible").first.bounding_box()["y"]
                    assert first < 750, first  # 1,222 px before: title, tabs, Dataset, then the table
                else:
                    assert "open" in toggle.get_attribute("class") and first < 700
                page.screenshot(path=tmp_path / f"promises-{width}-first.png", full_page=True)

                # (f) what a header explains, and where that is written: a page of the board, not a repository path
                green = header("GREEN")
                assert green.get_attribute("title") == tips["GREEN"] and "docs/" not in tips["GREEN"]
                assert "About tab" in tips["GREEN"]
                # (a) a click (a tap) on a metric's header sorts by it, best first
                press(green)
                sort = page.locator("#sort-by input")
                want = names(sort_by="green")
                rows = _wait_for(page, lambda rows, w=want: [r[2] for r in rows] == w[:len(rows)] and len(rows) >= 10)
                assert [r[2] for r in rows] == want[:len(rows)] and want != names()
                assert sort.input_value() == "GREEN"
                assert header("GREEN").get_attribute("data-rexrank-sorted") == ""  # the order shown is marked
                assert header("BLEU").get_attribute("data-rexrank-sorted") is None
                tip = page.locator("#rexrank-tip")
                if touch:  # nothing hovers on a touch screen: the tap shows the header's text, linking the page
                    tip.wait_for(state="visible")
                    assert tip.inner_text().startswith(tips["GREEN"])
                    box = tip.bounding_box()
                    assert box["x"] >= 0 and box["x"] + box["width"] <= width
                    page.screenshot(path=tmp_path / f"promises-{width}-tap-header.png", full_page=False)
                    link = tip.get_by_role("link", name="Open the About tab")
                    assert link.get_attribute("href") == "?tab=about"
                    press(link)
                    page.get_by_role("tab", name="About", selected=True).wait_for()
                    page.get_by_role("heading", name="Metrics").wait_for()
                    page.goto(demo.local_url)
                    _wait_for(page, lambda rows: len(rows) >= 10)
                    press(header("GREEN"))
                    _wait_for(page, lambda rows, w=want: [r[2] for r in rows] == w[:len(rows)] and len(rows) >= 10)
                else:  # a mouse hovers (the title above), a click only sorts
                    assert tip.count() == 0 or not tip.is_visible()
                press(header("Rank"))
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == names()[:len(rows)] and len(rows) >= 10)
                assert [r[2] for r in rows] == names()[:len(rows)] and sort.input_value() == "Rank (1/RadCliQ-v1)"

                # (d) the official rows' access and training data, and a filter that leaves none says so
                if touch:  # on a phone from a link: the filters it sets stay in sight
                    page.goto(demo.local_url + "?access=api")
                    rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["GPT4V"])
                    assert "open" in toggle.get_attribute("class")
                else:
                    page.get_by_role("combobox", name="Access", exact=True).click()
                    page.get_by_role("option", name="API", exact=True).click()
                    rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["GPT4V"])
                assert [r[2] for r in rows] == names(filters=views.Filters(access="api")) == ["GPT4V"]
                page.get_by_role("combobox", name="Trained on MIMIC-CXR", exact=True).click()
                page.get_by_role("option", name="yes", exact=True).click()
                says = ("No row matches Access: API and Trained on MIMIC-CXR: yes: ReXGradient, Findings has 25 rows; "
                        "set the filters to any to see them.")
                assert _empty_note(page, says) == says
                assert page.locator(".ranked [role=gridcell]:visible").count() == 0
                page.screenshot(path=tmp_path / f"promises-{width}-no-rows.png", full_page=True)
                page.get_by_role("combobox", name="Access", exact=True).click()
                page.get_by_role("option", name="any", exact=True).click()
                page.get_by_role("combobox", name="Trained on MIMIC-CXR", exact=True).click()
                page.get_by_role("option", name="no", exact=True).click()
                want = names(filters=views.Filters(mimic="no"))
                assert "BiomedGPT-IU" in want and "CheXpertPlus-CheX" in want and len(want) == 5
                rows = _wait_for(page, lambda rows, want=want: [r[2] for r in rows] == want)
                assert [r[2] for r in rows] == want and not page.locator(".board-empty:visible").count()

                # (c) Details on: every header's words whole, and the Note read beside its model
                if not page.get_by_label(DETAILS_LABEL).is_visible():
                    page.get_by_text(CONTROLS_LABEL).click()
                page.get_by_label(DETAILS_LABEL).check()
                deadline = time.monotonic() + 20
                while "Note" not in [h.strip() for h in page.locator(".ranked th:visible").all_inner_texts()] \
                        and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                heads = page.locator(".ranked th:visible")
                texts = [h.strip() for h in heads.all_inner_texts()]
                assert texts[-len(views.DETAILS):] == [*views.DETAILS[:-1], "Note"] or "Note" in texts[-1]
                for h in heads.all():
                    content = h.locator(".header-content")
                    assert set(content.evaluate(LINES_PER_WORD)) == {1}, content.inner_text()  # no word broken
                    assert content.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), content.inner_text()  # nor cut
                rows = _wait_for(page, lambda rows: len(rows) == 5)
                access, trained = texts.index("Access"), texts.index("Trained on")
                table = {r[2]: r for r in rows}
                assert table["BiomedGPT-IU"][access] == "open weights"
                assert table["BiomedGPT-IU"][trained].startswith("IU X-ray, MedICat")
                note_head = heads.nth(len(texts) - 1)
                assert note_head.bounding_box()["width"] >= 300  # a note is read in a column, not a letter a line
                if touch:  # the table scrolls sideways to the Note's start (its 380 px fill a phone's screen)
                    note_head.evaluate("e => e.scrollIntoView({inline: 'start', block: 'nearest'})")
                else:  # to its end: the first three columns stay in sight
                    assert page.locator(".ranked:visible").first.evaluate(SCROLL_TABLE_RIGHT)
                page.wait_for_timeout(300)
                box = note_head.locator(".header-content").bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, box  # its header, whole in sight
                if not touch:  # on a desktop the rank, its range and the model stay in sight beside the note
                    model = page.locator(".ranked [role=row]:visible").filter(has_text="BiomedGPT-IU").locator(
                        "[role=gridcell]").nth(2)
                    mbox = model.bounding_box()
                    assert 0 <= mbox["x"] and mbox["x"] + mbox["width"] <= width
                    at = model.evaluate("e => { const r = e.getBoundingClientRect(); return e.contains("
                                        "document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)); }")
                    assert at, "the model's cell is covered by the cells scrolled under it"
                page.screenshot(path=tmp_path / f"promises-{width}-details-note.png", full_page=False)

                # (b) a link to a model's page: that model's card (or a loading note), never another model's
                page.goto(demo.local_url + "?tab=model&model=MedVersa")
                seen, values, deadline = set(), set(), time.monotonic() + 30
                while "MedVersa" not in seen and time.monotonic() < deadline:
                    seen |= {h.strip() for h in page.locator(".gradio-container h3:visible").all_inner_texts()}
                    chosen = page.get_by_label("Model", exact=True)
                    values.add(chosen.input_value() if chosen.count() else "")
                    if page.get_by_text(LOADING.strip("*")).first.is_visible():
                        seen.add("loading")
                    page.wait_for_timeout(50)
                assert "MedVersa" in seen and seen <= {"MedVersa", "loading"}, seen
                assert values <= {"", "MedVersa"}, values
                source = page.get_by_role("link", name="source").first
                assert source.get_attribute("href") == "https://huggingface.co/hyzhou/MedVersa_Internal"
                page.screenshot(path=tmp_path / f"promises-{width}-model-link.png", full_page=False)
                page.goto(demo.local_url + "?tab=model&model=Nobody")
                page.get_by_text("No model named Nobody on this board").wait_for()
                assert page.get_by_label("Model", exact=True).input_value() == ""
                page.screenshot(path=tmp_path / f"promises-{width}-model-unknown.png", full_page=False)
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()
            demo.close()


def test_a_column_writes_its_cis_one_way_at_both_widths(app, chromium, tmp_path):
    """Issue 31 item 6e: every metric column of the demo board (every row with CIs) writes them in one notation, `±`
    or `[low, high]`, on the leaderboard and on a model's page; cell by cell, 43 of its columns mixed the two."""
    client, repo, board = app
    rows = board[(board["dataset"] == "iu-xray") & (board["task"] == "findings")]
    cell_by_cell = {m: {("±" if "±" in t else "[") for v, lo, hi in zip(rows[m], rows[f"{m}_low"], rows[f"{m}_high"])
                        if "±" in (t := views.value_with_ci(v, lo, hi)) or "[" in t} for m in views.TITLES}
    assert any(len(kinds) == 2 for kinds in cell_by_cell.values())  # this view mixed them, cell by cell

    def one_way(page, titles):
        _rows(page)  # settled; then the first table's own (a model's page has its VQA section's below)
        table = page.locator(".board:visible").first
        heads = [" ".join(h.split()).rstrip("▾⋮").strip() for h in table.locator("th:visible").all_inner_texts()]
        cells = [[c.strip().replace("\xa0", " ") for c in row.locator("[role=gridcell]").all_inner_texts()]
                 for row in table.locator("[role=row]:visible").all()]
        cells = [row for row in cells if row]
        checked = 0
        for title in titles:
            at = next(i for i, h in enumerate(heads) if h.startswith(title))
            kinds = {("±" if "±" in r[at] else "[") for r in cells if "±" in r[at] or "[" in r[at]}
            assert len(kinds) <= 1, (title, [r[at] for r in cells])
            checked += bool(kinds)
        return checked

    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(client.src + "?dataset=iu-xray")
                _wait_for(page, lambda rows: len(rows) == 4)
                shown = [views.TITLES[m] for m in views.DEFAULT_METRICS]  # the columns a first view shows
                assert one_way(page, shown) == len(shown)
                page.screenshot(path=tmp_path / f"ci-notation-{width}.png", full_page=True)
                page.goto(client.src + "?tab=model&model=Demo-Careful")
                page.get_by_role("heading", name="Demo-Careful").wait_for()
                _wait_for(page, lambda rows: len(rows) == len(views.DATASET_TITLES) * len(views.TASKS))
                drawn = [views.TITLES[m] for m in DRAWN]  # a model's page: every metric it has
                assert one_way(page, drawn) == len(drawn)
                page.close()
        finally:
            browser.close()


def _vqa_name(cell: str) -> str:
    """A Model cell's markdown as the page shows it: the name, unescaped, without its link."""
    return re.sub(r"\\(.)", r"\1", re.sub(r"^\[(.*)\]\([^)]*\)$", r"\1", cell))


def test_the_vqa_tab_in_a_browser_at_both_widths(app, chromium, tmp_path):
    """A link opens the VQA tab sorted and filtered as it says; the rows are the table's, ReXrank's figures as
    published beside the generated row with its CI; on a 390 px phone rank, model and overall accuracy are whole in
    the first screen and no cell is cut."""
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    with chromium as browser:
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(client.src + "?tab=vqa&sort=presence")
                page.get_by_role("tab", name="VQA", selected=True).wait_for()
                want = vqa.vqa_table(frame, sort_by="presence")
                expect = [[r, _vqa_name(m), o.replace("\xa0", " ")] for r, m, o in
                          zip(want["Rank"], want["Model"], want["Overall"])]
                rows = _wait_for(page, lambda rows, e=expect: [r[:3] for r in rows] == e)
                assert [r[:3] for r in rows] == expect
                assert page.get_by_label("Sort by (best first)").filter(visible=True).first.input_value() == \
                    vqa.SORTS["presence"]
                heads = [" ".join(h.split()) for h in page.locator(".vqa th:visible").all_inner_texts()]
                assert heads[:4] == ["Rank", "Model", "Overall", "Source"] and all(c in heads for c in VQA_CATEGORIES)
                source = heads.index("Source")
                assert {r[source] for r in rows} == {views.SOURCES["imported"], views.SOURCES["generated"]}
                cut = page.locator(".vqa [role=gridcell]:visible").evaluate_all(
                    "es => es.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)")
                assert cut == []
                if width == 390:  # rank, model and overall whole in the phone's first screen
                    for cell in page.locator(".vqa [role=row]:visible").nth(2).locator("[role=gridcell]").all()[:3]:
                        box = cell.bounding_box()
                        assert box["x"] >= 0 and box["x"] + box["width"] <= width, cell.inner_text()
                page.screenshot(path=tmp_path / f"vqa-{width}.png", full_page=True)
                page.get_by_role("combobox", name="Source", exact=True).filter(visible=True).first.click()
                page.get_by_role("option", name=views.SOURCES["generated"]).click()
                page.wait_for_function("location.search.includes('vqa_source=generated')")
                kept = vqa.vqa_table(frame, sort_by="presence", source="generated")
                rows = _wait_for(page, lambda rows, k=kept: len(rows) == len(k))
                assert [r[1] for r in rows] == [_vqa_name(m) for m in kept["Model"]]
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()
