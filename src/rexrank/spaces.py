"""Every metric's `evaluate` module and Space, written from its spec, one way for all (`python metrics/cards.py`).

Each metric of the registry has its folder `metrics/<folder>/` (its name, or the Space name it was published under:
`sembscore`, `radcliq`): `<folder>.py` (the `evaluate` module: a docstring, `_CITATION`, `_DESCRIPTION`,
`_KWARGS_DESCRIPTION`, one `evaluate.Metric` subclass calling `rexrank.hf_metric.compute`), `app.py` (the Space:
`rexrank.widget.metric_widget`) and `requirements.txt`, all three written here and checked in; and `README.md`, the
metric card, hand-written prose around the blocks written from the spec (the "At a glance" block, metrics/cards.py).
The module's texts are the spec's (what it measures, what an empty prediction scores, its options and defaults), its
arguments are those its computation reads (the spec's options, how it runs, its judge's settings, read from the
judge's own functions), its citation is its card's, and its docstring example is computed here where no weight or
judge is needed; where one is, the example says so and shows only what holds whatever the weights (a value in its
range). tests/metrics/test_generated_folders.py regenerates every folder and compares.
"""

from __future__ import annotations

import inspect
import math
import pprint
import re
import textwrap
from importlib import import_module
from pathlib import Path

from rexrank.hf_metric import EXAMPLES, REXRANK_CITATION, SPACE_NAMES, compute, example_of
from rexrank.scorers import REGISTRY, canonical, spec
from rexrank.scorers.spec import Spec

MADE = "Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."

# What each argument a module passes on means. A new argument of a judge's or a scorer's fails generation until it is
# described here (`_arguments`).
ARGUMENTS = {
    "device": "torch device. Default: cuda if available, else cpu.",
    "batch_size": "texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.",
    "dtype": "the local model's precision. Default: float16 on cuda, float32 on the CPU (signed).",
    "resamples": "bootstrap resamples of the 95% CI. Default 1000.",
    "seed": "the bootstrap's seed. Default 0.",
    "judge_url": "an OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.",
    "judge_model": "the served model's name. Default: REXRANK_JUDGE_MODEL. The key is read from OPENAI_API_KEY only.",
    "allow_endpoints": "non-loopback endpoints these texts may be sent to (for MIMIC-CXR, CheXpert Plus and "
                       "ReXGradient, only ones your data use agreement covers).",
    "concurrency": "requests in flight. Default 8.",
    "max_tokens": "answer tokens asked of the judge (signed).",
    "dataset": "where the texts come from, for the judge's data-use guard: a list of texts is never known to be "
               "public, so it goes only to a loopback endpoint or to one in allow_endpoints.",
    "model_path": "a local copy of the judge model, run with transformers instead of a server.",
    "max_length": "the local model's context (signed: changing it changes the metric).",
    "trust_remote_code": "run the tokenizer code the model's repository ships (signed). Default False.",
    "temperature": "the judge's sampling temperature (signed). Default 0.",
    "shots": "the example turns: \"synthetic\" (default), \"zero-shot\", or a path to a checkout or JSON list of them.",
    "how": "a study's score from its severities: \"max\" (default, ReXrank's) or \"sum\" (the paper's).",
    "reports": "the original report of each item (RadRBench-CXR's `original_report`).",
    "options": "each question's options, [\"A. ...\", \"B. ...\", ...] (ReXVQA's `options`).",
}
# What `references` is, where it is not one ground-truth report per prediction.
REFERENCES = {"radrscore": "list of str, or list of list of str): the ground-truth reasoning steps",
              "rexvqa_accuracy": "list of str): each question's correct letter"}
PREDICTIONS = {"radrscore": "the model's whole outputs, `<think>...</think><answer>...</answer>`",
               "rexvqa_accuracy": "the model's answers, as it wrote them"}
# What an option of several metrics means (a metric's own say more: `Spec.option_texts`).
OPTIONS = {"quoted": "the candidate's text quoted to the judge as data (False: the reference's messages)"}
HIDDEN = {"predictions", "references", "backend", "judge", "progress", "quoted", "self", "_"}


def folder_of(name: str) -> str:
    """The metrics/ folder (and Space name) of a metric."""
    return SPACE_NAMES.get(canonical(name), canonical(name))


