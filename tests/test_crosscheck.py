"""`rexrank crosscheck` (issue 30 item 5): rexrank against the per-study CSV CXR-Report-Metric writes, on synthetic
files. Each CSV is written here as `CXRMetric/run_eval.py` `calc_metric` writes one (sorted by study_id,
`reset_index()`, then `to_csv` with its index: `,index,study_id,report,bleu_score,bertscore,semb_score,
radgraph_combined,RadCliQ-v0,RadCliQ-v1`), its BLEU-2 computed independently, by NLTK, on `prep_reports`' tokens."""

import json

import numpy as np
import pandas as pd
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from rexrank.cli import main
from rexrank.crosscheck import TOLERANCES

# Synthetic studies: (study id, findings, prediction).
STUDIES = [
    ("synthetic-b", "The heart is normal in size. The lungs are clear.", "The heart is normal in size. Lungs clear."),
    ("synthetic-a", "Small left pleural effusion. No pneumothorax.", "Small left effusion.  No pneumothorax."),
    ("synthetic-c", "Mild cardiomegaly with pulmonary vascular congestion.", "Mild cardiomegaly."),
    ("synthetic-e", "Right lower lobe opacity, possibly pneumonia.", "No acute cardiopulmonary process."),
    ("synthetic-d", "Sternotomy wires are intact. No acute process.", "Sternotomy wires.\nNo acute process."),
    ("synthetic-f", "Endotracheal tube 4 cm above the carina.", "Endotracheal tube above the carina."),
]
IDS = [s for s, _, _ in STUDIES]
PREDICTIONS = {s: p for s, _, p in STUDIES}
MODEL_COLUMNS = ("bertscore", "semb_score", "radgraph_combined", "RadCliQ-v0", "RadCliQ-v1")


def prep(text):
    """CXR-Report-Metric's `prep_reports`, as its run_eval.py writes it."""
    return [w for w in str(text).lower().replace(".", " .").split(" ") if w != ""]


def nltk_bleu2(candidate, reference):
    return sentence_bleu([prep(reference)], prep(candidate), weights=(0.5, 0.5),
                         smoothing_function=SmoothingFunction().method1)


@pytest.fixture
def files(tmp_path):
    split = tmp_path / "synthetic_split.json"
    split.write_text(json.dumps({s: {"section_findings": f, "section_impression": "Synthetic impression."}
                                 for s, f, _ in STUDIES}))
    predictions = tmp_path / "predictions.json"  # ReXrank's submission format
    predictions.write_text(json.dumps({s: {"model_prediction": p} for s, _, p in STUDIES}))
    return split, predictions


def official_csv(path, studies=IDS, ids=None, reports=None, bleu=None, columns=None):
    """The CSV calc_metric writes for `studies` (in this order), labelled `ids` (default: the study ids); `reports`
    the texts it holds (default: the predictions), `bleu` the BLEU-2 values (default: NLTK's), `columns` other
    metric columns (default: synthetic values), each in the order of `studies`."""
    findings = {s: f for s, f, _ in STUDIES}
    frame = pd.DataFrame({"study_id": list(studies) if ids is None else ids,
                          "report": reports or [PREDICTIONS[s] for s in studies],
                          "bleu_score": bleu or [nltk_bleu2(PREDICTIONS[s], findings[s]) for s in studies]})
    rng = np.random.default_rng(0)
    for column in MODEL_COLUMNS:
        frame[column] = (columns or {}).get(column, rng.random(len(frame)).astype(np.float32))
    frame = frame.sort_values(by=["study_id"]).reset_index(drop=True)
    frame = frame[["study_id", "report"]].reset_index().join(frame.drop(columns=["study_id", "report"]))
    frame.to_csv(path)
    assert path.read_text().splitlines()[0] == (",index,study_id,report,bleu_score,bertscore,semb_score,"
                                                "radgraph_combined,RadCliQ-v0,RadCliQ-v1")
    return path


