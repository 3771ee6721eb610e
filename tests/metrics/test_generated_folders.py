"""Every metric of the registry has its metrics/<folder>/, written one way (rexrank.spaces, `python metrics/cards.py`),
as checked in; and `evaluate.load` of the local folder, offline, computes what `rexrank.hf_metric.compute` does
(evaluate's tests/test_metric_common.py: one test over every folder a glob finds)."""

import shutil

import evaluate
import pytest
from conftest import ROOT
from fixtures.scripts import load
from test_docstring_examples import REPLIES, kwargs_description

from rexrank import spaces
from rexrank.hf_metric import compute, example_of
from rexrank.scorers import REGISTRY, Kind, spec

METRICS_DIR = ROOT / "metrics"
FOUND = sorted(p.parent.name for p in METRICS_DIR.glob("*/README.md"))  # every folder, found by a glob
MADE = spaces.folders()  # every registry metric's folder -> its name


def test_every_registry_metric_has_a_folder_and_every_folder_is_a_metrics():
    assert sorted(MADE) == FOUND
    assert sorted(MADE.values()) == sorted(REGISTRY)


@pytest.mark.parametrize("folder", sorted({*FOUND, *MADE}))
def test_a_folder_is_what_its_spec_writes(folder, tmp_path):
    """Regenerated into a temporary folder beside its own card, each written file is byte for byte the one checked
    in, and the card's block is what metrics/cards.py writes: edit the spec, then run `python metrics/cards.py`."""
    assert folder in MADE, f"metrics/{folder}/ is no metric of the registry"
    into = tmp_path / folder
    into.mkdir()
    shutil.copy(METRICS_DIR / folder / "README.md", into / "README.md")
    for path in spaces.write(MADE[folder], into):
        assert (METRICS_DIR / folder / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"metrics/{folder}/{path.name} is stale: run python metrics/cards.py")
    cards = load(METRICS_DIR / "cards.py", "metric_cards")
    text = (METRICS_DIR / folder / "README.md").read_text(encoding="utf-8")
    if folder in cards.CARDS:
        assert cards.card(folder, text) == text, f"metrics/{folder}/README.md's block is stale"


def test_a_spec_change_makes_the_module_stale(tmp_path, monkeypatch):
    """The drift test can fail: a metric's summary changed, its module is no longer what is checked in."""
    import dataclasses

    import rexrank.spaces as module

    changed = dataclasses.replace(spec("bleu2"), summary="Something else.")
    monkeypatch.setattr(module, "spec", lambda name: changed if name == "bleu2" else spec(name))
    card = (METRICS_DIR / "bleu2" / "README.md").read_text(encoding="utf-8")
    assert module.files("bleu2", card)["bleu2.py"] != (METRICS_DIR / "bleu2" / "bleu2.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder", sorted(MADE))
def test_an_example_says_what_it_needs(folder):
    """An example computed without weights shows its value; one that needs weights or a judge says so and shows
    only what holds whatever they are (its run with the tiny stand-ins: test_docstring_examples.py)."""
    text, needs = kwargs_description(folder), spaces.needs_for_example(MADE[folder])
    made = spec(MADE[folder])
    assert ("Needs the weights" in text) == bool(made.models or any(spec(n).models for n in made.needs))
    assert ("Needs a judge" in text) == (made.kind in (Kind.JUDGED, Kind.REASONING))
    assert bool(needs) == ("Needs " in text)


def _judge(name, fake_openai, monkeypatch):
    if name in REPLIES:
        fake_openai.replies = REPLIES[name]
        monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
        monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)


@pytest.mark.parametrize("folder", sorted(MADE))
def test_evaluate_load_of_the_local_folder_computes_what_compute_does(folder, local_models, fake_openai, monkeypatch):
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    name = MADE[folder]
    _judge(name, fake_openai, monkeypatch)
    module = evaluate.load(str(METRICS_DIR / folder))  # the folder as checked in, by its local path
    predictions, references, extra = example_of(name)
    out = module.compute(predictions=predictions, references=references, **extra)
    assert out == compute(name, predictions, references, **extra)
    assert out["signature"].startswith(f"{name}:{spec(name).version}")
