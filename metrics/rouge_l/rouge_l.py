"""ROUGE-L for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{lin2004rouge,
  title={ROUGE: A Package for Automatic Evaluation of Summaries},
  author={Lin, Chin-Yew},
  booktitle={Text Summarization Branches Out}, year={2004}
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
ROUGE-L as coco-caption computes it: the F-measure (beta 1.2) of the longest common token subsequence. coco-
caption's Rouge() (pycocoevalcap 1.2: LCS F-measure with beta 1.2, no stemming) on R2Gen's cleaned and decoded
tokens (signed tok:), the mean over studies. RadEval's `rougeL` is rouge-score's F1 (beta 1) with the Porter stemmer
on its own tokens (lower-cased, non-alphanumerics dropped), as is CXRMate-2's `rouge_l`: another number. An empty
prediction: 0, no token in common (under r2gen it is ".", which its reference's end matches). rexrank's
docs/metrics.md §11 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    tokenize (optional): "r2gen" (R2Gen's cleaner), "r2gen-mimic", "r2gen-iu" or "none" (signed). Default
        'r2gen'.
Returns:
    rouge_l (float): the mean over the pairs.
    rouge_l_per_sample (list of float): each pair's score, in [0, 1].
    signature (str): how the number was made.
Examples:
    >>> rouge_l = evaluate.load("rexrank/rouge_l")
    >>> results = rouge_l.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> round(results["rouge_l"], 4)
    0.8009
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RougeL(evaluate.Metric):
    def _info(self):
        return metric_info('rouge_l', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('rouge_l', predictions, references, **options)
