"""RadRScore for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@article{fan2025chestx,
  title={ChestX-Reasoner: Advancing Radiology Foundation Models with Reasoning through Step-by-Step Verification},
  author={Fan, Ziqing and Liang, Cheng and Wu, Chaoyi and Zhang, Ya and Wang, Yanfeng and Xie, Weidi},
  journal={arXiv preprint arXiv:2504.20930},
  year={2025}
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
An LLM judge's completeness, factuality and effectiveness of a model's reasoning steps against the reference's,
averaged: RadRBench-CXR's reasoning score. An empty prediction: judged as written: an empty reasoning has no step to
credit (0). rexrank's docs/metrics.md §9 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the model's whole outputs, `<think>...</think><answer>...</answer>`.
    references (list of str, or list of list of str): the ground-truth reasoning steps.
    quoted (optional): the candidate's text quoted to the judge as data (False: the reference's messages)
        (signed). Default True.
    reports (optional): the original report of each item (RadRBench-CXR's `original_report`).
    dataset (optional): where the texts come from, for the judge's data-use guard: a list of texts is never
        known to be public, so it goes only to a loopback endpoint or to one in allow_endpoints.
    judge_url (optional): an OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.
    judge_model (optional): the served model's name. Default: REXRANK_JUDGE_MODEL. The key is read from
        OPENAI_API_KEY only.
    concurrency (optional): requests in flight. Default 8.
    max_tokens (optional): answer tokens asked of the judge (signed).
    temperature (optional): the judge's sampling temperature (signed). Default 0.
    seed (optional): the bootstrap's seed. Default 0.
    allow_endpoints (optional): non-loopback endpoints these texts may be sent to (for MIMIC-CXR, CheXpert Plus
        and ReXGradient, only ones your data use agreement covers).
Returns:
    radrscore (float): the mean over the pairs.
    radrscore_per_sample (list of float): each pair's score, in [0, 1].
    judged (int), judged_mean (float or None), and the count of each problem: the pairs whose answer was read
        and their mean; a pair not read counts as the worst.
    signature (str): how the number was made.
Examples:
    Needs a judge (REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL, or judge_url= and judge_model=): its value depends on
    them, so the example shows only its range.

    >>> radrscore = evaluate.load("rexrank/radrscore")
    >>> results = radrscore.compute(
    ...     predictions=['<think>The costophrenic angles are sharp: no effusion.</think><answer>B</answer>'],
    ...     references=[['Examine the costophrenic angles for blunting.', 'The angles are sharp: no effusion.']],
    ...     reports=['No pleural effusion.'],
    ... )
    >>> 0 <= results["radrscore"] <= 1
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Radrscore(evaluate.Metric):
    def _info(self):
        return metric_info('radrscore', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('radrscore', predictions, references, **options)
