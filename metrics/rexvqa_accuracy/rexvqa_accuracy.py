"""ReXVQA accuracy for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@article{pal2025rexvqa,
  title={ReXVQA: A Large-scale Visual Question Answering Benchmark for Generalist Chest X-ray Understanding},
  author={Pal, Ankit and Lee, Jung-Oh and Zhang, Xiaoman and Sankarasubbu, Malaikannan and Roh, Seunghyeon and
          Kim, Won Jung and Lee, Meesun and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2506.04353},
  year={2025}
}
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N
          and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
"""

_DESCRIPTION = """\
The share of multiple-choice questions whose option letter, read from the model's free text by one written rule, is
the correct one; an answer that cannot be read is wrong and counted as a failed extraction. An empty prediction: no
letter can be read from it: a failed extraction, wrong (0). rexrank's docs/metrics.md §12 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the model's answers, as it wrote them.
    references (list of str): each question's correct letter.
    options (optional): each question's options, ["A. ...", "B. ...", ...] (ReXVQA's `options`).
Returns:
    rexvqa_accuracy (float): the mean over the pairs.
    rexvqa_accuracy_per_sample (list of float): each pair's score, in [0, 1].
    signature (str): how the number was made.
Examples:
    >>> rexvqa_accuracy = evaluate.load("rexrank/rexvqa_accuracy")
    >>> results = rexvqa_accuracy.compute(
    ...     predictions=['The answer is B.', 'Small left pleural effusion', 'A or B'],
    ...     references=['B', 'A', 'B'],
    ...     options=[['A. No pleural effusion',
    ...       'B. Small left pleural effusion',
    ...       'C. Pneumothorax',
    ...       'D. Cardiomegaly'],
    ...      ['A. No pleural effusion',
    ...       'B. Small left pleural effusion',
    ...       'C. Pneumothorax',
    ...       'D. Cardiomegaly'],
    ...      ['A. No pleural effusion',
    ...       'B. Small left pleural effusion',
    ...       'C. Pneumothorax',
    ...       'D. Cardiomegaly']],
    ... )
    >>> round(results["rexvqa_accuracy"], 4)
    0.3333
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RexvqaAccuracy(evaluate.Metric):
    def _info(self):
        return metric_info('rexvqa_accuracy', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('rexvqa_accuracy', predictions, references, **options)
