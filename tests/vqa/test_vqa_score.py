"""`rexrank score-vqa` end to end on the synthetic ReXVQA set that ships for the demo (src/rexrank/demo/rexvqa): the
accuracy and CIs against hand counts, every predictions layout, the paired test, and bad inputs."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rexrank import stats
from rexrank.catalog import VQA_CATEGORIES
from rexrank.cli import main
from rexrank.scorers.rexvqa_accuracy import extract, options_of
from rexrank.vqa.score import OVERALL, read_predictions

DEMO = Path(__file__).resolve().parents[2] / "src" / "rexrank" / "demo" / "rexvqa"
QUESTIONS = json.loads((DEMO / "metadata" / "test_vqa_data.json").read_text())


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("vqa") / "rexvqa"
    assert main(["build-dataset", "rexvqa", "--source", str(DEMO), "--out", str(out)]) == 0
    return out


def run(dataset, predictions, out, *extra):
    return main(["score-vqa", "--predictions", str(predictions), "--dataset", str(dataset), "--out", str(out),
                 "--resamples", "400", *extra])


def test_accuracy_per_category_and_overall_against_hand_counts(dataset, tmp_path, capsys):
    predictions = DEMO / "predictions" / "demo-prose.json"
    assert run(dataset, predictions, tmp_path) == 0
    result = json.loads((tmp_path / "rexvqa.vqa.demo-prose.json").read_text())
    written = json.loads(predictions.read_text())
    # by hand: each answer read by the rule, against the question's letter, per task_name
    hand = {}
    for qid, q in QUESTIONS.items():
        reading = extract(written[qid]["model_prediction"], options_of(q["options"]))
        row = hand.setdefault(q["task_name"].replace("_", " ").title().replace("And", "and"), [0, 0, 0])
        row[0] += 1
        row[1] += reading.letter == q["correct_answer"]
        row[2] += not reading.ok
    rows = {r["category"]: r for r in result["rows"]}
    assert list(rows) == [*VQA_CATEGORIES, OVERALL]
    for name, (n, right, failed) in hand.items():
        assert (rows[name]["questions"], rows[name]["correct"], rows[name]["failed_extractions"]) == (n, right, failed)
        assert rows[name]["accuracy"] == right / n
    overall = rows[OVERALL]
    total, right = sum(h[0] for h in hand.values()), sum(h[1] for h in hand.values())
    assert overall["accuracy"] == right / total and overall["failed_extractions"] == sum(h[2] for h in hand.values())
    # the CI: the percentile bootstrap over questions, near the Wald interval of a proportion computed by hand
    p = right / total
    wald = 1.96 * math.sqrt(p * (1 - p) / total)
    assert overall["low"] <= p <= overall["high"]
    assert abs(overall["low"] - (p - wald)) < 0.06 and abs(overall["high"] - (p + wald)) < 0.06
    assert result["signature"].startswith("rexvqa_accuracy:1|parser:letters-v1|unreadable:wrong|boot:400:seed=0")
    table = pd.read_parquet(tmp_path / "rexvqa.vqa.demo-prose.per_question.parquet")
    assert list(table["question_id"]) == list(QUESTIONS) and table["correct"].sum() == right
    out = capsys.readouterr().out
    assert "signature: rexvqa_accuracy:1" in out


def test_a_category_where_every_answer_is_right_has_a_ci_of_one_point(dataset, tmp_path):
    assert run(dataset, DEMO / "predictions" / "demo-letters.json", tmp_path) == 0
    rows = {r["category"]: r for r in json.loads((tmp_path / "rexvqa.vqa.demo-letters.json").read_text())["rows"]}
    assert rows["Presence Assessment"]["accuracy"] == rows["Presence Assessment"]["low"] == 1.0
    assert rows["Geometric Information Assessment"]["high"] == 0.0


def test_the_three_layouts_give_the_same_answers(tmp_path):
    written = json.loads((DEMO / "predictions" / "demo-letters.json").read_text())
    texts = {qid: r["model_prediction"] for qid, r in written.items()}
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text("".join(json.dumps({"question_id": q, "prediction": t}) + "\n" for q, t in texts.items()))
    csv = tmp_path / "m.csv"
    pd.DataFrame({"question_id": list(texts), "prediction": list(texts.values())}).to_csv(csv, index=False)
    listed = tmp_path / "m.json"  # a list of records naming their question, as some runners write
    listed.write_text(json.dumps([{"question_id": q, "model_prediction": t} for q, t in texts.items()]))
    assert read_predictions(DEMO / "predictions" / "demo-letters.json") == texts
    assert read_predictions(jsonl) == read_predictions(csv) == read_predictions(listed) == texts


def test_paired_test_between_two_models(dataset, tmp_path, capsys):
    assert run(dataset, DEMO / "predictions" / "demo-prose.json", tmp_path) == 0
    assert run(dataset, DEMO / "predictions" / "demo-letters.json", tmp_path, "--versus",
               str(tmp_path / "rexvqa.vqa.demo-prose.json")) == 0
    a = pd.read_parquet(tmp_path / "rexvqa.vqa.demo-letters.per_question.parquet")
    b = pd.read_parquet(tmp_path / "rexvqa.vqa.demo-prose.per_question.parquet")
    want = stats.paired_bootstrap(a["correct"].to_numpy(float), b["correct"].to_numpy(float), "mean", 400, 0)
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith(OVERALL)][-1]  # the paired test's
    assert f"{want.delta:+.4f}" in line and f"p={want.p_value:.4f}" in line
    assert np.isclose(want.delta, a["correct"].mean() - b["correct"].mean())


def test_a_question_without_a_prediction_is_wrong_and_said(dataset, tmp_path, capsys):
    path = tmp_path / "few.csv"
    path.write_text("question_id,prediction\ndemo-q001,B\n")
    assert run(dataset, path, tmp_path) == 0
    assert "19 question(s) have no prediction and count as wrong" in capsys.readouterr().err
    overall = json.loads((tmp_path / "rexvqa.vqa.few.json").read_text())["rows"][-1]
    assert overall["questions"] == 20 and overall["failed_extractions"] >= 19


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.json", "{not json", "bad.json: not valid JSON"),
    ("unknown.csv", "question_id,prediction\nq-none,B\n", "1 prediction(s) for questions the dataset does not have"),
    ("twice.jsonl", '{"question_id": "demo-q001", "prediction": "A"}\n'
                    '{"question_id": "demo-q001", "prediction": "B"}\n',
     "twice.jsonl:2: question demo-q001 answered twice"),
    ("number.json", '{"demo-q001": {"model_prediction": 3}}', "entry demo-q001: model_prediction is int, not text"),
    ("nofield.json", '{"demo-q001": {"answer": "B"}}', "entry demo-q001: no model_prediction or prediction"),
    ("columns.csv", "id,answer\ndemo-q001,B\n", "expected the columns question_id,prediction"),
    ("empty.jsonl", "", "no predictions"),
])
def test_bad_predictions_are_one_line_naming_the_file_and_exit_2(dataset, tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    assert run(dataset, path, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert message in err and name in err and "Traceback" not in err and err.startswith("rexrank: error:")
    assert not (tmp_path / "out").exists()


def test_a_folder_that_is_not_a_built_rexvqa_is_refused(tmp_path, capsys):
    assert run(tmp_path, DEMO / "predictions" / "demo-letters.json", tmp_path / "out") == 2
    assert "not a ReXVQA dataset built by rexrank (no build_info.json)" in capsys.readouterr().err
