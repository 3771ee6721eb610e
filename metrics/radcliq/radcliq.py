"""RadCliQ-v1 as the ReXrank leaderboard computes it: per report from BLEU-2, BERTScore, SembScore and RadGraph-F1."""

import evaluate

from rexrank.hf_metric import CXR_REPORT_METRIC_CITATION, REXRANK_CITATION, compute, report_metric_info

_CITATION = REXRANK_CITATION + CXR_REPORT_METRIC_CITATION

_DESCRIPTION = """\
RadCliQ-v1 exactly as ReXrank (rajpurkarlab/CXR-Report-Metric radcliq-v1.pkl) computes it: per report, a standard
scaler and a linear model over [RadGraph-F1, BERTScore, SembScore, BLEU-2] (lower is better); the leaderboard
reports 1 / mean over reports. Each component is computed once, exactly as its own module computes it. Its one
name is radcliq_v1 (the command line, result files, the board); radcliq, this module's name, is an alias of it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (str, optional): torch device. Default: cuda if available, else cpu.
    batch_size (int, optional): texts per forward pass. Default 32.
    resamples (int, optional): bootstrap resamples for the 95% CI of 1/RadCliQ-v1. Default 1000.
    seed (int, optional): bootstrap seed. Default 0.
Returns:
    radcliq_v1 (float): mean RadCliQ-v1 over the reports (lower is better; a perfect pair is about -1.44).
    inv_radcliq_v1 (float): 1 / radcliq_v1, the leaderboard value; inv_radcliq_v1_ci: its 95% CI.
    radcliq_v1_per_sample (list of float).
    radgraph, bertscore, semb_score, bleu2 (float): the component means.
    non_positive_mean (bool): the mean is <= 0, so its inverse means nothing.
    signature (str): the composite and every component's weights and settings.
Examples:
    >>> radcliq = evaluate.load("rexrank/radcliq")
    >>> results = radcliq.compute(predictions=["Small left effusion."], references=["Small left effusion."])
    >>> results["radcliq_v1"] < 0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadCliQ(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/CXR-Report-Metric"],
                                  reference_urls=["https://rexrank.ai", "https://doi.org/10.1016/j.patter.2023.100802"])

    def _compute(self, predictions, references, device=None, batch_size=32, resamples=1000, seed=0):
        return compute("radcliq_v1", predictions, references, resamples=resamples, seed=seed, device=device,
                       batch_size=batch_size)
