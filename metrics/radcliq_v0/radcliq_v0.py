"""RadCliQ-v0 for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@article{yu2023evaluating,
  title={Evaluating progress in automatic chest X-ray radiology report generation},
  author={Yu, Feiyang and Endo, Mark and Krishnan, Rayan and others},
  journal={Patterns},
  volume={4},
  number={9},
  year={2023}
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
BLEU-2, BERTScore, SembScore and RadGraph combined by a linear model fitted to radiologists' error counts; the board
shows 1 / the mean (higher is better). An empty prediction: its components' empty-prediction scores, combined.
rexrank's docs/metrics.md §5 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (optional): torch device. Default: cuda if available, else cpu.
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
    resamples (optional): bootstrap resamples of the 95% CI. Default 1000.
    seed (optional): the bootstrap's seed. Default 0.
Returns:
    radcliq_v0 (float): the mean over the pairs (lower is better).
    inv_radcliq_v0 (float): 1 / radcliq_v0, the board's value; inv_radcliq_v0_ci (list of float): its 95% CI.
    radcliq_v0_per_sample (list of float): each pair's score.
    radgraph, bertscore, semb_score, bleu2 (float): the components' means.
    non_positive_mean (bool): the mean is <= 0, so its inverse means nothing.
    signature (str): how the number was made.
Examples:
    Needs the weights of radgraph, radgraph_encoder, bertscore, chexbert, bert_base_uncased (rexrank models download
    radgraph radgraph_encoder bertscore chexbert bert_base_uncased): its value depends on them, so the example shows
    only its range.

    >>> radcliq_v0 = evaluate.load("rexrank/radcliq_v0")
    >>> results = radcliq_v0.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> isinstance(results["radcliq_v0"], float)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadcliqV0(evaluate.Metric):
    def _info(self):
        return metric_info('radcliq_v0', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('radcliq_v0', predictions, references, **options)
