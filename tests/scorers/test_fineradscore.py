"""FineRadScore: the reference's prompt and line numbering (rajpurkarlab/FineRadScore 3f5e1dc), the strict reply
reader with its one repair turn, max and sum per study, 1/mean, the scorecard and the `evaluate` module, through the
loopback OpenAI server. Every report here is synthetic."""

import hashlib
import json
import math
import re

import evaluate
import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from fixtures.metric_contract import AS_WRITTEN, JudgedCase, MetricContract, between, sentences
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.llm import Judge, JudgeUnavailable
from rexrank.llm.quoting import QUOTED, quoted
from rexrank.results import Result
from rexrank.scorers.base import Problem
from rexrank.scorers.fineradscore import (
    JSON_FORMAT,
    PROMPT,
    PROMPT_VERSION,
    QUERY,
    REPAIR,
    SYNTHETIC,
    ZERO_SHOT,
    Correction,
    FineRadScore,
    ReplyError,
    aggregate,
    build_messages,
    fineradscore,
    judge_for,
    load_shots,
    number_lines,
    parse,
    shots_digest,
    split_lines,
)


def entry(severity, correction="[delete]", comments="", categories=("False prediction of finding",)):
    return {"corrections": correction, "clinical severity": severity, "comments": comments,
            "error category": list(categories)}


def reply(**lines) -> str:
    """A reply as the judge is asked to write it; `None_` is the key "None" (an inserted line)."""
    return json.dumps({key.rstrip("_") if key == "None_" else key.removeprefix("l"): value
                       for key, value in lines.items()})


# --- the reference's text, kept verbatim ---

def test_prompts_are_the_reference_text():
    # sha256 of few_shot_prompt.py's PROMPT_LONG and JSON_formatting at 3f5e1dc (tab, trailing spaces, ’ and all)
    assert hashlib.sha256(PROMPT.encode()).hexdigest() == (
        "0a077835af821557a5aefa602202cbfefeb66b9bf5a0add20c1d1933d98e9165")
    assert hashlib.sha256(JSON_FORMAT.encode()).hexdigest() == (
        "cac8c53a71389225d23cd69c4006cdf1b85361e1272a2e4360011a734b470285")
    assert PROMPT.startswith("Instructions: Return only a json object for this radiology report")
    assert QUERY.format(candidate="[0] A.", reference="B.") == "Generated Text: [0] A. \n \n Ground Truth Text: B."


@pytest.mark.parametrize(("text", "numbered"), [
    ("Heart size is normal. Lungs are clear. No effusion.",
     "[0] Heart size is normal. [1] Lungs are clear. [2] No effusion."),
    ("Nodule measures 2.5 cm. Stable.", "[0] Nodule measures 2.5 cm. [1] Stable."),  # a decimal point stays
    ("Fracture of rib 7. Healed.", "[0] Fracture of rib 7. Healed."),  # no split after a digit
    ("No pneumothorax", "[0] No pneumothorax."),  # a period is added
    ('Described as "patchy". Mild edema.', "[0] Described as patchy. [1] Mild edema."),  # quotes go
    ("Effusion.\nNo pneumothorax. Clear.", "[0] Effusion.\nNo pneumothorax. [1] Clear."),  # only ". " splits
    ("Edema.  Effusion. . Atelectasis...", "[0] Edema. [1] Effusion. [2] Atelectasis.."),  # blanks, ".." made "."
    # only the first '' and the first ' ' piece are dropped: a second empty piece becomes a line "."
    ("Edema.  . Effusion. . Clear. . Atelectasis.", "[0] Edema. [1] Effusion. [2] Clear. [3] . [4] Atelectasis."),
    ("", ""),
])
def test_candidate_lines_are_numbered_as_the_reference(text, numbered):
    assert number_lines(text) == numbered
    assert len(split_lines(text)) == numbered.count("] ")


