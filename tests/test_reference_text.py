"""References as the board scored them (issue 30, docs/metrics.md §0): each task's reference has its whitespace
collapsed, for every metric and every way rexrank scores a split; predictions are scored as given; every number is
signed with how its texts were made, so one made on references as the split file stores them is marked and never
ranked beside these; and a study without findings is left out of the findings task, as the board's CheXpert Plus
findings rows show. Synthetic reports only (tests/fixtures/reports.py)."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from fixtures.board import result, results_repo, reviewed
from fixtures.outputs import written
from fixtures.reports import multiline_studies

from rexrank.board.aggregate import aggregate
from rexrank.cli import main
from rexrank.data import align, load_split
from rexrank.reports import (
    FINDINGS,
    FINDINGS_IMPRESSION,
    build_references,
    findings_impression_text,
    reference_text,
    text_settings,
)
from rexrank.results import Result
from rexrank.scorecard import MetricSet, score
from rexrank.scorers.bleu import bleu2_pair, ngrams

ROOT = Path(__file__).resolve().parents[1]


def split_file(path: Path, rows) -> Path:
    """A split as JSONL (study_id, findings, impression), and beside it the predictions of each row."""
    path.write_text("".join(json.dumps({"study_id": s, "findings": f, "impression": i}) + "\n"
                            for s, f, i, _ in rows))
    predictions = path.with_suffix(".predictions.jsonl")
    predictions.write_text("".join(json.dumps({"study_id": s, "prediction": p}) + "\n" for s, _, _, p in rows))
    return predictions


def stored(findings, impression, task):
    """The reference as the split file stores it: what rexrank scored before the collapse."""
    return findings if task == FINDINGS else findings_impression_text(findings, impression)


def test_each_reference_is_its_sections_with_every_whitespace_run_collapsed_for_both_tasks():
    studies = [("s1", " Heart size is normal.\r\nNo effusion.\n\n\tNo pneumothorax. ", "No acute\nprocess.\n"),
               ("s2", "Small left\u00a0effusion.\n", None),  # no impression: the word None stays
               ("s3", None, "1. NO ACUTE PROCESS.\n2. STABLE LINES.\n")]
    findings = build_references(studies, FINDINGS)
    assert findings.references == {"s1": "Heart size is normal. No effusion. No pneumothorax.",
                                   "s2": "Small left effusion."}
    assert findings.dropped == {"s3": "no findings section"}
    both = build_references(studies, FINDINGS_IMPRESSION)
    assert both.references == {
        "s1": "Findings: Heart size is normal. No effusion. No pneumothorax. Impression: No acute process.",
        "s2": "Findings: Small left effusion. Impression: None",
        "s3": "Findings: None Impression: 1. NO ACUTE PROCESS. 2. STABLE LINES."}
    # the MIMIC-like fixture: every reference of both tasks is on one line, single-spaced, and nothing else changed
    for _, f, i, _ in multiline_studies(50):
        for task in (FINDINGS, FINDINGS_IMPRESSION):
            text = reference_text(f, i, task)
            assert "\n" not in text and "  " not in text and text == " ".join(stored(f, i, task).split())


def test_a_split_scores_the_collapsed_references_and_a_built_dataset_stores_them(tmp_path):
    from rexrank.builders import BUILDERS
    from rexrank.data.build import Build, write_dataset

    rows = multiline_studies(12)
    split_file(tmp_path / "synthetic.jsonl", rows)
    split = load_split(tmp_path / "synthetic.jsonl")
    studies = pd.DataFrame([r[:3] for r in rows], columns=["study_id", "findings", "impression"])
    folder = write_dataset(Build(BUILDERS["iu-xray"].info, "test", studies), tmp_path / "built")
    built = pd.read_parquet(folder / "findings_impression" / "test-00000-of-00001.parquet").set_index("study_id")
    for task in (FINDINGS, FINDINGS_IMPRESSION):
        refs = split.references(task).references
        assert refs == {s: reference_text(f, i, task) for s, f, i, _ in rows}
        assert built[f"reference_{task}"].to_dict() == refs  # what the dataset shows is what is scored
        assert load_split(folder).references(task).references == refs  # and what it scores again
    assert built["findings"].tolist() == [r[1] for r in rows]  # the sections stay as the source wrote them


def test_bleu2_on_multiline_references_rises_when_they_are_collapsed():
    """BLEU-2 splits at single spaces: a line break after a period makes ".\\nthe" one token, so each sentence's first
    word and the period before it match nothing. The numbers docs/metrics.md §0 reports (first 100 studies)."""
    rows = multiline_studies(100)
    for task, before, after, rose in ((FINDINGS, 0.4478116127573011, 0.5065733616955818, 94),
                                      (FINDINGS_IMPRESSION, 0.3747715153722017, 0.41737872073214727, 86)):
        raw = [bleu2_pair(ngrams(p), ngrams(stored(f, i, task))) for _, f, i, p in rows]
        collapsed = [bleu2_pair(ngrams(p), ngrams(reference_text(f, i, task))) for _, f, i, p in rows]
        assert sum(raw) / len(raw) == pytest.approx(before, abs=1e-15)
        assert sum(collapsed) / len(collapsed) == pytest.approx(after, abs=1e-15)
        # most studies rise; the others fall, the brevity penalty growing with the reference's token count
        assert sum(a > b for b, a in zip(raw, collapsed)) == rose and sum(a < b for b, a in zip(raw, collapsed)) == (
            100 - rose)


@pytest.mark.slow
def test_every_metric_scores_the_collapsed_references_and_signs_how(tmp_path, local_models):
    metrics = ["bleu2", "bertscore", "semb_score", "radgraph", "ratescore", "radcliq_v1"]
    rows = multiline_studies(8)
    predictions = split_file(tmp_path / "synthetic.jsonl", rows)
    assert main(["score", "--predictions", str(predictions), "--dataset", str(tmp_path / "synthetic.jsonl"),
                 "--task", FINDINGS_IMPRESSION, "--metrics", ",".join(metrics), "--out", str(tmp_path / "out"),
                 "--resamples", "20", "--quiet"]) == 0
    made = Result.read(written(tmp_path / "out", "synthetic.findings_impression.json"))
    table = pd.read_parquet(written(tmp_path / "out", "synthetic.findings_impression.per_study.parquet"))
    assert set(made.metrics) == set(metrics)
    for name, metric in made.metrics.items():  # each number, the composite too, says how its texts were made
        assert text_settings(FINDINGS_IMPRESSION).items() <= metric.signature.settings.items(), name
        assert "|refs:collapsed-ws|missing:None|preds:as-given|" in str(metric.signature), name
    metric_set = MetricSet(metrics, progress=False)
    frame = {how: pd.DataFrame({"study_id": [r[0] for r in rows], "prediction": [r[3] for r in rows],
                                "reference": [make(f, i, FINDINGS_IMPRESSION) for _, f, i, _ in rows]})
             for how, make in (("collapsed", reference_text), ("stored", stored))}
    collapsed, as_stored = (score(frame[how], metric_set, resamples=20).per_study for how in ("collapsed", "stored"))
    # A model metric's texts are batched otherwise in the two runs (other neighbours, other padding): its floats may
    # differ in the last digits of float32, hence 1e-5; BLEU-2 has no model and must agree exactly.
    close = {name: 0.0 if name == "bleu2" else 1e-5 for name in metrics}
    for name in metrics:  # every metric saw the collapsed references
        assert table[name].tolist() == pytest.approx(collapsed[name].tolist(), abs=close[name], rel=0), name
    for name in ("bleu2", "bertscore", "radcliq_v1"):  # and the line breaks would have moved these, well past that
        assert (table[name] - as_stored[name]).abs().max() > 1e-3, name
    for name in ("semb_score", "radgraph", "ratescore"):  # whitespace tokenised away, or at sentence ends only
        assert collapsed[name].tolist() == pytest.approx(as_stored[name].tolist(), abs=close[name], rel=0), name


def test_a_judge_is_sent_the_collapsed_reference(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    fake_openai.default_reply = "{}"  # no correction
    rows = multiline_studies(4)
    predictions = split_file(tmp_path / "synthetic.jsonl", rows)
    assert main(["score", "--predictions", str(predictions), "--dataset", str(tmp_path / "synthetic.jsonl"),
                 "--task", FINDINGS, "--metrics", "fineradscore", "--judge-url", fake_openai.url, "--judge-model",
                 fake_openai.model, "--out", str(tmp_path / "out"), "--resamples", "20", "--quiet"]) == 0
    prompts = fake_openai.prompts()  # in the order the answers came, not the studies'
    assert sorted(p.split("Ground Truth Text: ")[1] for p in prompts) == sorted(
        reference_text(findings, None, FINDINGS) for _, findings, _, _ in rows)
    assert not any(findings in prompt for _, findings, _, _ in rows for prompt in prompts)  # no line break reaches it
    signature = Result.read(written(tmp_path / "out", "synthetic.findings.json")).metrics["fineradscore"].signature
    assert signature.settings["refs"] == "collapsed-ws" and signature.settings["missing"] == "left-out"


def test_predictions_are_scored_as_given_and_their_line_breaks_are_said(tmp_path):
    rows = [("s1", "Heart size is normal.\nNo effusion.", None, "Heart size is normal.\nNo effusion."),
            ("s2", "No pneumothorax.", None, "No  pneumothorax.")]  # a double space: no token changes, no warning
    split_file(tmp_path / "synthetic.jsonl", rows)
    aligned = align(load_split(tmp_path / "synthetic.jsonl").references(FINDINGS),
                    {s: p for s, _, _, p in rows})
    assert aligned.rows["prediction"].tolist() == [r[3] for r in rows]  # untouched
    assert aligned.rows["reference"].tolist() == ["Heart size is normal. No effusion.", "No pneumothorax."]
    assert aligned.warnings == ["1 prediction(s) hold line breaks or tabs, scored as given (the references' "
                                "whitespace is collapsed, the predictions' is not, as on the board; BLEU-2 reads a "
                                "line break as part of a word): s1"]
    assert aligned.text == text_settings(FINDINGS) == {"refs": "collapsed-ws", "missing": "left-out",
                                                        "preds": "as-given"}
    # why it matters: the prediction's own line break costs it BLEU-2 against the collapsed reference
    card = score(aligned.rows, ["bleu2"], resamples=10, text=aligned.text)
    assert card.per_study["bleu2"].tolist()[0] < 1.0 == card.per_study["bleu2"].tolist()[1]


def test_a_number_made_on_stored_references_is_marked_and_never_ranked_beside_the_new(tmp_path):
    repo = results_repo(tmp_path)  # A, B (and C, another RadCliQ-v1 version) signed as rexrank score signs now
    old = result("Old", 1.4, text={})  # made before the collapse: its signature says nothing of the references
    (repo / "submissions" / "lab-old" / "results").mkdir(parents=True)
    old.write(repo / "submissions" / "lab-old" / "results" / "mimic-cxr.findings.json")
    reviewed(repo, "lab-old", {"mimic-cxr.findings": old.to_json().encode()})
    board = aggregate(repo).query("dataset == 'mimic-cxr'").set_index("model")
    assert pd.isna(board.loc["Old", "rank"]) and board.loc["Old", "unranked"].startswith(
        "RadCliQ-v1 made as radcliq_v1:1|bleu2:1, the board's is radcliq_v1:1|refs:collapsed-ws|")
    assert board.loc["Old", "radcliq_v1_departs"] == (
        "radcliq_v1 on references with their whitespace as stored (no refs in its signature: made before rexrank "
        "collapsed it), the published on references collapsed-ws")
    assert board.loc["B", "radcliq_v1_departs"] == "" and board["rank"].dropna().astype(int).to_dict() == {
        "B": 1, "Official D": 2, "A": 3}


def test_rexrank_submit_refuses_a_result_made_on_stored_references(tmp_path, capsys):
    from fixtures.submissions import score as score_demo

    results = score_demo(tmp_path / "results")
    path = written(results, "mimic-cxr.findings.json")
    data = json.loads(path.read_text())
    bleu = data["metrics"]["bleu2"]
    for key in ("refs", "missing", "preds"):
        del bleu["signature_detail"]["settings"][key]
    bleu["signature"] = bleu["signature"].replace("|refs:collapsed-ws|missing:left-out|preds:as-given", "")
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["submit", "--results", str(results), "--name", "X", "--dry-run"]) == 2
    assert (f"{path.name}: bleu2 was made on references with their whitespace as stored (this rexrank "
            "scores refs:collapsed-ws): re-score") in capsys.readouterr().err


def test_the_findings_task_of_chexpert_plus_leaves_out_its_studies_without_findings(tmp_path, capsys):
    """The official split's 200 study ids, 62 with a findings section (synthetic text): the findings task scores the
    62 and counts the 138 it leaves out, and signs it `missing:left-out`; the findings+impression task scores all
    200 with `Findings: None` where a study has none."""
    ids = (ROOT / "src" / "rexrank" / "resources" / "splits" / "chexpert-plus.valid.txt").read_text().split()
    assert len(ids) == 200
    rows = [(s, f"Synthetic findings {n}.\nNo effusion." if n % 3 == 0 and n < 186 else None,
             f"\n1. SYNTHETIC IMPRESSION {n}.\n", f"Synthetic findings {n}. No effusion.") for n, s in enumerate(ids)]
    assert sum(r[1] is not None for r in rows) == 62
    source = tmp_path / "ReXRank_CheXpertPlus.json"
    source.write_text(json.dumps({s: {"section_findings": f if f else math.nan, "section_impression": i,
                                      "image_path": [f"valid/{s}/view1_frontal.jpg"]} for s, f, i, _ in rows},
                                 allow_nan=True))
    built = tmp_path / "chexpert-plus"
    assert main(["build-dataset", "chexpert-plus", "--source", str(source), "--out", str(built)]) == 0
    info = json.loads((built / "build_info.json").read_text())
    assert info["counts"]["findings"] == 62 and info["counts"]["findings_impression"] == 200
    assert info["official"]["matches"]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"study_id": s, "prediction": p}) + "\n" for s, _, _, p in rows))
    for task, scored in ((FINDINGS, 62), (FINDINGS_IMPRESSION, 200)):
        assert main(["score", "--predictions", str(predictions), "--dataset", str(built), "--task", task,
                     "--metrics", "bleu2", "--out", str(tmp_path / "out"), "--resamples", "20", "--quiet"]) == 0
        made = Result.read(written(tmp_path / "out", f"chexpert-plus.{task}.json"))
        assert made.counts["scored"] == made.metrics["bleu2"].n == scored
        assert made.counts["dropped_by_task"] == 200 - scored
        assert made.metrics["bleu2"].signature.settings["missing"] == text_settings(task)["missing"]
    findings = Result.read(written(tmp_path / "out", "chexpert-plus.findings.json")).metrics["bleu2"]
    assert findings.value == 1.0  # each of the 62 predicted exactly: no study scored against the word None


def test_a_report_scores_bleu2_zero_against_the_word_none_unless_it_holds_it():
    """What the CheXpert Plus evidence rests on (docs/metrics.md §0): scored against `None`, a report without the word
    scores 0, and one with it at most sqrt(0.1 / (c (c - 1))) for c tokens."""
    none = ngrams("None")
    assert bleu2_pair(ngrams("There is a small left pleural effusion. The heart is normal."), none) == 0.0
    with_it = ngrams("Pleural effusion: none. Pneumothorax: none.")
    c = with_it.length
    assert 0 < bleu2_pair(with_it, none) == pytest.approx(math.sqrt(1 / c * 0.1 / (c - 1)))
