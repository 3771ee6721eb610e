"""The board's data shaping, without Gradio: ranking view, CIs as text, search, hostile names, overview, a model's
numbers, bars and card, and how stable each rank is given the CIs."""

import json

import pandas as pd
import pytest
from conftest import ROOT
from fixtures.board import result, results_repo, reviewed

from rexrank.board.aggregate import aggregate
from rexrank.board.model_page import model_bars, model_card, model_names, model_numbers, model_scores
from rexrank.board.radrbench import radrbench_bars, radrbench_table
from rexrank.board.schema import COLUMNS, RADRBENCH_COLUMNS, empty_board
from rexrank.board.sources import DEMO, read_board, read_radrbench
from rexrank.board.views import TITLES, model_cell, overview, rank_ranges, table, value_with_ci


def board(tmp_path):
    repo = results_repo(tmp_path)
    hostile = repo / "submissions" / "lab-x"
    (hostile / "results").mkdir(parents=True)
    result("<script>alert(1)</script> **Bold** | pipe", 0.95).write(hostile / "results" / "mimic-cxr.findings.json")
    (hostile / "submission.json").write_text(json.dumps({"name": "<script>alert(1)</script> **Bold** | pipe",
                                                         "url": "javascript:alert(1)"}))
    reviewed(repo, "lab-x", {"mimic-cxr.findings": (hostile / "results" / "mimic-cxr.findings.json").read_bytes()})
    return aggregate(repo)


def test_cis_are_shown_as_plus_minus_or_an_interval_and_missing_is_blank():
    assert value_with_ci(0.9191, 0.8991, 0.9391) == "0.919 ± 0.020"
    assert value_with_ci(0.9191, 0.85, 0.93) == "0.919 [0.850, 0.930]"
    assert value_with_ci(None, None, None) == "" and value_with_ci(float("nan"), 0.1, 0.2) == ""
    assert value_with_ci(0.5, None, None) == "0.500"


def test_the_table_ranks_by_inverse_radcliq_with_unranked_rows_last(tmp_path):
    shown = table(board(tmp_path), "mimic-cxr", "findings")
    assert shown["Rank"].tolist() == ["1", "2", "3", "4", ""]
    assert shown["1/RadCliQ-v1"].tolist()[:2] == ["1.100 ± 0.100", "1.000"]  # imported rows carry no CI
    assert shown["Source"].tolist()[:2] == ["re-scored by maintainers", "as published, no CI"]
    assert shown["Trained on"].tolist()[:2] == ["mimic-cxr", ""]  # from the submission's card
    assert shown["BLEU"].tolist() == [""] * 5  # a metric a row lacks is blank, never 0
    assert "RadCliQ-v1 made as radcliq_v1:2" in shown["Note"].tolist()[-1]


def test_sort_by_a_metric_orders_by_its_number_and_keeps_the_rank(tmp_path):
    full = board(tmp_path)
    full.loc[full["model"] == "A", "radcliq_v1"] = 1.05  # 1.05 > 1.0 > 0.95, which text sorts the other way
    shown = table(full, "mimic-cxr", "findings", sort_by="radcliq_v1")
    assert shown["Model"].tolist()[:4] == ["C", "B", "A", "Official D"]  # C: 1.5, unranked (another signature)
    assert shown["Rank"].tolist()[:3] == ["", "1", "4"]  # the rank as aggregated, whatever the order
    by_bleu = table(full, "mimic-cxr", "findings", sort_by="bleu2")  # no row has BLEU: blanks keep the rank order
    assert by_bleu["Rank"].tolist() == ["1", "2", "3", "4", ""]
    with pytest.raises(ValueError, match="expected rank or one of bleu2"):
        table(full, "mimic-cxr", "findings", sort_by="RadCliQ")


def test_search_filters_on_model_and_institution(tmp_path):
    full = board(tmp_path)
    assert table(full, "mimic-cxr", "findings", search="official")["Model"].tolist() == ["Official D"]
    assert len(table(full, "mimic-cxr", "findings", search="LAB")) == 5  # every model's institution is Lab
    assert table(full, "mimic-cxr", "findings", search="nobody").empty


