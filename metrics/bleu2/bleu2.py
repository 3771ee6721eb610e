"""BLEU for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N
          and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
@inproceedings{papineni2002bleu,
  title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={ACL},
  year={2002}
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
BLEU-2: unigram and bigram precision against the reference with the brevity penalty, sentence by sentence (NLTK
method1 smoothing). ReXrank's BLEU-2 (CXR-Report-Metric, fast_bleu): tokens lower-cased with each "." split off, a
sentence BLEU-2 per report (method1 smoothing), then the mean. RadEval's `bleu_2` is another number: corpus BLEU-2
(coco-caption's scorer) on whitespace tokens, case kept. An empty prediction: 0: no unigram can match. rexrank's
docs/metrics.md §1 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
Returns:
    bleu2 (float): the mean over the pairs.
    bleu2_per_sample (list of float): each pair's score, in [0, 1].
    signature (str): how the number was made.
Examples:
    >>> bleu2 = evaluate.load("rexrank/bleu2")
    >>> results = bleu2.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> round(results["bleu2"], 4)
    0.556
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Bleu2(evaluate.Metric):
    def _info(self):
        return metric_info('bleu2', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('bleu2', predictions, references, **options)