def test_few_shot_messages_system_examples_query():
    messages = build_messages("Mild edema. No effusion.", "Moderate edema.", SYNTHETIC)
    assert messages[0] == {"role": "system", "content": PROMPT}
    assert messages[1:-1] == list(SYNTHETIC.messages) and len(SYNTHETIC.messages) == 8
    assert messages[-1] == {"role": "user", "content": "Generated Text: [0] Mild edema. [1] No effusion. \n \n "
                                                       "Ground Truth Text: Moderate edema."}
    zero = build_messages("Mild edema.", "Moderate edema.", ZERO_SHOT)
    assert zero == [{"role": "user", "content": PROMPT + JSON_FORMAT
                     + "Generated Text: [0] Mild edema. \n \n Ground Truth Text: Moderate edema."}]


def test_synthetic_examples_teach_replies_the_reader_accepts():
    users, answers = SYNTHETIC.messages[0::2], SYNTHETIC.messages[1::2]
    assert [m["role"] for m in users] == ["user"] * 4 and [m["role"] for m in answers] == ["assistant"] * 4
    severities = []
    for user, answer in zip(users, answers):
        candidate = user["content"].removeprefix("Generated Text: ").split(" \n \n Ground Truth Text: ")[0]
        severities.append(sorted(c.severity for c in parse(answer["content"], candidate.count("] "))))
    assert severities == [[2, 2, 3], [4, 4], [1, 2], []]  # every label, an insertion, and a report left as is


# --- the example turns: ours, or the reference's from a file or a checkout ---

def test_shots_from_a_json_file_are_named_by_digest(tmp_path, monkeypatch):
    turns = [{"role": "user", "content": "Generated Text: [0] A. \n \n Ground Truth Text: B."},
             {"role": "assistant", "content": "{}"}]
    path = tmp_path / "shots.json"
    path.write_text(json.dumps(turns))
    shots = load_shots(path)
    assert shots.messages == tuple(turns) and shots.name == f"file-{shots_digest(turns)[:12]}"
    monkeypatch.setattr("rexrank.scorers.fineradscore.prompt.REFERENCE_SHOTS_SHA256", shots_digest(turns))
    assert load_shots(path).name == "reference@3f5e1dc"  # the reference's own turns are named as such
    for bad in ([], turns[:1], [turns[1], turns[0]], [{"role": "user", "content": 1}, turns[1]]):
        path.write_text(json.dumps(bad))
        with pytest.raises(InputError, match="shots"):
            load_shots(path)
    with pytest.raises(InputError, match="shots"):
        load_shots(tmp_path / "missing.json")


CHECKOUT_GENERATIONS = '''import json
from few_shot_prompt import *

def generate_gpt4_response(pred_target, gt_target):
    response = openai.ChatCompletion.create(
        engine="gpt4",
        messages=[
            {"role": "system", "content": PROMPT_LONG},
            {"role": "user", "content": """Generated Text: [0] Tiny example. \\n \\n
                 Ground Truth Text: "Other example."""},
            {"role": "assistant", "content": json.dumps(corrections1)},
            {"role": "user", "content": f"Generated Text: {pred_target} \\n \\n Ground Truth Text: {gt_target}"}
        ],
    )
'''


def test_shots_from_a_checkout_are_read_without_running_it(tmp_path):
    corrections = {"0": entry("Urgent error", "Other example.")}
    (tmp_path / "few_shot_prompt.py").write_text(f"PROMPT_LONG = {PROMPT!r}\ncorrections1 = {corrections!r}\n"
                                                 "raise SystemExit('never imported')\n")
    (tmp_path / "gpt4_generations.py").write_text(CHECKOUT_GENERATIONS)
    shots = load_shots(tmp_path)
    assert shots.messages == (
        {"role": "user", "content": "Generated Text: [0] Tiny example. \n \n\n                 Ground Truth Text: "
                                    '"Other example.'},
        {"role": "assistant", "content": json.dumps(corrections)})
    (tmp_path / "few_shot_prompt.py").write_text(f"PROMPT_LONG = {PROMPT[:-3]!r}\n")
    with pytest.raises(InputError, match="PROMPT_LONG is not the text"):
        load_shots(tmp_path)


# --- reading a reply ---

def test_a_valid_reply_gives_its_corrections():
    text = reply(l0=entry("Urgent error", "Left lower lobe opacity.", "wrong side",
                          ["Incorrect location/position of finding"]),
                 None_=entry("Not actionable", "Small effusion.", "", ["Omission of finding"]))
    assert parse(text, 2) == [
        Correction(0, 3, "Left lower lobe opacity.", "wrong side", ("Incorrect location/position of finding",)),
        Correction(None, 1, "Small effusion.", "", ("Omission of finding",))]