def test_names_with_html_or_markdown_are_text_and_unsafe_links_are_dropped(tmp_path):
    cell = table(board(tmp_path), "mimic-cxr", "findings").set_index("Rank").loc["3", "Model"]
    assert "<script>" not in cell and "&lt;script&gt;" in cell and "\\*\\*Bold\\*\\*" in cell and "\\|" in cell
    assert "javascript" not in cell and "](" not in cell
    assert model_cell("CXR-Gen", "https://example.org/model") == "[CXR\\-Gen](https://example.org/model)"


def test_overview_ranks_models_across_datasets(tmp_path):
    view = overview(board(tmp_path), "findings")
    assert view["Model"].tolist()[:3] == ["B", "E", "Official D"]  # mean ranks 1, 1 (ties by name), 2
    assert view["Mean rank"].is_monotonic_increasing and "C" not in view["Model"].tolist()  # C is unranked
    by_model = view.set_index("Model")
    assert by_model.loc["E", "IU-Xray"] == "1" and by_model.loc["E", "MIMIC-CXR"] == ""


def test_a_models_numbers_in_long_form_for_its_bars(tmp_path):
    numbers = model_scores(board(tmp_path), "B")
    assert numbers.to_dict("records") == [{"dataset": "MIMIC-CXR", "task": "Findings", "metric": "1/RadCliQ-v1",
                                           "value": 1.1, "low": pytest_approx(1.0), "high": pytest_approx(1.2)}]


def test_a_models_bars_are_ordered_with_whiskers_only_where_there_is_a_ci(tmp_path):
    full = board(tmp_path)
    b = model_bars(full, "B").to_dict("records")
    assert len(b) == 1 and b[0]["group"] == "MIMIC-CXR · Findings" and b[0]["value"] == 1.1
    assert b[0]["err_low"] == pytest_approx(0.1) and b[0]["err_high"] == pytest_approx(0.1)
    imported = model_bars(full, "Official D")
    assert imported["value"].tolist() == [1.0] and imported[["err_low", "err_high"]].isna().all().all()
    assert model_numbers(model_bars(full, "B")).to_dict("records") == [
        {"Dataset": "MIMIC-CXR", "Task": "Findings", "1/RadCliQ-v1": "1.100 ± 0.100"}]

    careful = model_bars(read_board(DEMO), "Demo-Careful")  # every metric on every dataset and task, in ReXrank's order
    assert len(careful) == 8 * 4 * 2 and list(dict.fromkeys(careful["metric"])) == list(TITLES.values())
    assert careful["group"].tolist()[:3] == ["ReXGradient · Findings", "ReXGradient · Findings + Impression",
                                             "MIMIC-CXR · Findings"]
    assert (careful["err_low"] > 0).all() and (careful["err_high"] > 0).all()
    numbers = model_numbers(careful)
    assert numbers.columns.tolist() == ["Dataset", "Task", *TITLES.values()] and len(numbers) == 8
    assert model_bars(empty_board(), "B").empty and model_numbers(model_bars(empty_board(), "B")).empty


def test_a_models_card_is_safe_text_with_a_safe_link(tmp_path):
    full = board(tmp_path)
    hostile = next(m for m in full["model"] if "<script>" in m)
    card = model_card(full, hostile)
    assert "<script>" not in card and "&lt;script&gt;" in card and "javascript" not in card
    assert "**URL:** —" in card and "**Institution:** Lab" in card
    b = model_card(full, "B")
    assert "**Date:** 2026\\-11\\-20" in b and "**Trained on:** mimic\\-cxr" in b
    assert "**Numbers:** predictions re-scored by the maintainers, on 1 dataset and task pair" in b
    assert "**Numbers:** imported as published, on 1 dataset and task pair" in model_card(full, "Official D")
    careful = model_card(read_board(DEMO), "Demo-Careful")
    assert "(https://example.org/careful)" in careful
    assert "**Numbers:** generated by the maintainers from the model, on 8 dataset and task pairs" in careful
    assert model_card(full, "nobody").startswith("No numbers for")


