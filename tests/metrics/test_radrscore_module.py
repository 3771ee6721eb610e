"""metrics/radrscore loads as an `evaluate` module and scores through the loopback OpenAI-compatible judge."""

import json

import evaluate
import pytest
from conftest import ROOT

from rexrank.scorers.radrscore import (
    PROMPT_VERSION,
    completeness_prompt,
    effectiveness_prompt,
    extraction_prompt,
    factuality_prompt,
)

OUTPUTS = ["<think>The costophrenic angles are sharp.</think><answer>B</answer>",
           "<think>The heart is enlarged.</think><answer>A</answer>"]
STEPS = [["Examine the costophrenic angles.", "They are sharp: no effusion."],
         ["Measure the cardiothoracic ratio.", "It is above one half: cardiomegaly."]]
REPORTS = ["No pleural effusion.", "Mild cardiomegaly."]


def key_findings(*observations: str) -> dict:
    return {"key_conclusion": [{"observation": o, "status": "as described"} for o in observations]}


def script(steps: list) -> dict[str, str]:
    """Item 0: Rc 1/2, Rf 1, Re 1 (fenced replies); item 1: the recall reply is prose, so it is unscored."""
    ref = [key_findings("costophrenic angles", "effusion"), key_findings("cardiothoracic ratio")]
    pred = [key_findings("costophrenic angles"), key_findings("heart size")]
    recall = ['```json\n{"recalled_findings": [], "recalled_count": 1}\n```', "One finding was recalled."]
    replies = {}
    for i in range(2):
        replies[extraction_prompt(steps[i])] = json.dumps(ref[i])
        replies[extraction_prompt(OUTPUTS[i])] = f"```json\n{json.dumps(pred[i])}\n```"
        replies[effectiveness_prompt(steps[i], OUTPUTS[i])] = '{"effective_count": 2, "ineffective_count": 0}'
        replies[completeness_prompt(ref[i], pred[i])] = recall[i]
        replies[factuality_prompt(REPORTS[i], pred[i])] = '{"correct_steps": [], "correct_count": 1}'
    return replies


@pytest.fixture
def module():
    return evaluate.load(str(ROOT / "metrics" / "radrscore"))


def test_module_scores_lists_of_steps_and_reruns_from_the_cache(module, fake_openai, monkeypatch, tmp_path):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    fake_openai.default_reply = "UNSCRIPTED PROMPT"
    fake_openai.replies = script(STEPS)
    out = module.compute(predictions=OUTPUTS, references=STEPS, reports=REPORTS, judge_url=fake_openai.url,
                         judge_model=fake_openai.model)
    # the second item's replies could not all be read: it counts 0 in each component, and is counted
    assert out["completeness_per_sample"] == [0.5, 0.0] and out["factuality_per_sample"] == [1.0, 0.0]
    assert out["effectiveness_per_sample"] == [1.0, 0.0]
    assert out["radrscore_per_sample"] == [pytest.approx(2.5 / 3), 0.0]
    assert out["radrscore"] == pytest.approx(2.5 / 6) and out["completeness"] == 0.25
    assert out["judged_mean"] == pytest.approx(2.5 / 3) and out["judged_completeness"] == 0.5
    assert (out["unparseable"], out["refused"], out["cut"], out["out_of_range"]) == (1, 0, 0, 0)
    assert out["problems"] == [None, "completeness: unparseable"]
    assert out["counts_per_sample"][0]["reference_observations"] == 2
    assert out["judge_replies"][1]["completeness"] == "One finding was recalled."
    assert out["signature"].startswith(f"radrscore:4|backend:judge:{fake_openai.model}:t=0:max_tokens=4096|"
                                       f"prompt:{PROMPT_VERSION}|")
    # the two figures are each signed for what they are: an unread item at 0, or left out
    assert "|unreadable:worst|" in out["signature"] and "|unreadable:left-out|" in out["judged_signature"]
    assert out["judged_signature"].replace("left-out", "worst") == out["signature"]
    assert fake_openai.calls == 10 and all(body["max_tokens"] == 4096 for body in fake_openai.requests)
    # a list of steps reaches the judge as the reference's f-string prints it
    assert any("1. Reason Steps: ['Examine the costophrenic angles.', 'They are sharp: no effusion.']\n" in prompt
               for prompt in fake_openai.prompts())
    # the endpoint from the environment, as a Space's secrets give it; the cache answers everything
    monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
    monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)
    again = module.compute(predictions=OUTPUTS, references=STEPS, reports=REPORTS)
    assert fake_openai.calls == 10 and again == out


def test_module_takes_reasoning_steps_as_text(module, fake_openai):
    steps = [" ".join(s) for s in STEPS]
    fake_openai.replies = script(steps)
    out = module.compute(predictions=OUTPUTS, references=steps, reports=REPORTS, judge_url=fake_openai.url,
                         judge_model=fake_openai.model)
    assert out["completeness_per_sample"] == [0.5, 0.0]
    assert any(f"1. Reason Steps: {steps[0]}\n" in prompt for prompt in fake_openai.prompts())


def test_module_refuses_radrbench_text_to_a_public_endpoint(module, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(Exception, match="refusing to send RadRBench-CXR"):
        module.compute(predictions=OUTPUTS, references=STEPS, reports=REPORTS,
                       judge_url="https://api.example.com/v1", judge_model="gpt-4o")


@pytest.mark.slow
def test_module_needs_the_reports(module, fake_openai):
    with pytest.raises(ValueError, match="RadRScore needs reports"):
        module.compute(predictions=OUTPUTS, references=STEPS, judge_url=fake_openai.url,
                       judge_model=fake_openai.model)