def test_a_fenced_reply_is_read_and_an_empty_object_needs_no_correction():
    assert parse('```json\n{"1": ' + json.dumps(entry("Emergent error")) + "}\n```", 2)[0].severity == 4
    assert parse("```\n{}\n```", 3) == [] and parse("  {}  ", 0) == []


@pytest.mark.parametrize(("label", "severity"), [
    ("Emergent error", 4), ("urgent ERROR", 3), ("Urgent", 3), ("Actionable nonurgent error", 2),
    ("Actionable non-urgent error", 2), ("Not  actionable", 1), ("No error", 0)])
def test_severity_labels(label, severity):
    assert parse(reply(l0=entry(label)), 1)[0].severity == severity


@pytest.mark.parametrize(("text", "lines", "message"), [
    ("Here are the corrections: {}", 1, "it is not JSON"),
    ('{"0": ' + json.dumps(entry("Urgent error")), 1, "it is not JSON"),  # cut short
    ("[]", 1, "a JSON list, not an object"),
    (reply(l0=entry("Critical error")), 1, 'line "0": clinical severity "Critical error" is not one of'),
    (reply(l0=entry(5)), 1, "clinical severity 5 is not one of"),
    (reply(l0=entry(3)), 1, "clinical severity 3 is not one of"),  # numbers are not labels
    (reply(l1=entry("[delete]", "Not actionable")), 2, 'clinical severity "\\[delete\\]"'),  # fields swapped
    (reply(l2=entry("Urgent error")), 2, 'key "2" is not a line id: the report has lines 0 to 1'),
    (reply(l0=entry("Urgent error")), 0, 'key "0" is not a line id: the report has no lines'),
    (json.dumps({"None_1": entry("Urgent error")}), 2, 'key "None_1" is neither a line id nor "None"'),
    (json.dumps({"-1": entry("Urgent error")}), 2, 'key "-1" is neither'),
    (json.dumps({"0": {"corrections": "x", "clinical severity": "Urgent error"}}), 1, "must be an object with"),
    (json.dumps({"0": "Urgent error"}), 1, "must be an object with"),
])
def test_unreadable_replies_say_why(text, lines, message):
    with pytest.raises(ReplyError, match=message):
        parse(text, lines)


def test_a_repeated_key_keeps_the_last_as_json_loads_does():
    text = '{"0": ' + json.dumps(entry("Emergent error")) + ', "0": ' + json.dumps(entry("Not actionable")) + "}"
    assert [c.severity for c in parse(text, 1)] == [1]


def test_max_and_sum_per_study():
    corrections = [Correction(0, 2, "x"), Correction(None, 3, "y"), Correction(2, 1, "z")]
    assert aggregate(corrections, "max") == 3 and aggregate(corrections, "sum") == 6
    assert aggregate([], "max") == 0 and aggregate([], "sum") == 0
    with pytest.raises(InputError, match="unknown FineRadScore aggregate 'mean'"):
        aggregate(corrections, "mean")


# --- through the judge: repair turn, counts, cache ---

CANDIDATES = ["Lungs are clear.", "Mild edema. No effusion.", "Right effusion. Heart normal.",
              "Small right pneumothorax.", "Stable nodule.", "Clear lungs. Normal heart."]
REFERENCES = ["Lungs are clear.", "Moderate edema.", "Left effusion. Heart normal.", "No pneumothorax.",
              "Nodule.", "Large left pneumothorax."]
PROSE = "I compared the reports; the effusion is on the wrong side."