def folders() -> dict[str, str]:
    """Every metric's folder -> its name, in the registry's order."""
    return {folder_of(name): name for name in REGISTRY}


def _judge_functions(made: Spec) -> list:
    module = import_module(made.implementation if isinstance(made.implementation, str)
                           else made.implementation.__module__)
    return [f for f in (getattr(module, n, None) for n in ("compute", "backend_for", "judge_for")) if f is not None]


def _arguments(made: Spec) -> dict[str, str]:
    """Each argument the module passes on beside the pairs -> its line, in the order they are read."""
    out = {}
    read = ({p for f in _judge_functions(made) for p in inspect.signature(f).parameters}
            if made.own_module and not made.report else set(made.options))
    for key, default in made.options.items():  # an option a module fixes (ReXVQA's parser) is not an argument
        if key in read:
            what = made.option_texts.get(key) or OPTIONS.get(key, "a setting that changes the number")
            out[key] = f"{what} (signed). Default {default!r}."
    if made.own_module:
        for function in _judge_functions(made):
            for parameter in inspect.signature(function).parameters.values():
                if parameter.name not in HIDDEN | set(out) and parameter.kind != parameter.VAR_KEYWORD:
                    out[parameter.name] = ARGUMENTS[parameter.name]
        return out
    if _needs_weights(made):
        out |= {key: ARGUMENTS[key] for key in ("device", "batch_size")}
    if made.sufficient or not made.per_text:  # a value with its CI (rexrank.scorecard.table_report)
        out |= {key: ARGUMENTS[key] for key in ("resamples", "seed")}
    return out


def _needs_weights(made: Spec) -> tuple[str, ...]:
    """The weights a metric needs (its own and its components'), by rexrank.models key."""
    return tuple(dict.fromkeys([*made.models, *(m for part in made.needs for m in spec(part).models)]))


def _returns(made: Spec) -> list[str]:
    name = made.name
    if made.sufficient:
        return [f"{name} (float): {made.title}, the statistic of the per-study counts summed.",
                f"{name}_ci (list of float): its 95% bootstrap interval over studies.",
                "per_sample (dict): each study's sufficient statistics by column, to merge or resample."]
    if made.combined:
        return [f"{name} (float): the mean over the pairs (lower is better).",
                f"inv_{name} (float): 1 / {name}, the board's value; inv_{name}_ci (list of float): its 95% CI.",
                f"{name}_per_sample (list of float): each pair's score.",
                f"{', '.join(made.needs)} (float): the components' means.",
                "non_positive_mean (bool): the mean is <= 0, so its inverse means nothing."]
    low, high = made.bounds
    lines = [f"{name} (float): the mean over the pairs{' (the board shows 1 / it)' if _inverse(made) else ''}.",
             f"{name}_per_sample (list of float): each pair's score, "
             f"{'unbounded' if math.isinf(high - low) else f'in [{low:g}, {high:g}]'}."]
    if made.judged:
        lines.append("judged (int), judged_mean (float or None), and the count of each problem: the pairs whose "
                     "answer was read and their mean; a pair not read counts as the worst.")
    return lines


def _inverse(made: Spec) -> bool:
    return made.statistic == "inverse_mean"


def _example(made: Spec) -> list[str]:
    """The docstring's example: computed here when it needs no weight and no judge, else marked as needing them."""
    folder, name = folder_of(made.name), made.name
    predictions, references, extra = example_of(name)
    call = [f">>> {folder} = evaluate.load(\"rexrank/{folder}\")", f">>> results = {folder}.compute("]
    for key, value in {"predictions": predictions, "references": references, **extra}.items():
        call += [f"...     {line}" for line in f"{key}={pprint.pformat(value, width=96)},".splitlines()]
    call.append("... )")
    weights, judge = _needs_weights(made), made.judged
    if not weights and not judge:
        value = compute(name, predictions, references, **extra)[name]
        return call + [f">>> round(results[\"{name}\"], 4)", f"{round(value, 4)}"]
    needed = []
    if weights:
        keys = " ".join(k.lower() for k in weights)
        needed.append(f"the weights of {', '.join(k.lower() for k in weights)} (rexrank models download {keys})")
    if judge:
        needed.append("a judge (REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL, or judge_url= and judge_model=)")
    low, high = made.bounds
    check = (f">>> {low:g} <= results[\"{name}\"] <= {high:g}" if math.isfinite(low) and math.isfinite(high)
             else f">>> isinstance(results[\"{name}\"], float)")
    note = f"Needs {' and '.join(needed)}: its value depends on them, so the example shows only its range."
    return [*textwrap.wrap(note, 112), "", *call, check, "True"]


