"""The RadRBench-CXR part of the embedded demo: synthetic items in the published layout, built by the real builder,
and two synthetic models whose outputs go through every answer form the parser reads."""

import json

import pandas as pd
import pytest

from rexrank.cli import main
from rexrank.demo import radrbench as rdemo
from rexrank.radrbench.answers import FAILURES, TASKS
from rexrank.radrbench.outputs import load_outputs
from rexrank.radrbench.score import load_items, score_outputs


def scored(tmp_path):
    items = load_items(rdemo.dataset(tmp_path / "radrbench-cxr"))
    return items, {m: score_outputs(items, load_outputs(rdemo.output_file(m), items), resamples=200)
                   for m in rdemo.MODELS}


def test_committed_files_are_what_the_generator_writes():
    for name, items in rdemo.FILES.items():
        assert json.loads((rdemo.HERE / name).read_text()) == items
    for model in rdemo.MODELS:
        lines = rdemo.output_file(model).read_text().splitlines()
        assert [json.loads(line) for line in lines] == rdemo.outputs(model)
    assert rdemo.models() == rdemo.MODELS


def test_every_task_type_and_several_sources(tmp_path):
    items, _ = scored(tmp_path)
    assert set(items["task"]) == set(TASKS)
    assert set(items["source"]) == {"mimic-cxr", "chexpert", "rsna", "ms-cxr-t"}
    assert items.groupby("task").size().min() >= 3
    assert items["original_report"].isna().all()  # no report text at all, synthetic or not


def test_the_two_models_cover_every_failure_and_separate(tmp_path):
    _, scores = scored(tmp_path)
    failures = {f for s in scores.values() for f in s.per_item["failure"].dropna()}
    assert failures == set(FAILURES)
    reasoner, guesser = (scores[m].rows.iloc[-1] for m in ("demo-reasoner", "demo-guesser"))
    assert (reasoner["source"], reasoner["task"]) == ("all", "all")
    by_task = scores["demo-reasoner"].rows.set_index(["source", "task"])
    assert by_task.loc[("all", "binary"), "items"] == 7 and by_task.loc[("all", "binary"), "accuracy"] == 1.0
    assert by_task.loc[("all", "temporal"), "correct"] == 3
    # the overall row: the option tasks (the free-text task's exact match has rows of its own)
    options = [scores[m].per_item[scores[m].per_item["task"] != "multi_no_option"] for m in ("demo-reasoner",
                                                                                           "demo-guesser")]
    assert (reasoner["correct"], guesser["correct"]) == tuple(int(o["correct"].sum()) for o in options) == (21, 7)
    assert reasoner["low"] > guesser["high"]


def test_readable_answer_forms_are_scored_right(tmp_path):
    """Letters, `A) Yes`, `Yes, ...`, option text, `Option A: ...`, multi letters reordered with spaces, `D and B and
    A`, a free finding list in another order, upper-case tags: each read as the model meant."""
    _, scores = scored(tmp_path)
    per_item = scores["demo-reasoner"].per_item.set_index(["config", "item_id"])
    assert per_item.loc[("mimic-cxr.multi", "[mimic-cxr] [demo-01]"), "answer"] == "A, C"  # " C ,  A "
    assert per_item.loc[("mimic-cxr.multi", "[mimic-cxr] [demo-03]"), "answer"] == "A, B, D"  # "D and B and A"
    assert per_item.loc[("mimic-cxr.multi_no_option", "[mimic-cxr] [demo-11]"), "correct"]  # "Cardiomegaly and edema."
    assert not per_item.loc[("mimic-cxr.multi_no_option", "[mimic-cxr] [demo-12]"), "correct"]  # one finding too many
    wrong = per_item[~per_item["correct"]]
    assert list(wrong.index) == [("mimic-cxr.multi_no_option", "[mimic-cxr] [demo-12]"),
                                 ("ms-cxr-t.temporal", "[ms-cxr-t] [demo-03]")]
    assert wrong["failure"].tolist()[1] == "unclosed_answer_tag"


@pytest.mark.slow
def test_demo_prints_and_writes_radrbench_accuracy(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--metrics", "bleu2"]) == 0
    out = capsys.readouterr().out.split("== RadRBench-CXR")[1]
    assert "all (options)                  Demo-Reasoner 0.955" in out  # 21 of the 22 option-task items
    assert "Demo-Guesser answer failures: ambiguous 1, empty_output 1, no_answer_tag 2, not_an_option 2" in out
    result = json.loads((tmp_path / "demo-reasoner/radrbench/radrbench-cxr.accuracy.json").read_text())
    assert result["model"] == "Demo-Reasoner" and result["rows"][-1]["accuracy"] == 21 / 22
    assert len(pd.read_parquet(tmp_path / "demo-guesser/radrbench/radrbench-cxr.per_item.parquet")) == 25


def test_the_shipped_demo_folder_scores_and_builds_as_it_is(tmp_path, capsys):
    """`score-radrbench --dataset` on the demo's folder of published-layout files reads them as the builder does
    (it said 'no build_info.json'), and `build-dataset radrbench-cxr` on it leaves models.json aside (it failed on
    it), saying so."""
    model = next(iter(rdemo.MODELS))
    built = tmp_path / "built"
    assert main(["build-dataset", "radrbench-cxr", "--source", str(rdemo.HERE), "--out", str(built)]) == 0
    assert "models.json" in capsys.readouterr().err  # said, as a warning
    for dataset, out in ((rdemo.HERE, tmp_path / "as-shipped"), (built, tmp_path / "as-built")):
        assert main(["score-radrbench", "--predictions", str(rdemo.output_file(model)), "--dataset", str(dataset),
                     "--out", str(out), "--resamples", "50"]) == 0
    shipped, made = (json.loads(next(out.rglob("*.accuracy.json")).read_text())["rows"]
                     for out in (tmp_path / "as-shipped", tmp_path / "as-built"))
    assert shipped == made and len(shipped) > 1