def test_model_names_best_mean_rank_first_unranked_last(tmp_path):
    full = board(tmp_path)
    names = model_names(full)
    assert names[:3] == ["B", "E", "Official D"] and names[-2:] == ["A", "C"]
    assert model_names(empty_board()) == []
    assert model_names(full, radr_table())[-2:] == ["<b>B</b>", "Model A"]  # RadRBench-CXR only: last


def _hand_made(cis):
    """A board of one dataset and task from (model, rank, value, low, high); rank None is an unranked row."""
    frame = pd.DataFrame([{"model": m, "dataset": "mimic-cxr", "task": "findings", "rank": r, "radcliq_v1": v,
                           "radcliq_v1_low": lo, "radcliq_v1_high": hi} for m, r, v, lo, hi in cis])
    return frame.reindex(columns=list(dict.fromkeys([*COLUMNS, "rank", *frame.columns])))


def test_rank_ranges_from_overlapping_cis():
    hand = _hand_made([("A", 1, 0.95, 0.90, 1.00), ("B", 2, 0.90, 0.85, 0.95), ("D", 3, 0.78, None, None),
                       ("C", 4, 0.75, 0.70, 0.80), ("X", None, 0.92, 0.5, 1.5)])  # X unranked: not counted
    other = _hand_made([("Z", 1, 0.99, 0.98, 1.0)]).assign(dataset="iu-xray")  # another dataset: not counted
    ranges = rank_ranges(pd.concat([hand, other], ignore_index=True), "mimic-cxr", "findings")
    assert ranges["model"].tolist() == ["A", "B", "D", "C"]
    assert ranges["best"].tolist() == [1, 1, 3, 3] and ranges["worst"].tolist() == [2, 2, 4, 4]
    assert ranges["Rank range"].tolist() == ["1–2", "1–2", "3–4", "3–4"]  # D has no CI: its value is its interval

    apart = rank_ranges(_hand_made([("P", 1, 3, 2.9, 3.1), ("Q", 2, 2, 1.9, 2.1), ("R", 3, 1, 0.9, 1.1)]),
                        "mimic-cxr", "findings")
    assert apart["Rank range"].tolist() == ["1", "2", "3"]  # no overlaps: every rank certain
    touching = rank_ranges(_hand_made([("P", 1, 0.65, 0.6, 0.7), ("Q", 2, 0.55, 0.5, 0.6)]), "mimic-cxr", "findings")
    assert touching["Rank range"].tolist() == ["1–2", "1–2"]  # bounds that touch overlap
    assert rank_ranges(empty_board(), "mimic-cxr", "findings").empty


def test_the_table_shows_each_ranks_range_whatever_the_search(tmp_path):
    full = board(tmp_path)
    shown = table(full, "mimic-cxr", "findings")
    assert shown.columns.tolist()[:3] == ["Rank", "Rank range", "Model"]
    assert shown["Rank range"].tolist() == ["1–4", "1–4", "1–4", "1–4", ""]  # all four CIs meet 1.0; C unranked
    assert table(full, "mimic-cxr", "findings", search="official")["Rank range"].tolist() == ["1–4"]


def test_five_thousand_rows_shape_quickly(tmp_path):
    many = pd.concat([board(tmp_path)] * 1000, ignore_index=True)
    assert len(table(many, "mimic-cxr", "findings")) == 5000


def pytest_approx(x):
    import pytest

    return pytest.approx(x)


# -- RadRBench-CXR ---------------------------------------------------------------------------------------------------

def radr_rows(submission, model, per_task, url="https://example.org/m", institution="Lab"):
    """radrbench.parquet rows for one model: {(source, task): (items, correct, low, high)}, plus the all rows."""
    out = []
    for (source, task), (items, correct, low, high) in per_task.items():
        out.append({"submission": submission, "model": model, "institution": institution, "url": url,
                    "date": "2026-11-01", "source": source, "task": task, "items": items, "correct": correct,
                    "accuracy": correct / items, "low": low, "high": high,
                    "failures": '{"no_answer_tag": 2}' if (source, task) == ("all", "all") else "{}",
                    "missing_outputs": 0, "signature": "radrbench-accuracy:1"})
    return out