def needs_for_example(name: str) -> str:
    """Why a metric's docstring example needs more than rexrank (weights, a judge); empty when it does not."""
    made = spec(name)
    needed = [*(["weights"] if _needs_weights(made) else []), *(["a judge"] if made.judged else [])]
    return " and ".join(needed)


def _kwargs(made: Spec) -> str:
    name = made.name
    lines = ["Args:",
             f"    predictions (list of str): {PREDICTIONS.get(name, 'generated reports')}.",
             f"    references ({REFERENCES.get(name, 'list of str): one ground-truth report per prediction')}."]
    for key, text in _arguments(made).items():
        lines += textwrap.wrap(f"{key} (optional): {text}", 112, initial_indent="    ", subsequent_indent="        ")
    lines.append("Returns:")
    for text in [*_returns(made), "signature (str): how the number was made."]:
        lines += textwrap.wrap(text, 112, initial_indent="    ", subsequent_indent="        ")
    lines.append("Examples:")
    lines += [f"    {line}" if line else "" for line in _example(made)]
    return "\n" + "\n".join(lines) + "\n"


def _description(made: Spec) -> str:
    parts = [made.summary, made.convention, f"An empty prediction: {made.empty_prediction}.",
             f"rexrank's docs/metrics.md {made.section} defines it."]
    return "\n".join(textwrap.wrap(" ".join(p for p in parts if p), 116)) + "\n"


def card_citation(card: str) -> str:
    """The BibTeX of a metric card's Citation section (its fenced blocks, joined)."""
    section = re.search(r"^## Citation\n(.*?)(?=^## |\Z)", card, flags=re.M | re.S)
    blocks = re.findall(r"```(?:bibtex)?\n(.*?)```", section[1] if section else "", flags=re.S)
    return "".join(blocks)


def _literal(text: str) -> str:
    """`text` as a triple-quoted Python literal."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""\\\n{body}"""' if not body.startswith("\n") else f'"""{body}"""'


_MODULE = '''"""{title} for `evaluate`, as rexrank computes it.
{made}"""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = {citation}

_DESCRIPTION = {description}

_KWARGS_DESCRIPTION = {kwargs}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class {cls}(evaluate.Metric):
    def _info(self):
        return metric_info({name!r}, _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute({name!r}, predictions, references, **options)
'''

_APP = '''"""{title}'s Space: paste the inputs, get what its `evaluate` module computes.
{made}"""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget({name!r}, Path(__file__).with_name("README.md"))

if __name__ == "__main__":
    demo.launch()
'''


def requirements(made: Spec) -> str:
    extras = [*(["models"] if _needs_weights(made) or getattr(made.implementation, "local", False) else []),
              *(["llm"] if made.judged else [])]
    return f"rexrank{'[' + ','.join(extras) + ']' if extras else ''}>=0.1.0\nevaluate>=0.4.6\ndatasets>=3.0\n"


def files(name: str, card: str) -> dict[str, str]:
    """The three files of a metric's folder written from its spec (`card`: its README, whose citation it quotes)."""
    made, folder = spec(name), folder_of(name)
    cls = "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", folder))
    citation = card_citation(card) + REXRANK_CITATION
    return {f"{folder}.py": _MODULE.format(title=made.title, made=MADE, citation=_literal(citation),
                                           description=_literal(_description(made)), kwargs=_literal(_kwargs(made)),
                                           cls=cls, name=made.name),
            "app.py": _APP.format(title=made.title, made=MADE, name=made.name),
            "requirements.txt": requirements(made)}


def write(name: str, into: Path) -> list[Path]:
    """A metric's three files written into `into` (its card, README.md, read from there)."""
    card = (into / "README.md").read_text(encoding="utf-8") if (into / "README.md").is_file() else ""
    written = []
    for file, text in files(name, card).items():
        (into / file).write_text(text, encoding="utf-8")
        written.append(into / file)
    return written


__all__ = ["EXAMPLES", "files", "folder_of", "folders", "needs_for_example", "requirements", "write"]
