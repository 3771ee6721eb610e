"""Every metrics/<name>/ folder is an `evaluate` module and a Space, as-is."""

import ast
import json
import math

import evaluate
import pytest
import yaml
from conftest import ROOT, metric_space

from rexrank.errors import InputError
from rexrank.hf_metric import compute
from rexrank.publish import metric_folders
from rexrank.scorers import spec

MODULES = [folder.name for folder in metric_folders()]  # folders holding <name>/<name>.py, not __pycache__


def test_there_are_modules():
    assert "bleu2" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_folder_shape(name):
    folder = metric_space(name)
    assert {f"{name}.py", "README.md", "requirements.txt", "app.py"} <= {p.name for p in folder.iterdir()}
    tree = ast.parse((folder / f"{name}.py").read_text())
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets}
    assert {"_CITATION", "_DESCRIPTION", "_KWARGS_DESCRIPTION"} <= assigned
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert len(classes) == 1 and ast.unparse(classes[0].bases[0]) == "evaluate.Metric"
    card = (folder / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(header["tags"])
    for section in ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                    "## Limitations and Bias", "## Citation"):
        assert section in card
    assert "rexrank" in (folder / "requirements.txt").read_text()


def test_bleu2_module_loads_and_matches_the_library():
    module = evaluate.load(str(ROOT / "metrics" / "bleu2"))
    predictions = ["Heart size is normal.", "", "Small left effusion, stable."]
    references = ["Heart size is normal.", "No pneumothorax.", "Small left pleural effusion, unchanged."]
    out = module.compute(predictions=predictions, references=references)
    assert set(out) == {"bleu2", "bleu2_per_sample", "signature"}
    assert out == compute("bleu2", predictions, references)
    assert out["bleu2_per_sample"][:2] == [1.0, 0.0]
    assert 0 < out["bleu2_per_sample"][2] < 1


def test_bleu2_docstring_example_is_true():
    import doctest

    module = evaluate.load(str(ROOT / "metrics" / "bleu2"))
    test = doctest.DocTestParser().get_doctest(module.inputs_description.replace('"rexrank/bleu2"', repr(
        str(ROOT / "metrics" / "bleu2"))), {"evaluate": evaluate}, "bleu2", None, 0)
    runner = doctest.DocTestRunner()
    assert runner.run(test).failed == 0 and runner.tries >= 3


@pytest.mark.parametrize(("folder", "key"), [("bertscore", "bertscore"), ("sembscore", "semb_score")])
def test_model_modules_load_and_match_the_library(local_models, folder, key):
    module = evaluate.load(str(ROOT / "metrics" / folder))
    predictions = ["Heart size is normal.", "", "Small left effusion, stable."]
    references = ["Heart size is normal.", "No pneumothorax.", "Small left pleural effusion, unchanged."]
    out = module.compute(predictions=predictions, references=references)
    assert out == compute(key, predictions, references)
    assert out[key] == pytest.approx(sum(out[f"{key}_per_sample"]) / 3)
    assert out[f"{key}_per_sample"][0] == pytest.approx(1.0, abs=1e-6)
    assert "local:" in out["signature"]
    if key == "semb_score":
        assert set(out["chexbert_label_f1"]) == {"micro_f1_14", "macro_f1_14", "micro_f1_5", "macro_f1_5"}
        assert out["sembscore"] == out["semb_score"]  # the old key, kept


@pytest.mark.slow
def test_the_bertscore_module_passes_the_stacks_choices_on(local_models):
    module = evaluate.load(str(ROOT / "metrics" / "bertscore"))
    predictions, references = ["Heart size is normal.", "Small left effusion."], ["Mild edema.", "No effusion."]
    options = {"prefix_space": False, "specials": "drop", "max_tokens": 64, "baseline": None}
    out = module.compute(predictions=predictions, references=references, **options)
    assert out == compute("bertscore", predictions, references, **options)
    assert "|space:none|trunc:64|specials:drop|rescale:no|" in out["signature"]
    assert out["bertscore_per_sample"] != module.compute(predictions=predictions,
                                                         references=references)["bertscore_per_sample"]