def scripted(fake):
    """Replies by the candidate in the query, and by the quoted error in a repair turn."""
    by_candidate = {
        CANDIDATES[0]: reply(l0=entry("Urgent error")),  # the call fails
        CANDIDATES[1]: reply(l0=entry("Actionable nonurgent error", "Moderate edema."), l1=entry("Not actionable")),
        CANDIDATES[2]: reply(l0=entry("Urgent error", "Left effusion.")),
        CANDIDATES[3]: "```json\n" + reply(l0=entry("Urgent error"), None_=entry("Not actionable")) + "\n```",
        CANDIDATES[4]: PROSE,
        CANDIDATES[5]: "[]",
    }
    repairs = {"it is not JSON": reply(l0=entry("Emergent error", "Nodule."), None_=entry("Urgent error")),
               "it is a JSON list": "Sorry, I cannot."}

    def answer(prompt):
        if prompt.startswith("Your reply could not be read:"):
            return next(text for error, text in repairs.items() if error in prompt)
        return next(text for cand, text in by_candidate.items() if number_lines(cand) in prompt)
    fake.replies = answer


def judge_on(fake, tmp_path, **settings):
    return Judge(base_url=fake.url, model=fake.model, max_tokens=2048, backoff_base=0.001, timeout=5.0,
                 progress=False, cache=tmp_path / "replies.sqlite", **settings)


def test_judge_end_to_end_repair_and_the_worst_value_for_unread_studies(fake_openai, tmp_path):
    scripted(fake_openai)
    fake_openai.fail(400)  # concurrency 1: the first study's prompt is refused (the request's own doing)
    fake_openai.fail("length")  # the second study's reply is cut at max_tokens: half its words
    result = fineradscore(CANDIDATES, REFERENCES, judge_on(fake_openai, tmp_path, concurrency=1, max_retries=0),
                          dataset="iu-xray")
    assert result.max_severity == [None, None, 3, 3, 4, None]
    assert result.sum_severity == [None, None, 3, 4, 7, None] and result.scores == result.max_severity
    # each unread study counts as the worst severity, 4; the mean over the studies read is reported beside it
    assert result.board_scores == [4, 4, 3, 3, 4, 4] and result.worst == [4] * 6
    assert result.tally() == {"judged": 3, "judged_mean": pytest.approx(10 / 3), "refused": 1, "unparseable": 1,
                              "cut": 1, "addressed": 0}
    assert result.repaired == 1
    assert result.problems == [Problem.REFUSED, Problem.CUT, None, None, None, Problem.UNPARSEABLE]
    assert result.repaired_flags == [False, False, False, False, True, False]
    assert result.messages[0].startswith("HTTP 400") and result.messages[1] == "cut at the judge's max_tokens"
    assert result.messages[5].startswith("unreadable (it is a JSON list, not an object), and after the repair turn: "
                                         "it is not JSON")
    assert result.corrections[4] == [Correction(0, 4, "Nodule.", "", ("False prediction of finding",)),
                                     Correction(None, 3, "[delete]", "", ("False prediction of finding",))]
    assert result.replies[5] == "Sorry, I cannot." and result.replies[0] is None
    assert result.mean == pytest.approx(22 / 6) and result.inverse == pytest.approx(6 / 22)
    assert result.mean_of("sum") == pytest.approx(14 / 3)  # over the studies read
    assert fake_openai.calls == 8  # six studies, then one repair turn for each of the two unparseable replies
    first = fake_openai.requests[2]["messages"]  # the third study's, as sent: the reference's messages, the system
    # message saying that the reports are quoted data (the board's `quoted`)
    assert first == quoted(build_messages(CANDIDATES[2], REFERENCES[2], SYNTHETIC))
    assert first[0]["content"].endswith(QUOTED) and first[1:] == build_messages(CANDIDATES[2], REFERENCES[2])[1:]
    assert fake_openai.requests[2]["temperature"] == 0 and fake_openai.requests[2]["max_tokens"] == 2048
    repair = next(b["messages"] for b in fake_openai.requests[6:] if PROSE in json.dumps(b["messages"]))
    assert repair[:-2] == quoted(build_messages(CANDIDATES[4], REFERENCES[4], SYNTHETIC))
    assert repair[-2] == {"role": "assistant", "content": PROSE}
    assert repair[-1]["content"] == REPAIR.format(error="it is not JSON (Expecting value: line 1 column 1 (char 0))")
    assert result.signature.startswith(f"fineradscore:4|backend:judge:{fake_openai.model}:t=0:max_tokens=2048|"
                                       f"prompt:{PROMPT_VERSION}|shots:synthetic-v1|agg:max|repair:1|quoted:yes|"
                                       "rexrank:")

    again = fineradscore(CANDIDATES, REFERENCES, judge_on(fake_openai, tmp_path), how="sum", dataset="iu-xray")
    assert fake_openai.calls == 9  # only the refused prompt is asked again: replies and repair turns are cached
    assert again.scores == [3, None, 3, 4, 7, None] and again.refused == 0 and "agg:sum" in again.signature
    # for the sum, the worst is every line and one inserted line at severity 4: 2 lines, so 12
    assert again.worst == [8, 12, 12, 8, 8, 12] and again.mean == pytest.approx((3 + 12 + 3 + 4 + 7 + 12) / 6)


