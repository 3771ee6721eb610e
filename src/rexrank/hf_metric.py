"""What every `evaluate` module in metrics/ declares (one prediction and one reference string per example) and
computes (`compute`: the scorers, the composites through the scorecard, the judged metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module

from rexrank.errors import InputError
from rexrank.reports import check_pairs
from rexrank.scorecard import composite_report
from rexrank.scorers import COMPOSITES, JUDGED, METRICS, SCORERS, aliases, canonical

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
    """What the `evaluate` module of `name` returns (every `metrics/<name>/` module calls this).

    A per-text scorer: `{name: mean, name_per_sample: [...], "signature": ..., **extras}`, with its old names' keys
    beside it (`sembscore`, `radgraph_combined`); `options` go to the scorer (idf, device, batch_size, weights). A
    composite: the per-study composite, its mean and 1/mean with a CI (`options`: resamples, seed, device,
    batch_size). A judged metric, and RadRScore (`reports=` the original reports): the module's own output, its
    judge from `options` or the environment. `name` may be an alias.
    """
    name = canonical(name)
    if name in SCORERS:
        return _scored(name, predictions, references, **options)
    if name in COMPOSITES:
        return composite_report(name, predictions, references, **options)
    if name in JUDGED or name == "radrscore":
        return import_module(f"rexrank.scorers.{name}").compute(predictions, references, **options)
    raise InputError(f"unknown metric {name!r}: known metrics are {', '.join((*METRICS, 'radrscore'))}")


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
