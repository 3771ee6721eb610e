"""BLEU-4 for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{papineni2002bleu,
  title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={ACL}, year={2002}
}
@inproceedings{chen2020generating,
  title={Generating Radiology Reports via Memory-driven Transformer},
  author={Chen, Zhihong and Song, Yan and Chang, Tsung-Hui and Wan, Xiang},
  booktitle={EMNLP}, year={2020}
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
BLEU-4 over the corpus, as coco-caption computes it: 1- to 4-gram matches and lengths summed over studies, then
their geometric mean precision times the brevity penalty. coco-caption's Bleu(4) (pycocoevalcap 1.2) on the texts
R2Gen's trainer hands it: each report cleaned by R2Gen's cleaner for its dataset (IU-Xray's for IU-Xray, MIMIC-CXR's
otherwise; signed tok:) and rejoined by its decode. RadEval's `bleu` is coco-caption's BLEU-4 on the raw text
(whitespace tokens, case and punctuation kept): another number. An empty prediction: no n-gram, its reference's
length added: the corpus' brevity penalty falls (under r2gen it is ".", one token). rexrank's docs/metrics.md §11
defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    tokenize (optional): "r2gen" (R2Gen's cleaner), "r2gen-mimic", "r2gen-iu" or "none" (signed). Default
        'r2gen'.
    resamples (optional): bootstrap resamples of the 95% CI. Default 1000.
    seed (optional): the bootstrap's seed. Default 0.
Returns:
    bleu4 (float): BLEU-4, the statistic of the per-study counts summed.
    bleu4_ci (list of float): its 95% bootstrap interval over studies.
    per_sample (dict): each study's sufficient statistics by column, to merge or resample.
    signature (str): how the number was made.
Examples:
    >>> bleu4 = evaluate.load("rexrank/bleu4")
    >>> results = bleu4.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> round(results["bleu4"], 4)
    0.5067
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Bleu4(evaluate.Metric):
    def _info(self):
        return metric_info('bleu4', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('bleu4', predictions, references, **options)