def test_a_candidate_whose_echo_is_the_empty_reply_is_not_read_as_needing_no_correction(fake_openai, tmp_path):
    """`{}` is the reply for a report that needs no correction (severity 0, the best). A candidate that is `{}`,
    echoed by a judge that answers with what it was asked to correct, would be read as that: its braces reach the
    judge inert, and the echo is unreadable (then the worst, 4)."""
    assert parse("{}", 1) == []  # what the echo would have been read as
    echoed = []

    def echo(prompt):  # the first candidate line as it was sent, without its period; the same again when repaired
        if found := re.search(r"Generated Text: \[0\] (\S*?)\.? ", prompt):
            echoed.append(found[1])
        return echoed[-1]
    fake_openai.replies = echo
    result = fineradscore(["{}"], ["Large left pneumothorax."], judge_on(fake_openai, tmp_path), dataset="iu-xray")
    assert echoed == ["()"] and result.problems == [Problem.UNPARSEABLE] and result.board_scores == [4]
    honest = "Mild edema. No effusion {small}."  # braces are rare in a report; without any, the reference's query
    assert build_messages("Mild edema. No effusion.", "x")[-1]["content"] == QUERY.format(
        candidate="[0] Mild edema. [1] No effusion.", reference="x")
    assert "(small)" in build_messages(honest, "x")[-1]["content"]


def test_zero_shot_is_one_user_message(fake_openai, tmp_path):
    fake_openai.default_reply = "{}"
    result = fineradscore(["Mild edema."], ["Mild edema."], judge_on(fake_openai, tmp_path), shots="zero-shot",
                          quoted=False)  # the reference's messages; quoted, a system message goes first
    assert result.scores == [0] and math.isinf(result.inverse)
    assert fake_openai.requests[0]["messages"] == build_messages("Mild edema.", "Mild edema.", ZERO_SHOT)
    fineradscore(["Mild edema."], ["No edema."], judge_on(fake_openai, tmp_path), shots="zero-shot")
    assert fake_openai.requests[1]["messages"] == [{"role": "system", "content": QUOTED},
                                                   *build_messages("Mild edema.", "No edema.", ZERO_SHOT)]
    assert "|shots:zero-shot|" in result.signature


def test_credentialed_reports_are_refused_to_a_public_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = Judge(base_url="https://api.example.com/v1", model="gpt-4o", cache=False, progress=False)
    with pytest.raises(InputError, match="refusing to send MIMIC-CXR"):
        fineradscore(["a"], ["b"], judge, dataset="mimic-cxr")


def test_no_judge_model_means_unavailable(monkeypatch):
    monkeypatch.delenv("REXRANK_JUDGE_MODEL", raising=False)
    with pytest.raises(JudgeUnavailable, match="FineRadScore needs an LLM judge"):
        judge_for(judge_url="http://127.0.0.1:9/v1")


def test_bad_input_is_named():
    judge = None  # never reached
    with pytest.raises(InputError, match="2 predictions but 1 references"):
        fineradscore(["a", "b"], ["c"], judge)
    with pytest.raises(InputError, match="reference 1 is NoneType"):
        fineradscore(["a", "b"], ["c", None], judge)
    with pytest.raises(InputError, match="unknown FineRadScore aggregate"):
        fineradscore(["a"], ["c"], judge, how="median")


# --- the scorecard and the command line ---

JUDGED = reply(l0=entry("Urgent error"), None_=entry("Not actionable", "Small effusion."))


def score(tmp_path, *extra):
    return main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                 str(demo.DATASET), "--task", "findings", "--out", str(tmp_path), "--quiet", *extra])