def crosscheck(predictions, split, csv, *more):
    return main(["crosscheck", str(predictions), "--against", str(csv), "--dataset", str(split), "--task", "findings",
                 "--quiet", *more])


def test_the_same_predictions_agree_and_the_model_metrics_say_why_they_are_not_checked(tmp_path, files, capsys):
    split, predictions = files
    assert crosscheck(predictions, split, official_csv(tmp_path / "report_scores.csv")) == 0
    out = capsys.readouterr().out
    assert "synthetic_split test · findings · 6 studies in both, matched by study id" in out
    assert "report column: the predictions given, for every one of the 6 studies (whitespace collapsed)" in out
    assert "  bleu2       mean rexrank " in out and "(tolerance 1e-12): agree" in out
    assert "all agree (checked: bleu2)" in out
    assert ("not run here: radgraph, bertscore, semb_score, radcliq_v0, radcliq_v1 (weights not downloaded)" in out
            or "not run here: radgraph, bertscore, semb_score, radcliq_v0, radcliq_v1: the model metrics need" in out)


def test_one_study_off_is_named_with_its_difference_and_exit_1(tmp_path, files, capsys):
    split, predictions = files
    findings = {s: f for s, f, _ in STUDIES}
    bleu = [nltk_bleu2(PREDICTIONS[s], findings[s]) for s in IDS]
    off = IDS.index("synthetic-c")
    bleu[off] += 0.0123
    assert crosscheck(predictions, split, official_csv(tmp_path / "off.csv", bleu=bleu), "--json") == 1
    report = json.loads(capsys.readouterr().out)
    check = report["metrics"]["bleu2"]
    assert report["agree"] is False and report["studies"] == 6 and report["text_mismatches"] == []
    assert check["differ"] == 1 and check["column"] == "bleu_score" and check["tolerance"] == 1e-12
    assert check["max_abs_difference"] == pytest.approx(0.0123, abs=1e-12)
    assert [s["study_id"] for s in check["worst"]] == ["synthetic-c"]
    assert check["worst"][0]["difference"] == pytest.approx(-0.0123, abs=1e-12)
    assert check["csv_mean"] - check["rexrank_mean"] == pytest.approx(0.0123 / 6, abs=1e-12)
    assert set(report["skipped"]) == {"bertscore", "semb_score", "radgraph", "radcliq_v0", "radcliq_v1"}
    assert crosscheck(predictions, split, tmp_path / "off.csv") == 1  # and as text
    out = capsys.readouterr().out
    assert "1 of 6 studies differ" in out and "synthetic-c: rexrank " in out and "(-1.23e-02)" in out
    assert "they differ (checked: bleu2)" in out


def test_a_report_column_that_is_not_the_predictions_is_named_study_by_study(tmp_path, files, capsys):
    split, predictions = files
    reports = [PREDICTIONS[s] for s in IDS]
    reports[IDS.index("synthetic-a")] = "Small left effusion. No pneumothorax seen."  # another model's text
    reports[IDS.index("synthetic-e")] = "Right lower lobe opacity, possibly pneumonia."  # the reference
    reports[IDS.index("synthetic-d")] = "Sternotomy   wires. No acute\tprocess. "  # whitespace only: the same
    assert crosscheck(predictions, split, official_csv(tmp_path / "texts.csv", reports=reports)) == 1
    out = capsys.readouterr().out
    assert ("report column: for 2 studies it is not the prediction given (whitespace collapsed); 1 of them holds "
            "the study's reference instead") in out
    assert "    synthetic-a: parts at character 36" in out and "    synthetic-e: the reference" in out
    assert "synthetic-d" not in out.split("report column")[1].split("bleu2")[0]