def test_metrics_have_one_name_and_their_old_names_as_aliases():
    from rexrank.scorers import COMPOSITES, aliases, canonical, parse_metrics, spec

    assert parse_metrics("sembscore,radgraph_combined,bleu2") == ["semb_score", "radgraph", "bleu2"]
    assert canonical("radgraph_combined") == "radgraph" and spec("sembscore").name == "semb_score"
    # every module's Space name is a metric's name or another name for it: `--metrics radcliq` is RadCliQ-v1
    assert parse_metrics("radcliq,radcliq_v1") == ["radcliq_v1"]
    assert spec("radcliq").implementation is COMPOSITES["radcliq_v1"]
    assert aliases("radcliq_v1") == ("radcliq",) and aliases("bleu2") == ()
    with pytest.raises(InputError, match="not one string"):
        compute("bleu2", "Heart size is normal.", "Heart size is normal.")  # 21 one-character reports, once




def test_radgraph_module_returns_the_rexrank_number_and_rewards_apart(local_models):
    module = evaluate.load(str(ROOT / "metrics" / "radgraph"))
    predictions = ["Small left pleural effusion.", "Mild cardiomegaly."]
    references = ["Small left effusion.", "Heart size is normal."]
    out = module.compute(predictions=predictions, references=references)
    assert out == compute("radgraph", predictions, references)
    assert out["radgraph"] == out["radgraph_combined"]  # the old key, kept
    assert out["radgraph_per_sample"] == out["radgraph_combined_per_sample"]
    assert set(out["f1radgraph_rewards"]) == {"simple", "partial", "complete"}


def test_ratescore_module_passes_the_weights_and_returns_the_scorer_numbers(local_models):
    module = evaluate.load(str(ROOT / "metrics" / "ratescore"))
    predictions = ["Small left pleural effusion. No pneumothorax.", "Mild cardiomegaly.", ""]
    references = ["Small left effusion.", "Heart size is normal.", "No acute process."]
    out = module.compute(predictions=predictions, references=references, weights="short")
    assert out == compute("ratescore", predictions, references, weights="short")
    assert out["ratescore_per_sample"][2] == 0.5 and "weights:short" in out["signature"]


@pytest.mark.slow
def test_radcliq_module_combines_the_four_components_once(local_models):
    from rexrank.scorers.radcliq import COMPONENTS, RADCLIQ_V1

    module = evaluate.load(str(ROOT / "metrics" / "radcliq"))
    predictions = ["Small left pleural effusion.", "Mild cardiomegaly.", ""]
    references = ["Small left effusion.", "Heart size is normal.", "No acute process."]
    out = module.compute(predictions=predictions, references=references, resamples=100)
    components = [compute(c, predictions, references)[f"{c}_per_sample"] for c in COMPONENTS]
    assert out["radcliq_v1_per_sample"] == pytest.approx(RADCLIQ_V1(components).tolist(), abs=1e-12)
    assert out["radcliq_v1"] == pytest.approx(sum(out["radcliq_v1_per_sample"]) / 3)
    assert out["inv_radcliq_v1"] == pytest.approx(1 / out["radcliq_v1"])
    assert {c: out[c] for c in COMPONENTS} == pytest.approx({c: sum(v) / 3 for c, v in zip(COMPONENTS, components)})
    assert "radgraph:1" in out["signature"] and "boot:100:seed=0" in out["signature"]


def space_app(name: str):
    from fixtures.scripts import load

    return load(metric_space(name) / "app.py", f"space_app_{name}")  # builds the interface; the Space launches it


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_the_space_app_builds(name):
    import gradio as gr

    app = space_app(name)
    assert isinstance(app.demo, gr.Blocks) and app.demo.title
    assert "## Metric Description" in app.demo.article  # the metric card below the widget


# One reply every judged reader can read: GREEN's sections, FineRadScore's corrections object (none needed), and
# each RadRScore stage's JSON (key observations and the three counts).
GREEN_ANSWER = ("[Explanation]:\nSame.\n\n[Clinically Significant Errors]:\n"
                + "\n".join(f"({k}) Error: 0." for k in "abcdef")
                + "\n\n[Clinically Insignificant Errors]:\n(a) Error: 0.\n\n[Matched Findings]:\n1. Effusion.")
