"""The prediction files people have: CXR-Report-Metric's `study_id,report` CSV, a spreadsheet's CSV with a byte order
mark, an empty file, a model's output for more studies than the split (`--ignore-extra`) or fewer (`--partial`), and
predictions made for the other task."""

import csv
import json

import pytest

from rexrank import demo
from rexrank.board import sources
from rexrank.cli import main
from rexrank.results import Result, result_files

ROWS = [json.loads(line) for line in demo.predictions("demo-careful", "findings").read_text().splitlines()]
SPLIT = {json.loads(line)["study_id"] for line in demo.DATASET.read_text().splitlines()}


def score(tmp_path, predictions, *extra, task="findings", out="out"):
    return main(["score", "--predictions", str(predictions), "--dataset", str(demo.DATASET), "--task", task,
                 "--metrics", "bleu2", "--resamples", "20", "--quiet", "--out", str(tmp_path / out), *extra])


def write_csv(path, header, rows, encoding="utf-8"):
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def value(tmp_path, out="out") -> float:
    [path] = result_files(tmp_path / out)
    return Result.read(path).metrics["bleu2"].value


def test_a_study_id_report_csv_and_a_csv_with_a_byte_order_mark_score_as_the_jsonl(tmp_path, capsys):
    assert score(tmp_path, demo.predictions("demo-careful", "findings"), out="jsonl") == 0
    rows = [(r["study_id"], r["prediction"]) for r in ROWS]
    report = write_csv(tmp_path / "model.csv", ["study_id", "report"], rows)  # CXR-Report-Metric's columns
    assert score(tmp_path, report, out="report") == 0
    bom = write_csv(tmp_path / "sheet.csv", ["study_id", "prediction"], rows, encoding="utf-8-sig")
    assert bom.read_bytes().startswith(b"\xef\xbb\xbfstudy_id")  # as a spreadsheet's "CSV UTF-8" saves it
    assert score(tmp_path, bom, out="bom") == 0
    bom_jsonl = tmp_path / "bom.jsonl"
    bom_jsonl.write_bytes(b"\xef\xbb\xbf" + demo.predictions("demo-careful", "findings").read_bytes())
    assert score(tmp_path, bom_jsonl, out="bom_jsonl") == 0
    assert value(tmp_path, "report") == value(tmp_path, "bom") == value(tmp_path, "bom_jsonl") == value(tmp_path,
                                                                                                        "jsonl")
    wrong = write_csv(tmp_path / "wrong.csv", ["id", "text"], rows[:1], encoding="utf-8-sig")
    capsys.readouterr()
    assert score(tmp_path, wrong, out="wrong") == 2
    assert capsys.readouterr().err == (f"rexrank: error: {wrong}: expected a header with study_id and prediction (or "
                                       "report, or findings and impression), got 'id', 'text'\n")  # quoted, as it is


@pytest.mark.parametrize("content, said", [(b"", "an empty file: no predictions in it"),
                                           (b"\xef\xbb\xbf\n  \n", "an empty file: no predictions in it"),
                                           (b"study_id,prediction\n", "no predictions in it")])
def test_an_empty_file_is_said_to_be_empty_in_one_line(tmp_path, capsys, content, said):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(content)
    assert score(tmp_path, empty) == 2
    assert capsys.readouterr().err == f"rexrank: error: {empty}: {said}\n"
    for suffix in (".jsonl", ".json"):
        if content.strip(b"\xef\xbb\xbf \n"):
            continue
        other = empty.with_suffix(suffix)
        other.write_bytes(content)
        assert score(tmp_path, other) == 2
        assert capsys.readouterr().err == f"rexrank: error: {other}: an empty file: no predictions in it\n"


def test_predictions_for_more_studies_than_the_split_are_left_aside_with_ignore_extra(tmp_path, capsys):
    more = tmp_path / "whole-test-output.jsonl"
    extra = [{"study_id": f"other-{i}", "prediction": "Heart size is normal."} for i in range(30)]
    more.write_text("".join(json.dumps(r) + "\n" for r in [*ROWS, *extra]))
    assert score(tmp_path, more) == 2
    err = capsys.readouterr().err
    assert "study other-0: predicted but not in the split (wrong split or dataset?)" in err
    assert err.endswith("30 of the 78 predictions are for studies the split does not have: --ignore-extra scores the "
                        "split's studies and leaves those aside\n")
    assert score(tmp_path, more, "--ignore-extra") == 0
    said = capsys.readouterr()
    assert "45 studies scored, 3 left out by the task, 30 predictions for other studies left aside" in said.out
    assert "30 prediction(s) for studies not in the split left aside (--ignore-extra), e.g. other-0, other-1" in \
        said.err
    [path] = result_files(tmp_path / "out")
    assert Result.read(path).counts["extra_predictions"] == 30
    assert score(tmp_path, demo.predictions("demo-careful", "findings"), out="plain") == 0
    assert value(tmp_path) == value(tmp_path, "plain")  # the split's studies, scored as without the others


def test_a_partial_set_is_scored_only_when_asked_and_marked_partial_everywhere(tmp_path, capsys):
    subset = tmp_path / "dev.jsonl"
    subset.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:20]))
    assert score(tmp_path, subset, "--dataset-name", "mimic-cxr") == 2
    err = capsys.readouterr().err
    assert "in the split but has no prediction" in err
    assert err.endswith("25 of the split's 45 studies have no prediction: --partial scores the predicted ones alone (a "
                        "partial result: not comparable with the board, never submittable)\n")
    assert score(tmp_path, subset, "--dataset-name", "mimic-cxr", "--partial") == 0
    said = capsys.readouterr()
    assert "dev · mimic-cxr test · findings · 20 studies scored" in said.out
    assert ("  PARTIAL: 25 of the split's studies have no prediction (--partial): these numbers are not comparable "
            "with the board's, and rexrank submit refuses them") in said.out
    assert "PARTIAL: 20 of the split's 45 studies scored (--partial; 25 have no prediction)" in said.err
    [path] = result_files(tmp_path / "out")
    assert Result.read(path).counts["unpredicted"] == 25
    assert main(["submit", "--results", str(tmp_path / "out"), "--name", "Dev", "--dry-run"]) == 2
    assert (f"{path.name}: partial (rexrank score --partial: 25 of the split's studies have no prediction); the "
            "leaderboard ranks the whole split: score all of it") in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="partial .25 of the split's studies without a prediction"):
        sources.read_board(tmp_path / "out")  # never a row beside whole-split numbers


def test_predictions_of_the_other_task_are_warned_about(tmp_path, capsys):
    careful = {task: demo.predictions("demo-careful", task) for task in ("findings", "findings_impression")}
    assert score(tmp_path, careful["findings"], out="a") == 0 and score(
        tmp_path, careful["findings_impression"], task="findings_impression", out="b") == 0
    assert "Impression:'" not in capsys.readouterr().err  # each file for its own task: no word
    assert score(tmp_path, careful["findings_impression"], out="c") == 0
    assert ("45 of 45 predictions hold 'Impression:', as findings_impression's references do ('Findings: ... "
            "Impression: ...'), but the findings task's reference is the findings section alone: are these for "
            "--task findings_impression?") in capsys.readouterr().err
    assert score(tmp_path, careful["findings"], task="findings_impression", out="d") == 0
    assert ("only 0 of 48 predictions hold 'Impression:', but the findings_impression task's references are "
            "'Findings: ... Impression: ...' (README, \"Score your model\"): findings alone score low here; are these "
            "for --task findings?") in capsys.readouterr().err
