import json

import numpy as np
import pytest

from rexrank import stats
from rexrank.results import MetricResult, ModelInfo, Result, ResultError
from rexrank.scorers.bleu import Bleu2
from rexrank.signature import Signature


def scored_result() -> Result:
    estimate = stats.estimate(np.linspace(0.1, 0.5, 40), resamples=200, seed=1)
    return Result(ModelInfo("Demo", "Lab", "https://example.org"), "mimic-cxr", "test", "findings",
                  {"bleu2": MetricResult.from_estimate(estimate, Bleu2().signature())},
                  counts={"scored": 40, "dropped_by_task": 2})


def test_round_trip(tmp_path):
    result = scored_result()
    path = result.write(tmp_path / "r.json")
    again = Result.read(path)
    assert again == result
    entry = json.loads(path.read_text())["metrics"]["bleu2"]
    assert entry["signature"] == "bleu2:1|tok:lower+dot|smooth:method1:eps=0.1|boot:200:seed=1|rexrank:0.1.0"
    assert entry["ci"][0] <= entry["value"] <= entry["ci"][1] and entry["n"] == 40


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("task"), "task: missing"),
    (lambda d: d.update(task="impression"), "task: 'impression' is not one of findings, findings_impression"),
    (lambda d: d.update(schema_version=99), "schema_version 99 is not 1"),
    (lambda d: d["metrics"]["bleu2"].update(ci=[0.5]), r"metrics.bleu2.ci: expected \[low, high\]"),
    (lambda d: d["metrics"]["bleu2"].update(ci=[0.5, 0.1]), r"metrics.bleu2.ci: low 0.5 > high 0.1"),
    (lambda d: d["metrics"]["bleu2"].update(n="40"), "metrics.bleu2.n: expected int, got str"),
    (lambda d: d["metrics"]["bleu2"].update(value=None), "metrics.bleu2.value: expected int or float"),
    (lambda d: d["metrics"]["bleu2"].pop("signature_detail"), "a scored number must carry its signature"),
    (lambda d: d["metrics"]["bleu2"].update(signature="bleu2:2"), "does not match signature_detail"),
    (lambda d: d["counts"].update(scored=True), "counts.scored: expected int, got bool"),
    (lambda d: d["model"].pop("name"), "model.name: missing"),
])
def test_validation_names_the_field(tmp_path, edit, message):
    data = scored_result().to_dict()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=message) as err:
        Result.read(path)
    assert str(err.value).startswith(f"{path}: ")


def test_imported_results_need_no_interval():
    result = Result(ModelInfo("X"), "mimic-cxr", "test", "findings", {"bleu2": MetricResult(0.2)},
                    provenance="imported")
    assert Result.from_dict(result.to_dict()) == result
    with pytest.raises(ResultError, match="metrics.bleu2.ci: expected int or float"):
        Result.from_dict({**result.to_dict(), "provenance": "scored"})


def test_a_generated_result_round_trips_and_needs_what_a_scored_one_needs(tmp_path):
    """The maintainers' inference job's result: predictions it made by running the model, scored as a scored one is,
    so every number carries its interval, n and signature."""
    from dataclasses import replace

    generated = replace(scored_result(), provenance="generated",
                        checks={"generated_by": "rexrank inference job", "image": "sha256:" + "0" * 64})
    again = Result.read(generated.write(tmp_path / "g.json"))
    assert again == generated and again.provenance == "generated"
    assert again.checks["generated_by"] == "rexrank inference job"
    assert json.loads((tmp_path / "g.json").read_text())["provenance"] == "generated"
    bare = Result(ModelInfo("X"), "mimic-cxr", "test", "findings", {"bleu2": MetricResult(0.2)},
                  provenance="imported").to_dict()
    with pytest.raises(ResultError, match="metrics.bleu2.ci: expected int or float"):  # a value alone is no number
        Result.from_dict({**bare, "provenance": "generated"})
    with pytest.raises(ResultError, match="provenance: 'made' is not one of generated, scored, imported"):
        Result.from_dict({**generated.to_dict(), "provenance": "made"})


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    scored_result().write(path)
    before = path.read_text()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("pathlib.Path.write_text", boom)
    with pytest.raises(KeyboardInterrupt):
        scored_result().write(path)
    monkeypatch.undo()
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind


def test_signature_point_key_ignores_bootstrap_and_versions():
    a = Signature("bleu2", "1", {"tok": "lower+dot"})
    b = a.with_bootstrap(1000, 0)
    c = Signature("bleu2", "1", {"tok": "lower+dot"}, packages={"rexrank": "9.9"})
    assert a.point_key == b.point_key == c.point_key == "bleu2:1|tok:lower+dot"
    assert str(b) == "bleu2:1|tok:lower+dot|boot:1000:seed=0|rexrank:0.1.0"
    assert Signature("bleu2", "2").point_key != a.point_key
    assert Signature.from_dict(b.to_dict()) == b


def test_composite_signature_names_its_components():
    bert = Signature("bertscore", "1", {"layer": "5", "idf": "no"}, models={"model": "distilroberta-base@abc"})
    composite = Signature("radcliq_v1", "1", components=(bert, Signature("bleu2", "1")))
    assert composite.point_key == "radcliq_v1:1|bertscore:1@distilroberta-base@abc:layer=5:idf=no|bleu2:1"
    assert Signature.from_dict(composite.to_dict()) == composite