def test_positional_ids_are_read_by_position_when_asked_and_hinted_otherwise(tmp_path, files, capsys):
    split, predictions = files
    order = list(json.loads(predictions.read_text()))  # the predictions file's order, as MoERad numbered IU-Xray
    csv = official_csv(tmp_path / "positional.csv", studies=order, ids=list(range(len(order))))
    assert crosscheck(predictions, split, csv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "none of its 6 study ids is a study of the findings task" in err and "pass --positional" in err
    assert crosscheck(predictions, split, csv, "--positional") == 0
    assert "matched by position (--positional" in capsys.readouterr().out


def test_studies_missing_on_either_side_differ(tmp_path, files, capsys):
    split, predictions = files
    csv = official_csv(tmp_path / "full.csv")
    lines = csv.read_text().splitlines()
    kept = [line for line in lines if ",synthetic-f," not in line]
    (tmp_path / "short.csv").write_text("\n".join(kept) + "\n")
    assert crosscheck(predictions, split, tmp_path / "short.csv") == 1
    assert "not in the CSV: 1 of the task's studies: synthetic-f" in capsys.readouterr().out
    (tmp_path / "long.csv").write_text("\n".join(lines + [lines[1].replace("synthetic-a", "synthetic-z", 1)]) + "\n")
    assert crosscheck(predictions, split, tmp_path / "long.csv") == 1
    assert "in the CSV only: 1 study: synthetic-z" in capsys.readouterr().out


@pytest.mark.parametrize(("content", "said"), [
    ("study_id,prediction\nsynthetic-a,x\n", "not CXR-Report-Metric's per-study CSV: expected columns study_id, "
                                             "report and some of bleu_score"),
    (",index,study_id,report,bleu_score\n0,0,synthetic-a,x,high\n", "bad.csv:2: study synthetic-a: bleu_score "
                                                                     "'high' is not a number"),
    (",index,study_id,report,bleu_score\n0,0,synthetic-a,x,0.1\n1,1,synthetic-a,x,0.1\n",
     "bad.csv:3: study synthetic-a appears twice (first on line 2)"),
    ("", "bad.csv: empty"),
])
def test_a_csv_that_is_not_cxr_report_metrics_is_one_line_and_exit_2(tmp_path, files, capsys, content, said):
    split, predictions = files
    (tmp_path / "bad.csv").write_text(content)
    assert crosscheck(predictions, split, tmp_path / "bad.csv") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert crosscheck(predictions, split, official_csv(tmp_path / "ok.csv"), "--metrics", "ratescore") == 2
    assert "no column for ratescore" in capsys.readouterr().err


def test_a_model_metric_within_float32_rounding_agrees_and_one_beyond_is_named(tmp_path, files, capsys, tiny_roberta,
                                                                               monkeypatch):
    """BERTScore on a tiny random RoBERTa: the CSV holds rexrank's own per-study values as float32 (what
    bert-score's tensor writes), moved by 3e-5 (within the 1e-4 of float32 rounding across stacks), and one study
    by 5e-3."""
    from rexrank.hf_metric import compute

    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "features.sqlite"))
    split, predictions = files
    findings = {s: f for s, f, _ in STUDIES}
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(tiny_roberta))
    ours = np.asarray(compute("bertscore", [PREDICTIONS[s] for s in IDS], [findings[s] for s in IDS])
                      ["bertscore_per_sample"])
    shifted = (ours + 3e-5).astype(np.float32)
    shifted[IDS.index("synthetic-b")] += np.float32(5e-3)
    csv = official_csv(tmp_path / "bertscore.csv", columns={"bertscore": shifted})
    assert crosscheck(predictions, split, csv, "--metrics", "bleu2,bertscore", "--json") == 1
    check = json.loads(capsys.readouterr().out)["metrics"]["bertscore"]
    assert check["tolerance"] == TOLERANCES["bertscore"] == 1e-4
    assert check["differ"] == 1 and [s["study_id"] for s in check["worst"]] == ["synthetic-b"]
    assert check["max_abs_difference"] == pytest.approx(5e-3 + 3e-5, abs=1e-6)


def test_the_help_says_the_exit_status(capsys):
    with pytest.raises(SystemExit) as done:
        main(["crosscheck", "--help"])
    assert done.value.code == 0
    assert "exit status: 0 all agree; 1 some differ" in " ".join(capsys.readouterr().out.split())
