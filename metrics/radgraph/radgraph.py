"""RadGraph-F1 as the ReXrank leaderboard computes it: entity and relation F1 of RadGraph v1 graphs, per report."""

import evaluate

from rexrank.hf_metric import CXR_REPORT_METRIC_CITATION, compute, report_metric_info

_CITATION = """\
@inproceedings{jain2021radgraph,
  title={RadGraph: Extracting Clinical Entities and Relations from Radiology Reports},
  author={Jain, Saahil and Agrawal, Ashwin and Saporta, Adriel and Truong, Steven QH and Duong, Du Nguyen and
          Bui, Tan and Chambon, Pierre and Zhang, Yuhao and Lungren, Matthew P and Ng, Andrew Y and others},
  booktitle={NeurIPS Datasets and Benchmarks},
  year={2021}
}
""" + CXR_REPORT_METRIC_CITATION

_DESCRIPTION = """\
RadGraph-F1 exactly as ReXrank (rajpurkarlab/CXR-Report-Metric) computes it: each report goes through the RadGraph
v1 model (DyGIE++); the entity sets {(span text, label)} and relation sets {((source text, label), (target text,
label), relation)} of candidate and reference are matched exactly (case-sensitive); radgraph_combined is the mean
of entity F1 and relation F1, 0 for a side with an empty set. The radgraph package's F1RadGraph reward levels
(simple, partial, complete), which other papers report, are returned apart and are not the ReXrank number.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (str, optional): torch device. Default: cuda if available, else cpu.
    batch_size (int, optional): reports per forward pass. Default 32.
Returns:
    radgraph (float): mean of (entity F1 + relation F1) / 2, in [0, 1] (also as radgraph_combined, its old key).
    radgraph_per_sample (list of float) (also as radgraph_combined_per_sample).
    f1radgraph_rewards (dict): mean F1RadGraph reward at levels simple, partial and complete.
    signature (str): e.g. `radgraph:1|radgraph:StanfordAIMI/RRG_scorers@<commit>|sets:cxr-report-metric|...`.
Examples:
    >>> radgraph = evaluate.load("rexrank/radgraph")
    >>> results = radgraph.compute(predictions=["Small left effusion."], references=["Small left effusion."])
    >>> results["radgraph"] <= 1.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadGraph(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/CXR-Report-Metric", "https://github.com/Stanford-AIMI/radgraph"],
                                  reference_urls=["https://rexrank.ai", "https://arxiv.org/abs/2106.14463"])

    def _compute(self, predictions, references, device=None, batch_size=32):
        return compute("radgraph", predictions, references, device=device, batch_size=batch_size)
