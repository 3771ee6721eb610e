"""RadGraph for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{jain2021radgraph,
  title={RadGraph: Extracting Clinical Entities and Relations from Radiology Reports},
  author={Jain, Saahil and Agrawal, Ashwin and Saporta, Adriel and Truong, Steven QH and Duong, Du Nguyen and
          Bui, Tan and Chambon, Pierre and Zhang, Yuhao and Lungren, Matthew P and Ng, Andrew Y and others},
  booktitle={NeurIPS Datasets and Benchmarks},
  year={2021}
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
RadGraph F1 (partial reward): overlap of the clinical entities and relations RadGraph extracts from each report. An
empty prediction: the graph of the single word None (what the reference substitutes); usually 0. rexrank's
docs/metrics.md §4 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    device (optional): torch device. Default: cuda if available, else cpu.
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
Returns:
    radgraph (float): the mean over the pairs.
    radgraph_per_sample (list of float): each pair's score, in [0, 1].
    signature (str): how the number was made.
Examples:
    Needs the weights of radgraph, radgraph_encoder (rexrank models download radgraph radgraph_encoder): its value
    depends on them, so the example shows only its range.

    >>> radgraph = evaluate.load("rexrank/radgraph")
    >>> results = radgraph.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> 0 <= results["radgraph"] <= 1
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Radgraph(evaluate.Metric):
    def _info(self):
        return metric_info('radgraph', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('radgraph', predictions, references, **options)
