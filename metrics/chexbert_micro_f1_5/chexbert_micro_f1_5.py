"""CheXbert micro-F1 (5) for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{smit2020chexbert,
  title={Combining Automatic Labelers and Expert Annotations for Accurate Radiology Report Labeling Using BERT},
  author={Smit, Akshay and Jain, Saahil and Rajpurkar, Pranav and Pareek, Anuj and Ng, Andrew Y and Lungren, Matthew},
  booktitle={EMNLP}, year={2020}
}
@inproceedings{irvin2019chexpert,
  title={CheXpert: A Large Chest Radiograph Dataset with Uncertainty Labels and Expert Comparison},
  author={Irvin, Jeremy and Rajpurkar, Pranav and Ko, Michael and others},
  booktitle={AAAI}, year={2019}
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
F1 of the prediction's CheXbert labels against the reference's, summed over conditions, over the top 5
(Cardiomegaly, Edema, Consolidation, Atelectasis, Pleural Effusion). An empty prediction: the CheXbert labels of
[CLS][SEP] (a fixed set): each condition it calls positive a false positive or a true positive, every other positive
reference condition missed. rexrank's docs/metrics.md §3 defines it.
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
    chexbert_micro_f1_5 (float): CheXbert micro-F1 (5), the statistic of the per-study counts summed.
    chexbert_micro_f1_5_ci (list of float): its 95% bootstrap interval over studies.
    per_sample (dict): each study's sufficient statistics by column, to merge or resample.
    signature (str): how the number was made.
Examples:
    Needs the weights of chexbert, bert_base_uncased (rexrank models download chexbert bert_base_uncased): its value
    depends on them, so the example shows only its range.

    >>> chexbert_micro_f1_5 = evaluate.load("rexrank/chexbert_micro_f1_5")
    >>> results = chexbert_micro_f1_5.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> 0 <= results["chexbert_micro_f1_5"] <= 1
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ChexbertMicroF15(evaluate.Metric):
    def _info(self):
        return metric_info('chexbert_micro_f1_5', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('chexbert_micro_f1_5', predictions, references, **options)
