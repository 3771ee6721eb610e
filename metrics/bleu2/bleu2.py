"""BLEU-2 as the ReXrank leaderboard computes it: sentence-level, per report, then averaged."""

import evaluate

from rexrank.hf_metric import CXR_REPORT_METRIC_CITATION, REXRANK_CITATION, compute, report_metric_info

_CITATION = """\
@inproceedings{papineni2002bleu,
  title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={ACL},
  year={2002}
}
""" + REXRANK_CITATION + CXR_REPORT_METRIC_CITATION

_DESCRIPTION = """\
BLEU-2 exactly as ReXrank (rajpurkarlab/CXR-Report-Metric) computes it: each report is lower-cased, '.' is split
off, and the text is split on single spaces (commas and newlines stay inside tokens); each candidate is scored
against its one reference with sentence-level BLEU, weights (1/2, 1/2) and NLTK's method1 smoothing (epsilon 0.1);
the dataset value is the mean over reports. Not corpus BLEU: the `bleu` module gives different numbers.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
Returns:
    bleu2 (float): mean BLEU-2 over the pairs, in [0, 1].
    bleu2_per_sample (list of float): BLEU-2 of each pair (an empty prediction scores 0).
    signature (str): how the number was made, e.g. `bleu2:1|tok:lower+dot|smooth:method1:eps=0.1|rexrank:0.1.0`.
Examples:
    >>> bleu2 = evaluate.load("rexrank/bleu2")
    >>> results = bleu2.compute(predictions=["No pleural effusion."],
    ...                         references=["No pleural effusion or pneumothorax."])
    >>> round(results["bleu2"], 4)
    0.4952
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Bleu2(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/CXR-Report-Metric"],
                                  reference_urls=["https://rexrank.ai", "https://arxiv.org/abs/2411.15122"])

    def _compute(self, predictions, references):
        return compute("bleu2", predictions, references)
