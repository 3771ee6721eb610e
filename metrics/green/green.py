"""GREEN for `evaluate`, as rexrank computes it.
Written by metrics/cards.py from the metric's spec (rexrank.spaces): edit the spec, then run it."""

import evaluate

from rexrank.hf_metric import compute, metric_info

_CITATION = """\
@inproceedings{ostmeier-etal-2024-green,
  title={{GREEN}: Generative Radiology Report Evaluation and Error Notation},
  author={Ostmeier, Sophie and Xu, Justin and Chen, Zhihong and Varma, Maya and Blankemeier, Louis and
          Bluethgen, Christian and Md, Arne Edward Michalson and Moseley, Michael and Langlotz, Curtis and
          Chaudhari, Akshay S and Delbrouck, Jean-Benoit},
  booktitle={Findings of the Association for Computational Linguistics: EMNLP 2024},
  pages={374--390},
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
A fine-tuned LLM judge counts matched findings and clinically significant errors: matched / (matched + significant
errors). An empty prediction: judged as written (an empty candidate matches nothing: usually 0). rexrank's
docs/metrics.md §7 defines it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    quoted (optional): the candidate's text quoted to the judge as data (False: the reference's messages)
        (signed). Default True.
    dataset (optional): where the texts come from, for the judge's data-use guard: a list of texts is never
        known to be public, so it goes only to a loopback endpoint or to one in allow_endpoints.
    judge_url (optional): an OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.
    judge_model (optional): the served model's name. Default: REXRANK_JUDGE_MODEL. The key is read from
        OPENAI_API_KEY only.
    model_path (optional): a local copy of the judge model, run with transformers instead of a server.
    concurrency (optional): requests in flight. Default 8.
    max_tokens (optional): answer tokens asked of the judge (signed).
    allow_endpoints (optional): non-loopback endpoints these texts may be sent to (for MIMIC-CXR, CheXpert Plus
        and ReXGradient, only ones your data use agreement covers).
    device (optional): torch device. Default: cuda if available, else cpu.
    dtype (optional): the local model's precision. Default: float16 on cuda, float32 on the CPU (signed).
    batch_size (optional): texts per forward pass. Default: from the free GPU memory, or 32 on the CPU.
    max_length (optional): the local model's context (signed: changing it changes the metric).
    trust_remote_code (optional): run the tokenizer code the model's repository ships (signed). Default False.
Returns:
    green (float): the mean over the pairs.
    green_per_sample (list of float): each pair's score, in [0, 1].
    judged (int), judged_mean (float or None), and the count of each problem: the pairs whose answer was read
        and their mean; a pair not read counts as the worst.
    signature (str): how the number was made.
Examples:
    Needs a judge (REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL, or judge_url= and judge_model=): its value depends on
    them, so the example shows only its range.

    >>> green = evaluate.load("rexrank/green")
    >>> results = green.compute(
    ...     predictions=['No pleural effusion. Heart size is normal.', 'Mild cardiomegaly.'],
    ...     references=['No pleural effusion or pneumothorax. Heart size is normal.',
    ...      'Mild cardiomegaly without edema.'],
    ... )
    >>> 0 <= results["green"] <= 1
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Green(evaluate.Metric):
    def _info(self):
        return metric_info('green', _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION)

    def _compute(self, predictions, references, **options):
        return compute('green', predictions, references, **options)