def table_problems(out):
    return set(pd.read_parquet(written(out, "dataset.findings.per_study.parquet"))["fineradscore.problem"])


@pytest.mark.slow
def test_rexrank_score_fineradscore_through_a_judge(tmp_path, fake_openai, monkeypatch, capsys):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    odd = json.loads(demo.predictions("demo-careful", "findings").read_text().splitlines()[0])
    fake_openai.replies = lambda prompt: "{}" if number_lines(odd["prediction"]) in prompt else JUDGED
    judge = ["--judge-url", fake_openai.url, "--judge-model", fake_openai.model]
    assert score(tmp_path, "--metrics", "fineradscore,bleu2", *judge) == 0
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    metric = result.metrics["fineradscore"]
    assert metric.statistic == "inverse_mean" and metric.n == 45
    assert metric.mean == pytest.approx(44 * 3 / 45) and metric.value == pytest.approx(45 / 132)
    assert metric.low <= metric.value <= metric.high
    assert result.extras["fineradscore"] == {"aggregate": "max", "mean_max": pytest.approx(132 / 45),
                                             "mean_sum": pytest.approx(176 / 45), "judged": 45,
                                             "judged_mean": pytest.approx(132 / 45), "refused": 0, "unparseable": 0,
                                             "cut": 0, "addressed": 0, "repaired": 0,
                                             "contradicted": None}  # no CheXbert, no RadGraph: not cross-checked
    assert table_problems(tmp_path) == {None}
    assert "|shots:synthetic-v1|agg:max|" in str(metric.signature)
    table = pd.read_parquet(written(tmp_path, "dataset.findings.per_study.parquet")).set_index("study_id")
    assert table.loc[odd["study_id"], "fineradscore"] == 0 and (table["fineradscore"] == 3).sum() == 44
    assert (table["fineradscore.sum"] == 4).sum() == 44 and table.loc[odd["study_id"], "fineradscore.sum"] == 0
    corrections = json.loads(table.drop(odd["study_id"])["fineradscore.corrections"].iloc[0])
    assert [(c["line"], c["severity"]) for c in corrections] == [(0, 3), (None, 1)]
    assert re.search(r"\n  fineradscore +0\.3409 ", capsys.readouterr().out) and fake_openai.calls == 45
    assert score(tmp_path, "--metrics", "fineradscore", *judge) == 0 and fake_openai.calls == 45  # cached


