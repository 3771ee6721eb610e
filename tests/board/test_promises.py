"""What the board says it does, without a browser (issue 31 item 6; the browser half is in test_app.py): one CI
notation a column, what counts as trained on MIMIC-CXR, the official rows' access and training data with their
sources, and a Space that builds without torch."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from rexrank.board import about, model_page, sources, views


def test_a_column_of_cis_takes_one_notation():
    symmetric = [(0.5, 0.48, 0.52), (0.6, 0.55, 0.65), (0.7, None, None), (None, None, None)]
    assert views.ci_column(symmetric) == ["0.500 ± 0.020", "0.600 ± 0.050", "0.700", ""]
    lopsided = [(0.5, 0.48, 0.52), (0.6, 0.50, 0.65)]
    assert views.ci_column(lopsided) == ["0.500 [0.480, 0.520]", "0.600 [0.500, 0.650]"]  # not 0.500 ± 0.020
    assert views.ci_column([(float("nan"), 0.1, 0.2), (0.3, float("nan"), 0.4)]) == ["", "0.300"]
    # a cell alone still reads as before
    assert views.value_with_ci(0.6, 0.5, 0.65) == "0.600 [0.500, 0.650]" and views.value_with_ci(0.5, 0.48, 0.52) == (
        "0.500 ± 0.020")


@pytest.mark.slow
def test_the_tables_write_each_columns_cis_one_way(tmp_path):
    board = sources.read_board(sources.DEMO)
    for dataset in views.DATASET_TITLES:
        for task in views.TASKS:
            shown = views.table(board, dataset, task, metrics=tuple(views.TITLES), details=False)
            for title in views.TITLES.values():
                kinds = {"±" if "±" in c else "[" for c in shown[title] if "±" in c or "[" in c}
                assert len(kinds) <= 1, (dataset, task, title, shown[title].tolist())
    numbers = model_page.model_numbers(model_page.model_bars(board, "Demo-Careful"))
    for title in views.TITLES.values():
        assert len({"±" if "±" in c else "[" for c in numbers[title] if c}) == 1, numbers[title].tolist()


def test_trained_on_mimic_means_mimic_cxr_not_another_mimic():
    assert [views.trained_on_mimic(t) for t in (
        "MIMIC-CXR", "mimic_cxr, iu-xray", "MIMIC-CXR-JPG", "MIMIC", "IU X-ray, MIMIC-III clinical notes",
        "MIMIC-IV-ED", "CheXpert Plus", "", None)] == ["yes", "yes", "yes", "yes", "no", "no", "no", "unknown",
                                                      "unknown"]


def test_the_official_rows_say_how_each_model_can_be_had_and_what_it_learnt_from():
    board = sources.read_board(None)
    models = board.drop_duplicates("model").set_index("model")
    assert models.loc["GPT4V", "access"] == "api" and models.loc["GPT4V", "trained_on"] == ""
    assert models.loc["MAIRA-2", "trained_on"] == "MIMIC-CXR, PadChest, USMix (private)"
    assert models.loc["MAIRA-2", "trained_on_source"] == "https://huggingface.co/microsoft/maira-2"
    assert models.loc["RadPhi3.5Vision", "access"] == "" and models.loc["UniRG-CXR", "access"] == ""
    # every other model's page gave one of the two: no filter leaves ReXrank's tables empty any more
    unknown_access = set(models.index[models["access"] == ""])
    assert unknown_access == {"RadPhi3.5Vision", "UniRG-CXR"}
    mimic = models["trained_on"].map(views.trained_on_mimic)
    assert set(mimic.index[mimic == "no"]) == {"BiomedGPT-IU", "CheXpertPlus-CheX", "CheXpertPlus_CheX",
                                               "Cvt2distilgpt2-IU", "MoERad-IU", "VLCI-IU"}  # (the tables spell both)
    assert set(mimic.index[mimic == "unknown"]) == {"CXRMate-RRG24", "GPT4V", "MedGemma", "MedVersa",
                                                    "RadPhi3.5Vision"}
    for filters in (views.Filters(access="open-weights"), views.Filters(access="api"), views.Filters(mimic="yes"),
                    views.Filters(mimic="no"), views.Filters(access="unknown")):
        assert not views.table(board, "mimic-cxr", "findings", filters=filters).empty, filters
    none = views.Filters(access="api", mimic="yes")
    assert views.no_rows(board, "mimic-cxr", "findings", filters=none).startswith(
        "No row matches Access: API and Trained on MIMIC-CXR: yes: MIMIC-CXR, Findings has 25 rows")


@pytest.mark.slow
def test_the_model_page_cites_what_says_so_and_a_submissions_card_cites_nothing(tmp_path):
    board = sources.read_board(None)
    card = model_page.model_card(board, "MAIRA-2")
    assert "- **Access:** open weights ([source](https://huggingface.co/microsoft/maira-2))" in card
    assert "- **Trained on:** MIMIC\\-CXR\\, PadChest\\, USMix \\(private\\) ([source](https://huggingface.co/" in card
    assert "- **Trained on:** unknown\n" in model_page.model_card(board, "GPT4V") + "\n"
    hostile = board.copy()
    hostile["access_source"] = "javascript:alert(1)"
    assert "javascript" not in model_page.model_card(hostile, "MAIRA-2")  # only a safe http(s) link is a link
    demo = sources.read_board(sources.DEMO)
    assert (demo.loc[demo["provenance"] != "imported", ["access_source", "trained_on_source"]] == "").all().all()


def test_the_header_text_names_a_page_of_the_board_not_a_repository_path():
    assert list(about.metric_tooltips()) == list(views.TITLES.values())  # every column a visitor can tick has one
    for title, tip in about.metric_tooltips().items():
        assert "docs/" not in tip and ".md" not in tip and "About tab" in tip, title
        assert tip.lower().count("higher is better") == 1, tip  # 1/RadCliQ-v1's said it three times
        assert tip.count("1 / the mean") == title.startswith("1/"), tip
    script = about.header_tooltips_script()
    assert '"?tab=about"' in script and "rexrank-tip" in script and "header-sort" in script
    assert about.header_sorts() == {"Rank": "rank", **{t: m for m, t in views.TITLES.items()}}


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_space_builds_without_torch(tmp_path):
    """space/requirements.txt installs no torch: the app's start must not need it (the About tab's example signature
    once made a scorer, importing torch: 1.3 s of every start here, and a crash where it is not installed)."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from rexrank.board.app import build, launch_options\n"
            "build(None, 3600); launch_options(); print('built')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path)})
    assert done.returncode == 0 and done.stdout.strip() == "built", done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("width", ["DETAIL_WIDTHS", "METRIC_WIDTH"])
def test_with_details_every_column_has_a_width(width):
    from rexrank.board import answers, page

    shown = views.table(sources.read_board(None), "mimic-cxr", "findings", details=True)
    frame = answers.frame(shown)
    assert len(frame.column_widths) == len(shown.columns) and "details" in frame.elem_classes
    assert isinstance(getattr(page, width), dict | str)
    assert pd.Series(frame.column_widths).str.endswith("px").all()
