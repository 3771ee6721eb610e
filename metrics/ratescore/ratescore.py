"""RaTEScore for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{zhao2024ratescore,
  title={RaTEScore: A Metric for Radiology Report Generation},
  author={Zhao, Weike and Wu, Chaoyi and Zhang, Xiaoman and Zhang, Ya and Wang, Yanfeng and Xie, Weidi},
  booktitle={Proceedings of the 2024 Conference on Empirical Methods in Natural Language Processing},
  year={2024}
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
Medical entities tagged by RaTE-NER and matched by BioLORD embeddings, weighted by entity type: the F-measure of the
two directions. An empty prediction: 0.5 (a report without entities). rexrank's docs/metrics.md §6 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    weights (optional): "0.6.0", "pre-2025-05" (ratescore <= 0.5.0's penalty) or "short" (signed). Default
        '0.6.0'.
    device (optional): torch device. Default: cuda if available, else cpu.
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
Returns:
    ratescore (float): the mean over the pairs.
    ratescore_per_sample (list of float): each pair's score, unbounded.
    signature (str): how the number was made.
Examples:
    Needs the weights of rate_ner, biolord (rexrank models download rate_ner biolord): its value depends on them, so
    the example shows only its range.

    >>> ratescore = evaluate.load("rexrank/ratescore")
    >>> results = ratescore.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> isinstance(results["ratescore"], float)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Ratescore(evaluate.Metric):
    def _info(self):
        return metric_info('ratescore', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('ratescore', predictions, references, **options)
