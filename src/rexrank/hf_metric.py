"""What every `evaluate` module in metrics/ declares (one prediction and one reference string per example) and
computes (`compute`: the scorers, the composites through the scorecard, the judged metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module

from rexrank.errors import InputError
from rexrank.reports import check_pairs
from rexrank.scorecard import table_report
from rexrank.scorers import REGISTRY, aliases, canonical

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
    if made.per_text and not made.sufficient:
        return _scored(name, predictions, references, **options)
    if made.own_module:
        return import_module(f"rexrank.scorers.{name}").compute(predictions, references, **options)
    return table_report(name, predictions, references, **options)


def _scored(name: str, predictions: Sequence[str], references: Sequence[str], **options) -> dict:
    check_pairs(predictions, references)
    scorer = REGISTRY[name].implementation(**{"progress": False} | options)
    candidates, refs = scorer.paired_features(list(predictions), list(references))
    per_sample = scorer.score(candidates, refs)
    mean = float(per_sample.mean()) if len(per_sample) else float("nan")
    out = {"signature": str(scorer.signature()), **scorer.extras(candidates, refs)}
    for key in (name, *aliases(name)):  # a scorer's output keeps its old keys (sembscore, radgraph_combined)
        out |= {key: mean, f"{key}_per_sample": per_sample.tolist()}
    return out


# The Space names metrics were first published under (`rexrank/sembscore`, `rexrank/radcliq`): their folders keep them.
SPACE_NAMES = {"semb_score": "sembscore", "radcliq_v1": "radcliq"}

# The example every module's docstring and Space show: synthetic reports, two pairs (a corpus statistic of one short
# pair says little); RadRScore's and ReXVQA accuracy's are an item of their own inputs.
EXAMPLE = (["No pleural effusion. Heart size is normal.", "Mild cardiomegaly."],
           ["No pleural effusion or pneumothorax. Heart size is normal.", "Mild cardiomegaly without edema."])
EXAMPLES = {
    "radrscore": (["<think>The costophrenic angles are sharp: no effusion.</think><answer>B</answer>"],
                  [["Examine the costophrenic angles for blunting.", "The angles are sharp: no effusion."]],
                  {"reports": ["No pleural effusion."]}),
    "rexvqa_accuracy": (["The answer is B.", "Small left pleural effusion", "A or B"], ["B", "A", "B"],
                        {"options": [["A. No pleural effusion", "B. Small left pleural effusion", "C. Pneumothorax",
                                      "D. Cardiomegaly"]] * 3}),
}


def example_of(name: str) -> tuple[list, list, dict]:
    """(predictions, references, other inputs) of a metric's example."""
    return EXAMPLES.get(canonical(name), (*EXAMPLE, {}))


def metric_info(name: str, description: str, citation: str, inputs_description: str):
    """The `evaluate.MetricInfo` of a metric's module: one prediction and one reference string per example (RadRScore:
    or a list of reasoning steps), its spec's codebase."""
    import datasets

    made = REGISTRY[canonical(name)]
    features = None
    if made.reasoning:
        text = datasets.Value("string")
        features = [datasets.Features({"predictions": text, "references": text}),
                    datasets.Features({"predictions": text, "references": datasets.Sequence(text)})]
    return report_metric_info(description, citation, inputs_description, list(made.codebase), ["https://rexrank.ai"],
                              features)
