"""FineRadScore for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{huang2024fineradscore,
  title={{FineRadScore}: A Radiology Report Line-by-Line Evaluation Technique Generating Corrections with
         Severity Scores},
  author={Huang, Alyssa and Banerjee, Oishi and Wu, Kay and Reis, Eduardo Pontes and Rajpurkar, Pranav},
  booktitle={Proceedings of the 9th Machine Learning for Healthcare Conference},
  series={Proceedings of Machine Learning Research},
  volume={252},
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
An LLM judge corrects the prediction line by line and grades each correction's severity (0-4); per study the
maximum; the board shows 1 / the mean. An empty prediction: judged as written: no line to correct, so only inserted
lines (usually severe). rexrank's docs/metrics.md §8 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    quoted (optional): the candidate's text quoted to the judge as data (False: the reference's messages)
        (signed). Default True.
    dataset (optional): where the texts come from, for the judge's data-use guard: a list of texts is never
        known to be public, so it goes only to a loopback endpoint or to one in allow_endpoints.
    shots (optional): the example turns: "synthetic" (default), "zero-shot", or a path to a checkout or JSON
        list of them.
    how (optional): a study's score from its severities: "max" (default, ReXrank's) or "sum" (the paper's).
    judge_url (optional): an OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.
    judge_model (optional): the served model's name. Default: REXRANK_JUDGE_MODEL. The key is read from
        OPENAI_API_KEY only.
    concurrency (optional): requests in flight. Default 8.
    max_tokens (optional): answer tokens asked of the judge (signed).
    allow_endpoints (optional): non-loopback endpoints these texts may be sent to (for MIMIC-CXR, CheXpert Plus
        and ReXGradient, only ones your data use agreement covers).
Returns:
    fineradscore (float): the mean over the pairs (the board shows 1 / it).
    fineradscore_per_sample (list of float): each pair's score, unbounded.
    judged (int), judged_mean (float or None), and the count of each problem: the pairs whose answer was read
        and their mean; a pair not read counts as the worst.
    signature (str): how the number was made.
Examples:
    Needs a judge (REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL, or judge_url= and judge_model=): its value depends on
    them, so the example shows only its range.

    >>> fineradscore = evaluate.load("rexrank/fineradscore")
    >>> results = fineradscore.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> isinstance(results["fineradscore"], float)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Fineradscore(evaluate.Metric):
    def _info(self):
        return metric_info('fineradscore', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('fineradscore', predictions, references, **options)
