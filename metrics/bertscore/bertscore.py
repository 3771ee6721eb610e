"""BERTScore as the ReXrank leaderboard computes it: distilroberta-base layer 5, rescaled, per report."""

import evaluate

from rexrank.hf_metric import CXR_REPORT_METRIC_CITATION, compute, report_metric_info
from rexrank.scorers.bertscore import BASELINE, MAX_TOKENS

_CITATION = """\
@inproceedings{zhang2020bertscore,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q and Artzi, Yoav},
  booktitle={International Conference on Learning Representations},
  year={2020}
}
""" + CXR_REPORT_METRIC_CITATION

_DESCRIPTION = """\
BERTScore exactly as ReXrank (rajpurkarlab/CXR-Report-Metric with bert-score 0.3.11) computes it: runs of spaces
collapsed, RoBERTa tokenisation with a leading space, distilroberta-base hidden states of layer 5, greedy cosine
matching without idf, F1 rescaled with the layer-5 baseline (F = 0.8473319); the dataset value is the mean.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    idf (bool, optional): weight tokens by idf over the references (not the ReXrank setting). Default False.
    prefix_space (bool, optional): RoBERTa's leading space, as CXR-Report-Metric's pinned stack adds it. False: as
        bert-score 0.3.11 on transformers >= 4.17 (or any bert-score on transformers 5) encodes. Default True.
    specials (str, optional): "weight0" (bert-score: <s> and </s> are match targets that weigh 0) or "drop" (not
        matched). Default "weight0".
    max_tokens (int, optional): truncation, 3..512. Default 512.
    baseline (float or None, optional): b of the rescale (F - b) / (1 - b); None gives raw F. Default 0.8473319.
    device (str, optional): torch device. Default: cuda if available, else cpu.
    batch_size (int, optional): texts per forward pass. Default 32.
Returns:
    bertscore (float): mean rescaled F1; about -5.55 (empty report) to 1.
    bertscore_per_sample (list of float): rescaled F1 of each pair.
    signature (str): e.g. `bertscore:1|model:distilbert/distilroberta-base@<commit>|layer:5|idf:no|space:lead|...`.
Examples:
    >>> bertscore = evaluate.load("rexrank/bertscore")
    >>> results = bertscore.compute(predictions=["Heart size is normal."], references=["Heart size is normal."])
    >>> round(results["bertscore"], 4)
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BertScore(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/CXR-Report-Metric", "https://github.com/Tiiiger/bert_score"],
                                  reference_urls=["https://rexrank.ai", "https://arxiv.org/abs/1904.09675"])

    def _compute(self, predictions, references, idf=False, prefix_space=True, specials="weight0",
                 max_tokens=MAX_TOKENS, baseline=BASELINE["F"], device=None, batch_size=32):
        return compute("bertscore", predictions, references, idf=idf, prefix_space=prefix_space, specials=specials,
                       max_tokens=max_tokens, baseline=baseline, device=device, batch_size=batch_size)