def radr_table():
    a = {("mimic-cxr", "binary"): (4, 3, 0.25, 1.0), ("rsna", "binary"): (2, 2, 1.0, 1.0),
         ("ms-cxr-t", "temporal"): (4, 1, 0.0, 0.75), ("all", "binary"): (6, 5, 0.5, 1.0),
         ("all", "temporal"): (4, 1, 0.0, 0.75), ("all", "all"): (10, 6, 0.3, 0.9)}
    b = {("mimic-cxr", "binary"): (4, 4, 1.0, 1.0), ("all", "binary"): (4, 4, 1.0, 1.0),
         ("all", "all"): (4, 4, 1.0, 1.0)}
    return pd.DataFrame(radr_rows("lab-a", "Model A", a) + radr_rows("lab-b", "<b>B</b>", b, url="javascript:x"))


def test_the_reasoning_view_ranks_by_radrscore_and_leaves_models_not_judged_blank():
    radr = radr_table().reindex(columns=list(RADRBENCH_COLUMNS))
    overall = (radr["model"] == "Model A") & (radr["source"] == "all") & (radr["task"] == "all")
    for part, value in (("radrscore", 0.7), ("completeness", 0.6), ("factuality", 0.8), ("effectiveness", 0.7)):
        radr.loc[overall, [part, f"{part}_low", f"{part}_high"]] = value, value - 0.05, value + 0.05
    radr.loc[overall, "radrscore_items"] = 8
    shown = radrbench_table(radr, "radrscore")
    assert shown.columns.tolist() == ["Rank", "Model", "Institution", "RadRScore", "Rc (completeness)",
                                      "Rf (factuality)", "Re (effectiveness)", "Judged items", "Accuracy"]
    assert shown["Rank"].tolist() == ["1", ""] and shown["Model"][0] == "[Model A](https://example.org/m)"
    assert shown.iloc[0, 3:8].tolist() == ["0.700 ± 0.050", "0.600 ± 0.050", "0.800 ± 0.050", "0.700 ± 0.050", "8"]
    assert shown.iloc[1, 3:8].tolist() == [""] * 5 and shown["Accuracy"][1] == "1.000 ± 0.000"


def test_radrbench_table_ranks_by_overall_accuracy_with_a_column_per_task_type():
    shown = radrbench_table(radr_table())
    assert shown.columns.tolist() == ["Rank", "Model", "Institution", "Overall", "Binary", "Temporal", "Items",
                                      "Unreadable"]
    assert shown["Rank"].tolist() == [1, 2]
    assert shown["Model"].tolist() == ["&lt;b&gt;B&lt;\\/b&gt;", "[Model A](https://example.org/m)"]  # no unsafe link
    assert shown["Overall"].tolist() == ["1.000 ± 0.000", "0.600 ± 0.300"]
    # one CI notation a column: 0.833's CI is not symmetric, so the column's every CI is [low, high]
    assert shown["Binary"].tolist() == ["1.000 [1.000, 1.000]", "0.833 [0.500, 1.000]"]
    assert shown["Temporal"].tolist() == ["", "0.250 [0.000, 0.750]"]  # not run: blank, never 0
    assert shown["Items"].tolist() == [4, 10] and shown["Unreadable"].tolist() == [2, 2]


def test_radrbench_table_by_source_and_search():
    shown = radrbench_table(radr_table(), view="source")
    assert shown.columns.tolist()[4:-2] == ["MIMIC-CXR · Binary", "RSNA · Binary", "MS-CXR-T · Temporal"]
    assert shown["RSNA · Binary"].tolist() == ["", "1.000 ± 0.000"]
    only = radrbench_table(radr_table(), search="model a")
    assert only["Model"].tolist() == ["[Model A](https://example.org/m)"] and only["Rank"].tolist() == [1]
    assert radrbench_table(radr_table().iloc[:0]).empty