RADRSCORE_ANSWER = json.dumps({"key_conclusion": [{"observation": "effusion", "status": "absent"}],
                               "effective_count": 1, "ineffective_count": 0, "recalled_count": 1,
                               "correct_count": 1})


@pytest.mark.parametrize("name", MODULES)
def test_the_space_answers_what_its_module_computes(name, local_models, fake_openai, monkeypatch, tmp_path):
    """Submitting the Space's own example returns exactly what `evaluate.load` of the same folder computes (the
    judged metrics' judge from the Space's secrets, here a loopback fake)."""
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
    monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)
    fake_openai.replies = lambda prompt: {"green": GREEN_ANSWER, "fineradscore": "{}"}.get(name, RADRSCORE_ANSWER)
    app = space_app(name)
    example = [component.value for component in app.demo.input_components]
    shown = app.demo.fn(*example)
    module = evaluate.load(str(metric_space(name)))
    if name == "radrscore":
        prediction, steps, report = example
        steps = [line.strip() for line in steps.splitlines() if line.strip()]
        want = module.compute(predictions=[prediction], references=[steps], reports=[report], dataset=None)
    elif name == "rexvqa_accuracy":  # one question: its answer, its options one per line, its letter
        prediction, options, letter = example
        want = module.compute(predictions=[prediction], references=[letter.strip()],
                              options=[[line.strip() for line in options.splitlines() if line.strip()]])
    else:
        want = module.compute(predictions=example[0].splitlines(), references=example[1].splitlines())
    assert shown == want
    key = {"radcliq": "radcliq_v1", "sembscore": "semb_score"}.get(name, name)
    assert isinstance(shown[key], float) and not math.isnan(shown[key]) and shown["signature"]


@pytest.mark.subprocess
@pytest.mark.slow
def test_bytecode_beside_the_modules_is_no_module():
    """The README's test command on a machine that writes bytecode (PYTHONDONTWRITEBYTECODE unset) leaves
    metrics/__pycache__/cards.*.pyc behind: the next collection must not take that folder for a metric module."""
    import importlib.util
    import os
    import py_compile
    import subprocess
    import sys

    cards = ROOT / "metrics" / "cards.py"
    py_compile.compile(str(cards), cfile=importlib.util.cache_from_source(str(cards)), doraise=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/metrics/test_metric_modules.py", "tests/metrics/test_docstring_examples.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "__pycache__" not in run.stdout and "[bleu2]" in run.stdout


def test_compute_answers_every_metric_of_the_registry_as_its_spec_makes_it(local_models):
    """`compute` once answered "unknown metric 'chexbert_micro_f1_14'" for a metric the registry lists: every metric
    scored on report pairs (not the judged ones, whose modules are tested with a judge) gives its value."""
    from rexrank.scorers import REGISTRY

    predictions = ["Heart size is normal.", "Small left effusion, stable.", "No pneumothorax."]
    references = ["Heart size is normal.", "Small left pleural effusion, unchanged.", "Mild cardiomegaly."]
    for name, made in REGISTRY.items():
        if made.kind in ("judged", "reasoning", "vqa"):  # need a judge, or each question's options
            continue
        out = compute(name, predictions, references, batch_size=8)
        value = out[name] if made.kind != "composite" else out[f"inv_{name}"]
        assert isinstance(value, float) and math.isfinite(value), name
        assert out["signature"].startswith(f"{name}:{made.version}"), name


def test_a_bleu4_module_computes_what_compute_does_with_its_options():
    module = evaluate.load(str(metric_space("bleu4")))
    predictions = ["Heart size is normal. No effusion.", "", "Small left effusion, stable."]
    references = ["Heart size is normal.", "No pneumothorax.", "Small left pleural effusion, unchanged."]
    assert module.compute(predictions=predictions, references=references, tokenize="none") == compute(
        "bleu4", predictions, references, tokenize="none")
    # no dataset named: R2Gen's default cleaner, MIMIC-CXR's, and the signature says so
    assert module.compute(predictions=predictions, references=references)["signature"].startswith(
        f"bleu4:{spec('bleu4').version}|tok:r2gen-mimic|")