def test_rexrank_score_without_a_judge_skips_fineradscore_only(tmp_path, capsys, monkeypatch):
    for key in ("REXRANK_JUDGE_URL", "REXRANK_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    assert score(tmp_path, "--metrics", "fineradscore,bleu2") == 3
    assert ("not run here: fineradscore (no LLM judge): give --judge-url URL --judge-model NAME (or "
            "REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL; the key in OPENAI_API_KEY)\n") in capsys.readouterr().out
    result = Result.read(written(tmp_path, "dataset.findings.json"))
    assert set(result.metrics) == {"bleu2"} and "fineradscore" in result.skipped


def test_rexrank_score_refuses_credentialed_data_for_a_public_endpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    split = tmp_path / "mimic-cxr.jsonl"
    split.write_text(demo.DATASET.read_text())
    code = main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                 str(split), "--task", "findings", "--out", str(tmp_path / "out"), "--quiet", "--metrics",
                 "fineradscore", "--judge-url", "https://api.example.com/v1", "--judge-model", "gpt-4o"])
    assert code == 2 and "PhysioNet" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_rexrank_score_takes_the_shots_option(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    fake_openai.default_reply = JUDGED
    judge = ["--judge-url", fake_openai.url, "--judge-model", fake_openai.model]
    assert score(tmp_path, "--metrics", "fineradscore", "--fineradscore-shots", "zero-shot", *judge) == 0
    metric = Result.read(written(tmp_path, "dataset.findings.json")).metrics["fineradscore"]
    assert "|shots:zero-shot|" in str(metric.signature) and metric.value == pytest.approx(1 / 3)
    assert all([m["role"] for m in body["messages"]] == ["system", "user"] for body in fake_openai.requests)
    assert score(tmp_path, "--metrics", "fineradscore", "--fineradscore-shots", str(tmp_path / "nope.json"),
                 *judge) == 2


# --- the evaluate module ---

def test_module_scores_through_the_judge(fake_openai, monkeypatch, tmp_path):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    module = evaluate.load(str(ROOT / "metrics" / "fineradscore"))
    fake_openai.replies = lambda prompt: ("Not sure." if "] Odd." in prompt or prompt.startswith("Your reply")
                                          else "{}" if "] Lungs are clear." in prompt else JUDGED)
    predictions, references = ["Right effusion.", "Lungs are clear.", "Odd."], ["Left effusion.", "Clear.", "X."]
    out = module.compute(predictions=predictions, references=references, judge_url=fake_openai.url,
                         judge_model=fake_openai.model, dataset="iu-xray", how="sum")
    # the unread third study counts as the worst sum for its one line: 4 x (1 + 1)
    assert out["fineradscore_per_sample"] == [4, 0, 8] and out["fineradscore"] == 4.0
    assert out["inv_fineradscore"] == 0.25 and out["judged_mean"] == 2.0 and out["judged"] == 2
    assert out["max_severity_per_sample"] == [3, 0, None] and out["sum_severity_per_sample"] == [4, 0, None]
    assert out["corrections_per_sample"][0][1] == {"line": None, "severity": 1, "correction": "Small effusion.",
                                                   "comments": "", "categories": ["False prediction of finding"]}
    assert out["corrections_per_sample"][1] == [] and out["corrections_per_sample"][2] is None
    assert (out["unparseable"], out["refused"], out["cut"], out["repaired"]) == (1, 0, 0, 0)
    assert out["replies"][2] == "Not sure." and out["problems_per_sample"][2].startswith("unreadable (it is not JSON")
    assert "|agg:sum|" in out["signature"] and fake_openai.calls == 4  # three studies and one repair turn
    assert np.isclose(out["inv_fineradscore"], 1 / out["fineradscore"])


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def fineradscore_reply(prompt: str) -> str:
    """A correction for each candidate line the reference lacks (urgent if it names a pleural or tube finding, else
    not actionable) and one inserted line when a reference sentence is missing."""
    numbered = between(prompt, "Generated Text: ", " \n \n Ground Truth Text: ")
    reference = sentences(between(prompt, " \n \n Ground Truth Text: ", None))
    lines = re.findall(r"\[(\d+)\] (.*?)(?= \[\d+\] |\Z)", numbered, re.DOTALL)

    def entry(severity):
        return {"corrections": "[delete]", "clinical severity": severity, "comments": "",
                "error category": ["False prediction of finding"]}
    out = {i: entry("Urgent error" if re.search("pleura|thorax|tube", line, re.IGNORECASE) else "Not actionable")
           for i, line in lines if sentences(line)[0] not in reference}
    if set(reference) - {s for _, line in lines for s in sentences(line)}:
        out["None"] = entry("Actionable nonurgent error")
    return json.dumps(out, ensure_ascii=False)


def fineradscore_empty(ctx, references):
    """"no line to correct, so only inserted lines": no numbered line reaches the judge; the judge here inserts a line
    as an actionable nonurgent error (2)."""
    assert split_lines("") == []
    assert all(re.search(r"Generated Text:  \n", p) for p in ctx.fake.prompts()[-len(references):])
    return np.full(len(references), 2.0)


class TestFineRadScoreContract(MetricContract):
    case = JudgedCase(
        name="fineradscore", cls=FineRadScore, replies=fineradscore_reply,
        make=lambda judge, settings: FineRadScore(judge, **settings), tolerance=0.0,
        why="severities read from the judge's answers; the loopback judge answers each prompt the same",
        nfd=AS_WRITTEN, nfd_why="'judged as written': the candidate's lines and the reference go into the prompt as "
        "given",
        empty_rule=fineradscore_empty, variant={"how": "sum"},
        skips={"split": "no features: the judge reads each pair, reference and candidate together",
               "oracle": "the reference scores with a GPT-4 judge: its prompts are the reference's text "
                         "(test_prompts_are_the_reference_text), its lines numbered as the reference numbers them"})
