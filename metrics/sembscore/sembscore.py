"""SembScore for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{smit2020chexbert,
  title={Combining Automatic Labelers and Expert Annotations for Accurate Radiology Report Labeling Using BERT},
  author={Smit, Akshay and Jain, Saahil and Rajpurkar, Pranav and Pareek, Anuj and Ng, Andrew Y and Lungren, Matthew},
  booktitle={EMNLP},
  year={2020}
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
Cosine similarity of the CheXbert embeddings of the prediction and the reference. An empty prediction: cosine with
the embedding of [CLS][SEP] (a fixed vector), not 0. rexrank's docs/metrics.md §3 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (optional): torch device. Default: cuda if available, else cpu.
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
Returns:
    semb_score (float): the mean over the pairs.
    semb_score_per_sample (list of float): each pair's score, in [-1, 1].
    signature (str): how the number was made.
Examples:
    Needs the weights of chexbert, bert_base_uncased (rexrank models download chexbert bert_base_uncased): its value
    depends on them, so the example shows only its range.

    >>> sembscore = evaluate.load("rexrank/sembscore")
    >>> results = sembscore.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> -1 <= results["semb_score"] <= 1
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Sembscore(evaluate.Metric):
    def _info(self):
        return metric_info('semb_score', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('semb_score', predictions, references, **options)
