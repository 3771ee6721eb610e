"""SembScore as the ReXrank leaderboard computes it: cosine of CheXbert report embeddings, per report."""

import evaluate

from rexrank.hf_metric import CXR_REPORT_METRIC_CITATION, compute, report_metric_info

_CITATION = """\
@inproceedings{smit2020chexbert,
  title={Combining Automatic Labelers and Expert Annotations for Accurate Radiology Report Labeling Using BERT},
  author={Smit, Akshay and Jain, Saahil and Rajpurkar, Pranav and Pareek, Anuj and Ng, Andrew Y and Lungren, Matthew},
  booktitle={Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year={2020}
}
""" + CXR_REPORT_METRIC_CITATION

_DESCRIPTION = """\
SembScore exactly as ReXrank (rajpurkarlab/CXR-Report-Metric) computes it: each report is cleaned (strip, newlines
to spaces, whitespace collapsed), WordPiece-tokenised for bert-base-uncased (over 512 ids: the first 511 and
[SEP]), and embedded by CheXbert as the last-layer [CLS] state; the score is the cosine similarity of the
reference and candidate embeddings, and the dataset value is the mean. The same forward pass gives CheXbert's 14
labels, from which the clinical-efficacy label F1 (micro/macro over 14 conditions and the top 5) is reported. Its
one name is semb_score (the command line, result files, the board); sembscore, this module's name, is an alias.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (str, optional): torch device. Default: cuda if available, else cpu.
    batch_size (int, optional): texts per forward pass. Default 32.
Returns:
    semb_score (float): mean cosine similarity, -1 to 1 (in practice 0 to 1) (also as sembscore, its old key).
    semb_score_per_sample (list of float): the cosine of each pair (also as sembscore_per_sample).
    chexbert_label_f1 (dict): micro_f1_14, macro_f1_14, micro_f1_5, macro_f1_5 (positive or uncertain = 1).
    signature (str): e.g. `semb_score:1|chexbert:StanfordAIMI/RRG_scorers@<commit>|tokenizer:...`.
Examples:
    >>> sembscore = evaluate.load("rexrank/sembscore")
    >>> results = sembscore.compute(predictions=["Mild cardiomegaly."], references=["Mild cardiomegaly."])
    >>> round(results["semb_score"], 4)
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SembScore(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/CXR-Report-Metric", "https://github.com/stanfordmlgroup/CheXbert"],
                                  reference_urls=["https://rexrank.ai", "https://arxiv.org/abs/2004.09167"])

    def _compute(self, predictions, references, device=None, batch_size=32):
        return compute("semb_score", predictions, references, device=device, batch_size=batch_size)
