"""Several models' results share one --out folder: each result's files carry its model's name, so scoring model B
after model A into the same folder keeps A's; the board, submit and merge read every model's there."""

import json

import pytest

from rexrank import demo
from rexrank.board import sources
from rexrank.cli import main
from rexrank.results import Result, result_files, result_name, result_paths
from rexrank.submission import collect


def score(out, system, name, *extra, task="findings"):
    return main(["score", "--predictions", str(demo.predictions(system, task)), "--dataset", str(demo.DATASET),
                 "--task", task, "--metrics", "bleu2", "--out", str(out), "--quiet", "--model-name", name,
                 "--dataset-name", "mimic-cxr", *extra])


def test_a_second_model_into_the_same_out_keeps_the_first(tmp_path, capsys):
    out = tmp_path / "same"
    assert score(out, "demo-careful", "modelA") == 0
    first = Result.read(result_paths(out, "mimic-cxr", "findings", "modelA")[0]).metrics["bleu2"].value
    assert score(out, "demo-template", "modelB") == 0
    said = capsys.readouterr().out
    assert f"wrote {out / 'mimic-cxr.findings.modelB.json'}, {out / 'mimic-cxr.findings.modelB.per_study.parquet'}" \
        in said
    kept = {Result.read(p).model.name: Result.read(p).metrics["bleu2"].value for p in result_files(out)}
    assert kept["modelA"] == first and kept["modelB"] != first and len(kept) == 2
    # every model kept there is a row on the local board
    board = sources.read_board(out)
    assert {"modelA", "modelB"} <= set(board[board["provenance"] == sources.UNVERIFIED]["model"])


def test_two_names_that_make_one_file_name_are_refused_before_scoring(tmp_path, capsys):
    out = tmp_path / "same"
    assert score(out, "demo-careful", "Model A") == 0
    assert score(out, "demo-template", "Model-A") == 2
    err = capsys.readouterr().err
    assert err == (f"rexrank: error: {out / 'mimic-cxr.findings.Model-A.json'} holds the result of model 'Model A', "
                   "which model 'Model-A' would replace (their names make the same file name): give this one another "
                   "--model-name, or its own --out\n")
    assert [Result.read(p).model.name for p in result_files(out)] == ["Model A"]


def test_a_result_under_the_earlier_name_is_read_and_replaced_by_its_own_model_only(tmp_path):
    out = tmp_path / "old"
    assert score(out, "demo-careful", "modelA") == 0 and score(out, "demo-careful", "modelB") == 0
    for model in ("modelA", "modelB"):  # as rexrank 0.1 named them: no model in the name (B's in a folder of its own)
        folder = out if model == "modelA" else out / "b"
        folder.mkdir(exist_ok=True)
        for new in result_paths(out, "mimic-cxr", "findings", model):
            new.rename(folder / new.name.replace(f".{model}", ""))
    assert result_name("mimic-cxr.findings.json") == ("mimic-cxr", "findings", "")
    assert result_name("mimic-cxr.findings.GPT-4.1.json") == ("mimic-cxr", "findings", "GPT-4.1")
    assert result_name("mimic-cxr.findings.modelA.shard-0-of-2.json") is None
    assert len(sources.read_board(out).query("provenance == @sources.UNVERIFIED")) == 2
    assert score(out, "demo-template", "modelA") == 0  # A again: its earlier file is superseded, not kept beside
    assert [p.name for p in result_files(out)] == ["mimic-cxr.findings.modelA.json"]
    assert not (out / "mimic-cxr.findings.per_study.parquet").exists()


def test_submit_sends_one_model_of_a_shared_folder(tmp_path, capsys):
    out = tmp_path / "same"
    assert score(out, "demo-careful", "modelA") == 0 and score(out, "demo-template", "modelB") == 0
    capsys.readouterr()
    base = ["submit", "--results", str(out), "--name", "My Model", "--dry-run"]
    assert main(base) == 2
    assert capsys.readouterr().err == (f"rexrank: error: {out}: results of 2 models ('modelA', 'modelB'): choose the "
                                       "one to send with --model-name NAME (the name rexrank score recorded)\n")
    assert main([*base, "--model-name", "modelC"]) == 2
    assert "no result of a model named 'modelC'; it holds 'modelA', 'modelB'" in capsys.readouterr().err
    assert main([*base, "--model-name", "modelB"]) == 0
    assert "results/mimic-cxr.findings.json" in capsys.readouterr().out  # the submission's own names, unchanged
    sent = {piece.path: piece.source for piece in collect(out, "modelB")}
    assert sent == dict(zip(("results/mimic-cxr.findings.json", "per_study/mimic-cxr.findings.parquet",
                             "predictions/mimic-cxr.findings.jsonl"), result_paths(out, "mimic-cxr", "findings",
                                                                                   "modelB")))


@pytest.mark.parametrize("model", ["modelA", "a model/with:odd chars"])
def test_a_sharded_run_merges_into_its_models_file(tmp_path, capsys, model):
    out = tmp_path / "shards"
    for i in range(2):
        assert score(out, "demo-careful", model, "--shard", f"{i}/2") == 0
    assert score(out, "demo-template", "modelB") == 0  # another model's result beside the shards
    shards = sorted(out.glob("*.shard-*.parquet"))
    assert len(shards) == 2 and all(".findings." in p.name for p in shards)
    assert main(["merge", *map(str, shards), "--out", str(out)]) == 0
    merged = result_paths(out, "mimic-cxr", "findings", model)[0]
    assert json.loads(merged.read_text())["model"]["name"] == model
    assert {Result.read(p).model.name for p in result_files(out)} == {model, "modelB"}


def test_one_models_two_task_files_are_one_model_by_default():
    from pathlib import Path

    from rexrank.results import default_model_name

    names = {p: default_model_name(Path(p)) for p in ("mymodel.findings.jsonl", "mymodel_findings_impression.csv",
                                                       "mymodel-findings.json", "findings.jsonl", "mymodel.jsonl")}
    assert names == {"mymodel.findings.jsonl": "mymodel", "mymodel_findings_impression.csv": "mymodel",
                     "mymodel-findings.json": "mymodel", "findings.jsonl": "findings", "mymodel.jsonl": "mymodel"}
