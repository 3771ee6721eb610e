"""The board's data shaping, without Gradio: ranking view, CIs as text, search, hostile names, overview, a model's
numbers."""

import json

import pandas as pd
from fixtures.board import result, results_repo

from rexrank.backend.aggregate import aggregate
from rexrank.leaderboard import model_cell, model_scores, overview, table, value_with_ci


def board(tmp_path):
    repo = results_repo(tmp_path)
    hostile = repo / "submissions" / "lab-x"
    (hostile / "results").mkdir(parents=True)
    result("<script>alert(1)</script> **Bold** | pipe", 0.95).write(hostile / "results" / "mimic-cxr.findings.json")
    (hostile / "submission.json").write_text(json.dumps({"name": "<script>alert(1)</script> **Bold** | pipe",
                                                         "url": "javascript:alert(1)"}))
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
    assert shown["Source"].tolist()[1] == "imported" and shown["Source"].tolist()[0] == "verified"
    assert shown["Trained on"].tolist()[:2] == ["mimic-cxr", ""]  # from the submission's card
    assert shown["BLEU"].tolist() == [""] * 5  # a metric a row lacks is blank, never 0
    assert "RadCliQ-v1 made as radcliq_v1:2" in shown["Note"].tolist()[-1]


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


def test_five_thousand_rows_shape_quickly(tmp_path):
    many = pd.concat([board(tmp_path)] * 1000, ignore_index=True)
    assert len(table(many, "mimic-cxr", "findings")) == 5000


def pytest_approx(x):
    import pytest

    return pytest.approx(x)
