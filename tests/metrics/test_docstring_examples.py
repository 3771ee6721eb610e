"""Every `evaluate` module's docstring example runs as written, offline: each metrics/<name>/ folder is served as the
Space `rexrank/<name>` by the loopback Hub (so `evaluate.load("rexrank/<name>")` resolves as it will once published),
the model metrics find their tiny stand-in weights through rexrank's own resolution, and the judged metrics find a
loopback OpenAI-compatible judge through REXRANK_JUDGE_URL / REXRANK_JUDGE_MODEL, the variables the examples name."""

import ast
import doctest
import json

import evaluate
import pytest
from conftest import metric_space
from fakehub import use_evaluate_endpoint

from rexrank.publish import metric_folders
from rexrank.scorers import ALIASES, METRICS, canonical
from rexrank.scorers.radrscore import EFFECTIVENESS_PROMPT, EXTRACT_PROMPT, FACTUALITY_PROMPT, RECALL_PROMPT

MODULES = [folder.name for folder in metric_folders()]  # folders holding <name>/<name>.py, not __pycache__
JUDGED = {"green", "fineradscore", "radrscore"}


def kwargs_description(name: str) -> str:
    """The module's `_KWARGS_DESCRIPTION`, read from its source without importing it."""
    tree = ast.parse((metric_space(name) / f"{name}.py").read_text())
    [text] = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
              and any(getattr(t, "id", None) == "_KWARGS_DESCRIPTION" for t in node.targets)]
    return text


def green_reply(prompt: str) -> str:
    return ("[Explanation]:\nThe candidate reports the effusion.\n\n[Clinically Significant Errors]:\n"
            + "\n".join(f"({k}) Some error kind: 0." for k in "abcdef")
            + "\n\n[Clinically Insignificant Errors]:\n(a) Some error kind: 0.\n\n[Matched Findings]:\n"
              "1. Left pleural effusion.")


def radrscore_reply(prompt: str) -> str:
    """A reply of the shape each of RadRScore's four prompts asks for."""
    findings = {"key_conclusion": [{"observation": "costophrenic angles", "status": "sharp"}]}
    for template, reply in ((EXTRACT_PROMPT, findings), (RECALL_PROMPT, {"recalled_findings": [], "recalled_count": 1}),
                            (FACTUALITY_PROMPT, {"correct_steps": [], "correct_count": 1}),
                            (EFFECTIVENESS_PROMPT, {"effective_count": 2, "ineffective_count": 0})):
        if prompt.startswith(template[:80]):
            return json.dumps(reply)
    return "UNSCRIPTED PROMPT"


REPLIES = {"green": green_reply, "fineradscore": lambda prompt: "{}", "radrscore": radrscore_reply}


@pytest.fixture
def served(fake_hub, monkeypatch, tmp_path):
    """Every metrics/<name>/ folder as the Space rexrank/<name>, read by evaluate from the loopback Hub."""
    for name in MODULES:
        folder = metric_space(name)
        fake_hub.add_repo(f"rexrank/{name}", {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()},
                          repo_type="space")
    use_evaluate_endpoint(monkeypatch, fake_hub.url, tmp_path / "evaluate")
    return fake_hub


def test_every_module_has_an_example_and_names_a_known_metric():
    for name in MODULES:
        examples = doctest.DocTestParser().get_examples(kwargs_description(name))
        assert examples and f'evaluate.load("rexrank/{name}")' in examples[0].source, name
        # a module's Space name is a metric's one name or one of its other names
        assert canonical(name) in (*METRICS, "radrscore", "rexvqa_accuracy"), name
    assert {ALIASES[n] for n in MODULES if n in ALIASES} == {"semb_score", "radcliq_v1"}


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_example_runs_as_written(name, served, local_models, fake_openai, monkeypatch, tmp_path):
    if name in JUDGED:
        fake_openai.replies = REPLIES[name]
        monkeypatch.setenv("REXRANK_JUDGE_URL", fake_openai.url)
        monkeypatch.setenv("REXRANK_JUDGE_MODEL", fake_openai.model)
    test = doctest.DocTestParser().get_doctest(kwargs_description(name), {"evaluate": evaluate}, name,
                                               f"metrics/{name}/{name}.py", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0 and runner.tries == len(test.examples) >= 3, "".join(failures)
    assert served.downloads(f"{name}.py") >= 1  # loaded from the Space, by its Hub name
    if name in JUDGED:
        assert fake_openai.calls >= 1  # judged by the loopback judge the environment names