def test_radrbench_bars_give_ci_whiskers_per_task_type():
    bars = radrbench_bars(radr_table(), "Model A")
    assert bars["task"].tolist() == ["Binary", "Temporal"]
    assert bars["err_low"].round(4).tolist() == [0.3333, 0.25] and bars["err_high"].round(4).tolist() == [0.1667, 0.5]


def test_the_demo_board_has_synthetic_radrbench_rows(tmp_path):
    shown = radrbench_table(read_radrbench(DEMO))
    assert [m.split("]")[0] for m in shown["Model"]] == ["[Demo\\-Reasoner", "[Demo\\-Guesser"]
    assert shown["Overall"].tolist()[0] == "0.920 [0.800, 1.000]" and shown["Unreadable"].tolist() == [1, 7]
    repo = results_repo(tmp_path)  # a folder without radrbench.parquet: its submissions, none with RadRBench-CXR
    assert read_radrbench(repo).empty


def test_the_about_tab_is_the_metric_registry_and_cites_the_docs_shipped_in_the_repo():
    from rexrank.board.about import about
    from rexrank.catalog import BOARD_METRICS
    from rexrank.official import HEADER
    from rexrank.scorers import metric_class

    text, docs = about(), (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "docs/metrics.md §" in line]
    # each title as ReXrank's published tables head it, 1/ where the scorer's statistic is 1/mean
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == list(HEADER[HEADER.index("BLEU"):])
    for metric, row in zip(BOARD_METRICS, rows):
        cls = metric_class(metric)
        assert cls.summary and cls.summary in row and cls.empty_prediction in row
        assert f"\n## {cls.section} " in docs, f"{metric} cites {cls.section}, which docs/metrics.md lacks"
    # BERTScore is rescaled with bert-score's baseline (docs/metrics.md §2): the hand-written text said the opposite.
    assert "rescaled with bert-score's baseline" in rows[1] and "no baseline" not in text
    assert "|boot:1000:seed=0|rexrank:" in text  # a real signature, made by the code that signs BLEU-2


def test_rows_without_a_ci_are_drawn_as_such_not_as_certain_ranks():
    from rexrank.board.figures import stability_figure

    def legend(board, dataset, task):
        figure = stability_figure(rank_ranges(board, dataset, task), "t")
        return [t.get_text() for t in figure.legends[0].get_texts()]

    assert legend(read_board(None), "mimic-cxr", "findings") == ["as published, no CI: how certain is unknown"]
    assert "as published, no CI: how certain is unknown" in legend(read_board(DEMO), "iu-xray", "findings")
    assert "rank certain" in legend(read_board(DEMO), "iu-xray", "findings")


def test_the_model_card_links_the_paper_a_submission_names():
    board = read_board(DEMO)
    board.loc[board["model"] == "Demo-Careful", "paper"] = "https://arxiv.org/abs/0000.00000"
    card = model_card(board, "Demo-Careful")
    assert "- **Paper:** [" in card and "](https://arxiv.org/abs/0000.00000)" in card  # its text escaped, a link
    board.loc[board["model"] == "Demo-Careful", "paper"] = "javascript:alert(1)"
    assert "- **Paper:** —" in model_card(board, "Demo-Careful")


def test_a_number_made_otherwise_than_the_published_figures_is_marked_with_how(tmp_path):
    from rexrank.reports import text_settings
    from rexrank.results import MetricResult
    from rexrank.signature import Signature

    repo = results_repo(tmp_path)
    made = result("F", 1.2)
    by_gpt = Signature("green", "1", models={"backend": "judge:gpt-4o:t=0:max_tokens=1024"},
                       settings=text_settings("findings"))  # on references as rexrank builds them
    made.metrics["green"] = MetricResult(0.4, 0.4, 0.3, 0.5, 10, "mean", signature=by_gpt)
    (repo / "submissions" / "lab-f" / "results").mkdir(parents=True)
    made.write(repo / "submissions" / "lab-f" / "results" / "mimic-cxr.findings.json")
    reviewed(repo, "lab-f", {"mimic-cxr.findings": made.to_json().encode()})
    shown = table(aggregate(repo), "mimic-cxr", "findings").set_index("Model")
    assert shown.loc["F", "GREEN"] == "0.400 ± 0.100 ≠"
    assert shown.loc["F", "Note"] == "≠ published: GREEN by judge:gpt-4o:t=0:max_tokens=1024, the published by " \
                                     "StanfordAIMI/GREEN-RadLlama2-7b"
    # the RadCliQ-v1 each row carries (a BLEU-2 component, no weights) is made as published: no mark, no note
    assert not any(cell.endswith("≠") for cell in shown["1/RadCliQ-v1"]) and shown.loc["B", "Note"] == ""


