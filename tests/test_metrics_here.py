"""`rexrank metrics` says, for each metric, whether it can run on this machine now and what it lacks (weights and the
command that fetches them, a judge), as `rexrank models check` does for the models: nothing is downloaded."""

import importlib

import pytest

from rexrank import models
from rexrank.cli import main
from rexrank.scorers import METRICS, SCORERS


def here(capsys) -> dict[str, str]:
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out.split("\non this machine now")[1]
    rows = [line.split(None, 1) for line in out.splitlines()[1:] if line.startswith("  ")]
    return {name: state for name, state in rows}


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # not the developer's own cache
    for key in ("REXRANK_JUDGE_URL", "REXRANK_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)


def test_without_weights_or_a_judge_only_bleu2_runs_and_each_other_says_what_it_needs(empty_cache, capsys):
    state = here(capsys)
    assert list(state) == list(METRICS)
    assert state["bleu2"] == "runs here"
    assert state["semb_score"] == ("not here: needs weights of chexbert, bert_base_uncased: rexrank models download "
                                   "chexbert bert_base_uncased")
    assert state["radcliq_v1"] == "not here: needs radgraph, bertscore, semb_score, which cannot run here"
    assert state["chexbert_micro_f1_14"] == "not here: needs semb_score, which cannot run here"
    assert state["fineradscore"] == ("not here: needs a judge: --judge-url URL --judge-model NAME (or "
                                     "REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL)")
    assert state["green"].endswith("or GREEN's own weights: rexrank models download green (13.5 GB)")


def test_with_the_weights_and_a_judge_every_metric_runs(empty_cache, local_models, tiny_bert_base, monkeypatch,
                                                        capsys):
    monkeypatch.setenv("REXRANK_MODEL_RADGRAPH_ENCODER", str(tiny_bert_base))  # a real archive's config names it
    monkeypatch.setenv("REXRANK_JUDGE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REXRANK_JUDGE_MODEL", "judge")
    assert set(here(capsys).values()) == {"runs here"}
    monkeypatch.delenv("REXRANK_MODEL_BIOLORD")  # one of RaTEScore's two models gone: it alone says so
    state = here(capsys)
    assert state["ratescore"] == "not here: needs weights of biolord: rexrank models download biolord"
    assert [name for name, said in state.items() if said != "runs here"] == ["ratescore"]


@pytest.mark.parametrize("name", [name for name, scorer in SCORERS.items() if scorer.models])
def test_a_scorers_models_are_the_weights_it_resolves(name, local_models, monkeypatch):
    module = importlib.import_module(SCORERS[name].__module__)
    asked = []

    def resolve(key, download=True):
        asked.append(key)
        return models.resolve(key, download)

    monkeypatch.setattr(module, "resolve", resolve)
    SCORERS[name](progress=False)
    assert asked and tuple(asked) == SCORERS[name].models[:len(asked)]  # RadGraph's encoder: resolved as it loads
