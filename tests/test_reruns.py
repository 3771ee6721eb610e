"""Nothing replaced without a word (issue 46): a rerun into the same result keeps what it did not recompute when it
scored the same texts, and otherwise is refused naming the file and --replace; `compare` takes what `score --out`
wrote (result JSONs, tables, model names) and names every metric it cannot pair; the files people have score."""

import json

import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.results import Result
from rexrank.scorers import spec

DATASET = str(demo.DATASET)
TEXT = ("bleu2", "bleu4", "rouge_l")  # the metrics that need no weights: what a rerun may leave out


def score(out, *extra, task="findings", system="demo-careful", predictions=None):
    return main(["score", "--predictions", str(predictions or demo.predictions(system, task)), "--dataset", DATASET,
                 "--task", task, "--out", str(out), "--quiet", "--resamples", "100", "--model-name", "Careful",
                 *extra])


def result(out, task="findings") -> Result:
    return Result.read(written(out, f"dataset.{task}.json"))


def test_a_rerun_on_fewer_metrics_keeps_what_it_did_not_recompute(tmp_path, capsys):
    assert score(tmp_path, "--metrics", ",".join(TEXT)) == 0
    first = result(tmp_path)
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    assert score(tmp_path, "--metrics", TEXT[0]) == 0
    again = result(tmp_path)
    assert list(again.metrics) == list(first.metrics)  # none lost, in the order the first run wrote them
    assert {name: m.value for name, m in again.metrics.items()} == {name: m.value for name, m in first.metrics.items()}
    kept = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet"))
    columns = [c for name in TEXT for c in spec(name).columns]
    pd.testing.assert_frame_equal(kept[["study_id", *columns]], table[["study_id", *columns]])
    assert again.checks["inputs"] == first.checks["inputs"]


def test_a_rerun_on_other_predictions_is_refused_naming_the_file_and_replace(tmp_path, capsys):
    assert score(tmp_path, "--metrics", TEXT[0]) == 0
    before = written(tmp_path, "dataset.findings.json").read_bytes()
    capsys.readouterr()
    assert score(tmp_path, "--metrics", TEXT[0], system="demo-template") == 2
    err = capsys.readouterr().err
    assert str(written(tmp_path, "dataset.findings.json")) in err and "--replace" in err
    assert "Traceback" not in err and written(tmp_path, "dataset.findings.json").read_bytes() == before
    assert score(tmp_path, "--metrics", TEXT[0], "--replace", system="demo-template") == 0
    assert result(tmp_path).metrics[TEXT[0]].value != Result.from_dict(json.loads(before)).metrics[TEXT[0]].value


def test_a_rerun_with_other_settings_is_refused_and_replace_writes_what_it_scored(tmp_path, capsys):
    assert score(tmp_path, "--metrics", "bleu4") == 0
    capsys.readouterr()
    assert score(tmp_path, "--metrics", "bleu4", "--option", "bleu4.tokenize=none") == 2
    err = capsys.readouterr().err
    assert "bleu4 was made otherwise before" in err and "--replace" in err
    assert result(tmp_path).metrics["bleu4"].signature.settings["tok"] != "none"  # the earlier result stands
    assert score(tmp_path, "--metrics", "bleu4", "--option", "bleu4.tokenize=none", "--replace") == 0
    assert result(tmp_path).metrics["bleu4"].signature.settings["tok"] == "none"


def test_an_earlier_result_that_records_no_inputs_is_not_replaced_silently(tmp_path, capsys):
    assert score(tmp_path, "--metrics", TEXT[0]) == 0
    path = written(tmp_path, "dataset.findings.json")
    data = json.loads(path.read_text())
    data["checks"].pop("inputs")  # as an older rexrank wrote it
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert score(tmp_path, "--metrics", TEXT[1]) == 2
    assert "does not record what it scored" in capsys.readouterr().err


def test_out_naming_a_file_is_refused_in_words(tmp_path, capsys):
    taken = tmp_path / "x.csv"
    taken.write_text("a,b\n")
    with pytest.raises(SystemExit) as exit_:
        score(taken, "--metrics", TEXT[0])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{taken} is a file; --out names a folder" in err and "Errno" not in err


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_predictions_given_as_sections_score_for_either_task(tmp_path, capsys, suffix):
    """CXRMate-2 publishes `study_id,findings,impression`: each task's prediction is made from the sections as its
    reference is made from the split's (a missing section: left empty for findings, `None` for both)."""
    records = [json.loads(line) for line in demo.DATASET.read_text().splitlines()]
    rows = [{"study_id": r["study_id"], "findings": r["findings"] or "", "impression": r["impression"] or ""}
            for r in records]
    path = tmp_path / f"sections{suffix}"
    if suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for task in ("findings", "findings_impression"):
        assert score(tmp_path / task, "--metrics", TEXT[0],
                     task=task, predictions=path) == 0
        # the references themselves, given as sections, score as a copy of the references does: BLEU-2 1
        assert result(tmp_path / task, task).metrics[TEXT[0]].value == pytest.approx(1.0)


def compare_setup(tmp_path):
    out = tmp_path / "results"
    for name, system in (("Careful", "demo-careful"), ("Template", "demo-template")):
        assert main(["score", "--predictions", str(demo.predictions(system, "findings")), "--dataset", DATASET,
                     "--task", "findings", "--out", str(out), "--quiet", "--resamples", "100", "--model-name", name,
                     "--metrics", ",".join(TEXT if name == "Careful" else TEXT[:2])]) == 0
    return out


def test_compare_takes_model_names_result_jsons_and_tables_alike(tmp_path, capsys):
    out = compare_setup(tmp_path)
    capsys.readouterr()
    jsons = {Result.read(p).model.name: p for p in out.glob("*.json")}
    tables = {name: p.with_name(p.name.removesuffix(".json") + ".per_study.parquet") for name, p in jsons.items()}
    printed = []
    for a, b in ((str(tables["Careful"]), str(tables["Template"])), (str(jsons["Careful"]), str(jsons["Template"])),
                 ("Careful", "Template")):
        assert main(["compare", a, b, "--results", str(out), "--trials", "100"]) == 0
        printed.append(capsys.readouterr())
    rows = [[line for line in p.out.splitlines() if line.startswith("  ")] for p in printed]
    assert rows[0] == rows[1] == rows[2]
    # ROUGE-L was scored for Careful alone: named, not dropped silently
    assert all("rouge_l (" in p.err and "only" in p.err for p in printed)


def test_compare_names_a_model_it_cannot_find(tmp_path, capsys):
    out = compare_setup(tmp_path)
    capsys.readouterr()
    assert main(["compare", "Careful", "Nobody", "--results", str(out)]) == 2
    err = capsys.readouterr().err
    assert "model 'Nobody'" in err and "Traceback" not in err