def test_the_demo_marks_a_number_made_otherwise_only_where_it_means_to():
    """The demo's judged numbers are signed as the published figures were made, but Demo-Shuffled's GREEN, asked of
    another judge: on every dataset and task, that is the one cell marked ≠, and its Note says how."""
    board = read_board(DEMO)
    for (dataset, task), _ in board.groupby(["dataset", "task"]):
        shown = table(board, dataset, task)
        marked = [(model, column) for column in TITLES.values() for model, cell in zip(shown["Model"], shown[column])
                  if cell.endswith("≠")]
        assert marked == [(model_cell("Demo-Shuffled", "https://example.org/shuffled"), "GREEN")], (dataset, task)
        notes = [n for n in shown["Note"] if n.startswith("≠")]
        assert notes == ["≠ published: GREEN by judge:gpt-4o:t=0:max_tokens=1024, the published by "
                         "StanfordAIMI/GREEN-RadLlama2-7b"]


def test_filters_keep_rows_by_access_training_data_and_source_and_links_are_safe(tmp_path):
    from rexrank.board.views import Filters, export

    repo = results_repo(tmp_path)
    cards = {"lab-a": {"name": "A", "access": "open-weights", "trained_on": ["MIMIC-CXR", "iu-xray"],
                       "paper": "https://arxiv.org/abs/2401.00001", "code": "https://github.com/lab/a"},
             "lab-b": {"name": "B", "access": "api", "trained_on": ["chexpert-plus"], "code": "javascript:alert(1)"},
             "lab-c": {"name": "C"}}
    for sub, card in cards.items():
        (repo / "submissions" / sub / "submission.json").write_text(json.dumps(card))
    board = aggregate(repo)

    def models(**kept):
        return table(board, "mimic-cxr", "findings", filters=Filters(**kept))["Model"].tolist()

    assert len(models()) == 4
    assert models(access="open-weights") == ["A"] and models(access="api") == ["B"]
    assert sorted(models(access="unknown")) == ["C", "Official D"]  # an imported row says nothing: unknown
    assert models(mimic="yes") == ["A"] and models(mimic="no") == ["B"]  # "MIMIC-CXR" in any case counts
    assert sorted(models(mimic="unknown")) == ["C", "Official D"]
    assert models(source="imported") == ["Official D"] and "Official D" not in models(source="verified")
    assert models(access="api", mimic="yes") == []
    with pytest.raises(ValueError, match="access 'open': expected one of"):
        Filters(access="open")

    shown = table(board, "mimic-cxr", "findings").set_index("Model")
    assert shown.loc["A", "Links"] == "[paper](https://arxiv.org/abs/2401.00001) · [code](https://github.com/lab/a)"
    assert shown.loc["B", "Links"] == "" and shown.loc["B", "Access"] == "API"  # an unsafe link is not shown at all
    assert shown.loc["C", "Access"] == "unknown"
    csv = export(board, "mimic-cxr", "findings", filters=Filters(access="open-weights"))
    assert csv["model"].tolist() == ["A"] and csv["code"].tolist() == ["https://github.com/lab/a"]


