"""What every `evaluate` module in metrics/ declares (one prediction and one reference string per example) and
computes (`compute`: the scorers, the composites through the scorecard, the judged metrics)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import import_module

from rexrank.errors import InputError
from rexrank.reports import check_pairs
from rexrank.scorecard import table_report
from rexrank.scorers import REGISTRY, SCORERS, Kind, aliases, canonical

# The papers every ReXrank metric module cites (BibTeX).
REXRANK_CITATION = """\
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N
          and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
"""
CXR_REPORT_METRIC_CITATION = """\
@article{yu2023evaluating,
  title={Evaluating progress in automatic chest X-ray radiology report generation},
  author={Yu, Feiyang and Endo, Mark and Krishnan, Rayan and Pan, Ian and Tsai, Andy and Reis, Eduardo Pontes
          and Fonseca, Eduardo Kaiser Ururahy Nunes and Lee, Henrique Min Ho and Abe, Zahra Shakeri Hossein
          and Langlotz, Curtis P and others},
  journal={Patterns},
  volume={4},
  number={9},
  year={2023}
}
"""


def report_metric_info(description: str, citation: str, inputs_description: str, codebase_urls: list[str],
                       reference_urls: list[str], features=None):
    """`features`: by default one prediction and one reference string; a module whose references may also be lists
    (RadRScore's reasoning steps) passes evaluate's list of alternatives."""
    import datasets
    import evaluate

    return evaluate.MetricInfo(
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        features=features or datasets.Features({"predictions": datasets.Value("string"),
                                                "references": datasets.Value("string")}),
        codebase_urls=codebase_urls,
        reference_urls=reference_urls,
    )


def compute(name: str, predictions: Sequence, references: Sequence, **options) -> dict:
    """What the `evaluate` module of `name` returns (every `metrics/<name>/` module calls this), for every metric of
    the registry (`name` may be an alias), as its spec says it is made.

    A per-text score: `{name: mean, name_per_sample: [...], "signature": ..., **extras}`, with its old names' keys
    beside it (`sembscore`, `radgraph_combined`); `options` go to the scorer (its spec's options: idf, layer,
    tokenize; and device, batch_size, weights). A metric made from a table (a composite, a label F1, corpus BLEU-4):
    its value with a CI (`scorecard.table_report`; `options`: resamples, seed, device, batch_size). A judged metric,
    RadRScore (`reports=` the original reports) and ReXVQA's accuracy (`options=` each question's options): the
    module's own output, a judge's from `options` or the environment.
    """
    name = canonical(name)
    if name not in REGISTRY:
        raise InputError(f"unknown metric {name!r}: known metrics are {', '.join(REGISTRY)}")
    made = REGISTRY[name]
    if made.kind == Kind.SCORER and not made.sufficient:
        return _scored(name, predictions, references, **options)
    if made.kind in (Kind.JUDGED, Kind.REASONING, Kind.VQA):
        return import_module(f"rexrank.scorers.{name}").compute(predictions, references, **options)
    return table_report(name, predictions, references, **options)


def _scored(name: str, predictions: Sequence[str], references: Sequence[str], **options) -> dict:
    check_pairs(predictions, references)
    scorer = SCORERS[name](**{"progress": False} | options)
    candidates, refs = scorer.paired_features(list(predictions), list(references))
    per_sample = scorer.score(candidates, refs)
    mean = float(per_sample.mean()) if len(per_sample) else float("nan")
    out = {"signature": str(scorer.signature()), **scorer.extras(candidates, refs)}
    for key in (name, *aliases(name)):  # a scorer's output keeps its old keys (sembscore, radgraph_combined)
        out |= {key: mean, f"{key}_per_sample": per_sample.tolist()}
    return out


# The example a spec-made module's docstring and Space show: synthetic reports, two pairs (a corpus statistic of one
# short pair says little).
EXAMPLE = (["No pleural effusion. Heart size is normal.", "Mild cardiomegaly."],
           ["No pleural effusion or pneumothorax. Heart size is normal.", "Mild cardiomegaly without edema."])

_MODULE = '''"""{title} as rexrank computes it: written from the metric's spec by rexrank.hf_metric.space_files."""

import evaluate

from rexrank.hf_metric import REXRANK_CITATION, compute, report_metric_info

_CITATION = {citation!r} + REXRANK_CITATION

_DESCRIPTION = {description!r}

_KWARGS_DESCRIPTION = {kwargs!r}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class {cls}(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION, codebase_urls={codebase!r},
                                  reference_urls=["https://rexrank.ai"])

    def _compute(self, predictions, references, **options):
        return compute({name!r}, predictions, references, **options)
'''

_APP = '''"""The metric's Space: paste reports, get per-pair scores, the value and the signature."""

from pathlib import Path

from rexrank.widget import metric_widget

demo = metric_widget({name!r}, {title!r}, Path(__file__).with_name("README.md"), {example!r})

if __name__ == "__main__":
    demo.launch()
'''


def space_files(name: str) -> dict[str, str]:
    """The files of a metric's Space that its spec writes (`<name>.py`, `app.py`, `requirements.txt`), for a
    metrics/<name>/ folder that holds only its card: the module's texts are the spec's (what it measures, what an
    empty prediction scores, its options and their defaults, what it returns) and its docstring example's value is
    computed here, so it is true as written."""
    from rexrank.scorers import spec

    made = spec(name)
    options = "".join(f"    {key} (default {value!r}): a setting that changes the number, signed.\n"
                      for key, value in made.options.items())
    if made.sufficient:
        returns = (f"    {name} (float): {made.title}, the statistic of the summed per-study counts.\n"
                   f"    {name}_ci (list of float): its 95% bootstrap interval over studies (`resamples`, `seed`).\n"
                   "    per_sample (dict): each study's sufficient statistics by column, to merge or resample.\n")
    else:
        returns = (f"    {name} (float): the mean over the pairs.\n"
                   f"    {name}_per_sample (list of float): each pair's score, in {list(made.bounds)}.\n")
    value = round(compute(name, *EXAMPLE)[name], 4)
    kwargs = (f"\nArgs:\n    predictions (list of str): generated reports.\n    references (list of str): one "
              f"ground-truth report per prediction.\n{options}Returns:\n{returns}    signature (str): how the number "
              f"was made.\nExamples:\n    >>> {name} = evaluate.load(\"rexrank/{name}\")\n    >>> results = "
              f"{name}.compute(predictions={EXAMPLE[0]!r},\n    ...                     references={EXAMPLE[1]!r})"
              f"\n    >>> round(results[\"{name}\"], 4)\n    {value}\n")
    description = (f"{made.summary} An empty prediction: {made.empty_prediction}. rexrank's docs/metrics.md "
                   f"{made.section} defines it.\n")
    cls = "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", name))
    return {f"{name}.py": _MODULE.format(title=made.title, citation=made.citation, description=description,
                                         kwargs=kwargs, cls=cls, name=name, codebase=list(made.codebase)),
            "app.py": _APP.format(name=name, title=f"{made.title} (rexrank)",
                                  example=("\n".join(EXAMPLE[0]), "\n".join(EXAMPLE[1]))),
            "requirements.txt": "rexrank>=0.1.0\nevaluate>=0.4.6\ndatasets>=3.0\n"}
