"""RaTEScore (ratescore 0.6.0): entity-level agreement of two radiology reports, weighted by entity type."""

import evaluate

from rexrank.hf_metric import REXRANK_CITATION, compute, report_metric_info

_CITATION = """\
@inproceedings{zhao2024ratescore,
  title={RaTEScore: A Metric for Radiology Report Generation},
  author={Zhao, Weike and Wu, Chaoyi and Zhang, Xiaoman and Zhang, Ya and Wang, Yanfeng and Xie, Weidi},
  booktitle={Proceedings of the 2024 Conference on Empirical Methods in Natural Language Processing},
  year={2024}
}
""" + REXRANK_CITATION

_DESCRIPTION = """\
RaTEScore exactly as the `ratescore` package 0.6.0 computes it: each report is split into sentences (medspacy's
PyRuSH rules), RaTE-NER-Deberta tags entities (abnormality, non-abnormality, disease, non-disease, anatomy),
BioLORD-2023-C embeds each entity ([CLS]); every entity's best cosine match in the other report is weighted by a
learned type-by-type matrix and penalised when one side is negated; the score is the harmonic mean of both
directions, and 0.5 when either report has no entity.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    weights (str, optional): "0.6.0" (default: long matrix, negation weight 0.8717), "pre-2025-05" (the same matrix
        with the 0.3612 penalty of ratescore <= 0.5.0) or "short" (the 0.6.0 short-report matrix).
    device (str, optional): torch device. Default: cuda if available, else cpu.
    batch_size (int, optional): sentences per forward pass. Default 32.
Returns:
    ratescore (float): mean over the pairs.
    ratescore_per_sample (list of float).
    signature (str): e.g. `ratescore:0.6.0|ner:Angelakeke/RaTE-NER-Deberta@<commit>|...|weights:0.6.0|...`.
Examples:
    >>> ratescore = evaluate.load("rexrank/ratescore")
    >>> results = ratescore.compute(predictions=["Small left effusion."], references=["Small left effusion."])
    >>> round(results["ratescore"], 6) in (0.5, 1.0)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RaTEScore(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/MAGIC-AI4Med/RaTEScore"],
                                  reference_urls=["https://rexrank.ai", "https://arxiv.org/abs/2406.16845"])

    def _compute(self, predictions, references, weights="0.6.0", device=None, batch_size=32):
        return compute("ratescore", predictions, references, weights=weights, device=device, batch_size=batch_size)