# The aggregate survives one bad file: a card or a RadRBench-CXR result that cannot be read is left out with its
# reason, as a bad result file already is; the board keeps every other row (the job then exits 1 naming the file).
BAD_CARDS = {"not-json": b'{"name": "A",', "a-list": b'["A"]', "a-number": b"7", "not-utf8": b'{"name": "\xff"}',
             "deep": b"[" * 100_000 + b"]" * 100_000, "nested": b'{"name": "A", "trained_on": [["x"]]}',
             "too-big": b'{"name": "' + b"A" * 100_000 + b'"}',
             "name-an-object": b'{"name": {"first": "A"}}', "trained-on-a-number": b'{"name": "A", "trained_on": 5}'}


@pytest.mark.parametrize("data", BAD_CARDS.values(), ids=BAD_CARDS.keys())
def test_a_card_that_cannot_be_read_leaves_out_its_submission_and_the_board_keeps_the_rest(tmp_path, data, capsys):
    from rexrank.backend.__main__ import main as backend

    repo = results_repo(tmp_path)
    (repo / "submissions" / "lab-a" / "submission.json").write_bytes(data)
    board = aggregate(repo)
    assert sorted(board["model"]) == ["B", "C", "E", "Official D"]  # everything but lab-a's row
    [reason] = board.attrs["unreadable"]
    assert reason.startswith("submissions/lab-a/submission.json: ") and reason.endswith("the submission is left out")
    assert len(reason) < 300  # the reason, not the file
    assert (repo / "leaderboard.parquet").is_file() and (repo / "radrbench.parquet").is_file()
    assert sorted(table(read_board(repo), "mimic-cxr", "findings")["Model"]) == ["B", "C", "Official D"]
    capsys.readouterr()
    assert backend(["aggregate", "--repo", str(repo)]) == 1
    assert capsys.readouterr().err == f"rexrank.backend: error: left out: {reason}\n"


def test_a_radrbench_result_that_cannot_be_read_is_left_out_and_the_other_models_stay(tmp_path):
    from rexrank.demo.board import demo_results_repo

    repo = demo_results_repo(tmp_path / "repo")
    good = aggregate(repo)
    radrbench = pd.read_parquet(repo / "radrbench.parquet")
    assert sorted(set(radrbench["submission"])) == ["demo-guesser", "demo-reasoner"] and not good.attrs["unreadable"]
    spoiled = repo / "submissions" / "demo-guesser" / "radrbench" / "radrbench-cxr.accuracy.json"
    for data, said in ((json.dumps({k: v for k, v in json.loads(spoiled.read_text()).items() if k != "rows"}),
                        "missing rows"), ('{"rows": ', "not valid JSON"), ("[]", "expected a JSON object")):
        spoiled.write_text(data)
        board = aggregate(repo)
        [reason] = board.attrs["unreadable"]
        assert reason.startswith("submissions/demo-guesser/radrbench/radrbench-cxr.accuracy.json: ") and said in reason
        assert reason.endswith("left out of the RadRBench-CXR board")
        pd.testing.assert_frame_equal(board, good)  # the main board is whole
        kept = radrbench[radrbench["submission"] == "demo-reasoner"].reset_index(drop=True)
        pd.testing.assert_frame_equal(pd.read_parquet(repo / "radrbench.parquet"), kept)


def test_the_demos_numbers_carry_each_metrics_own_statistic(tmp_path):
    """The crowd's synthetic rows (no per-study table) named FineRadScore's value a plain mean: the demo decided
    1/mean for RadCliQ-v1 alone. Each metric's statistic is now its scorer's, and a 1/mean value is 1 over its mean."""
    from rexrank.demo.board import demo_results_repo
    from rexrank.results import Result
    from rexrank.scorers import metric_class

    root = demo_results_repo(tmp_path / "repo", crowd=2)
    results = [Result.read(p) for p in sorted(root.glob("submissions/synthetic-*/results/*.json"))]
    assert results and all("fineradscore" in r.metrics for r in results)
    for made in results:
        for name, metric in made.metrics.items():
            assert metric.statistic == metric_class(name).statistic, (name, metric.statistic)
            if metric.statistic == "inverse_mean":
                # both rounded to 4 places: |value - 1/mean| <= 5e-5 + value^2 * 5e-5, under 1.2e-4 for values below 1.2
                assert metric.value == pytest.approx(1 / metric.mean, abs=1.2e-4), name
