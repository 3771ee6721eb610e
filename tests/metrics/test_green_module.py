"""metrics/green loads as an `evaluate` module and scores through the loopback OpenAI-compatible judge."""

import evaluate
import pytest
from conftest import ROOT

from rexrank.scorers.green import PROMPT_VERSION, build_prompt


def answer(significant_a: int, matched: str) -> str:
    lines = [f"(a) False report of a finding in the candidate: {significant_a}.",
             *(f"({k}) Some error kind: 0." for k in "bcdef")]
    return ("[Explanation]:\nComparison.\n\n[Clinically Significant Errors]:\n" + "\n".join(lines)
            + "\n\n[Clinically Insignificant Errors]:\n(a) False report of a finding in the candidate: 2.\n\n"
            + f"[Matched Findings]:\n{matched}")


@pytest.fixture
def module():
    return evaluate.load(str(ROOT / "metrics" / "green"))


def test_module_scores_through_the_judge_and_reruns_from_the_cache(module, fake_openai, monkeypatch, tmp_path):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    predictions = ["Small left effusion.", "Mild cardiomegaly.", "Lungs are clear."]
    references = ["Small left pleural effusion.", "Heart size is normal.", "Lungs are clear."]
    replies = {build_prompt(references[0], predictions[0]): answer(1, "1. Left effusion."),
               build_prompt(references[1], predictions[1]): "The reports disagree.",
               build_prompt(references[2], predictions[2]): answer(0, "2. Clear lungs; no effusion.")}
    fake_openai.replies = replies
    out = module.compute(predictions=predictions, references=references, judge_url=fake_openai.url,
                         judge_model=fake_openai.model, dataset="iu-xray")
    # the unreadable answer counts 0, GREEN's worst; the mean over the answers read is beside it
    assert out["green_per_sample"] == [0.5, 0.0, 1.0] and out["green"] == 0.5 and out["judged_mean"] == 0.75
    assert (out["unparseable"], out["refused"], out["cut"], out["judged"]) == (1, 0, 0, 2)
    assert out["green_counts_per_sample"][1] is None
    assert out["green_counts_per_sample"][0]["significant_a"] == 1
    assert out["green_counts_per_sample"][0]["insignificant_a"] == 2
    assert out["green_counts"]["matched"] == 3 and out["green_counts"]["significant_a"] == 1
    assert out["completions"][1] == "The reports disagree."
    assert out["problems_per_sample"] == [None, "no significant-errors or matched-findings count to read", None]
    assert out["signature"].startswith(f"green:5|backend:judge:{fake_openai.model}:t=0:max_tokens=server|"
                                       f"prompt:{PROMPT_VERSION}|words:300|")
    # no max_tokens: a server with --max-model-len 2048 gives each answer what its prompt leaves (vLLM answers 400
    # to a request whose prompt plus max_tokens exceeds the context)
    assert fake_openai.calls == 3 and all("max_tokens" not in body for body in fake_openai.requests)
    # the endpoint from the environment, as a Space's secrets give it; the cache answers everything
    monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
    monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)
    again = module.compute(predictions=predictions, references=references)
    assert fake_openai.calls == 3 and again == out


def test_module_refuses_mimic_reports_to_a_public_endpoint(module, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(Exception, match="refusing to send MIMIC-CXR"):
        module.compute(predictions=["a"], references=["b"], judge_url="https://api.example.com/v1",
                       judge_model="gpt-4o", dataset="mimic-cxr")


def test_module_runs_a_local_model(module, tiny_llama):
    out = module.compute(predictions=["Small left effusion."], references=["No effusion."],
                         model_path=str(tiny_llama), max_length=700)  # the prompt and its system message fit
    assert out["green_per_sample"] == [0.0] and out["unparseable"] == 0 and out["cut"] == 1
    assert ":float32:max_length=700|" in out["signature"] and "|quoted:yes|" in out["signature"]
