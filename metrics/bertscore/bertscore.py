"""BertScore for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{zhang2020bertscore,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q and Artzi, Yoav},
  booktitle={ICLR},
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
BERTScore F1 with distilroberta-base (layer 5, no idf), rescaled with bert-score's baseline: token embeddings
matched by cosine. An empty prediction: raw F 0, rescaled (0 - 0.8473319) / (1 - 0.8473319) = -5.5502. rexrank's
docs/metrics.md §2 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    layer (optional): the encoder's hidden layer whose states are matched (signed). Default 5.
    idf (optional): weight tokens by idf over the references (not ReXrank's setting) (signed). Default False.
    prefix_space (optional): RoBERTa's leading space, as CXR-Report-Metric's pinned stack adds it (signed).
        Default True.
    specials (optional): "weight0" (<s> and </s> are match targets of weight 0, bert-score's) or "drop"
        (signed). Default 'weight0'.
    max_tokens (optional): truncation, 3 to 512 tokens (signed). Default 512.
    baseline (optional): b of the rescale (F - b) / (1 - b); None gives the raw F (signed). Default 0.8473319.
    device (optional): torch device. Default: cuda if available, else cpu.
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
Returns:
    bertscore (float): the mean over the pairs.
    bertscore_per_sample (list of float): each pair's score, unbounded.
    signature (str): how the number was made.
Examples:
    Needs the weights of bertscore (rexrank models download bertscore): its value depends on them, so the example
    shows only its range.

    >>> bertscore = evaluate.load("rexrank/bertscore")
    >>> results = bertscore.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> isinstance(results["bertscore"], float)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Bertscore(evaluate.Metric):
    def _info(self):
        return metric_info('bertscore', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('bertscore', predictions, references, **options)
