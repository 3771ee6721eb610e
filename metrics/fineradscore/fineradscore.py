"""FineRadScore as rajpurkarlab/FineRadScore asks its judge, scored per study as ReXrank does, through any
OpenAI-compatible endpoint."""

import evaluate

from rexrank.hf_metric import REXRANK_CITATION, compute, report_metric_info
from rexrank.scorers.fineradscore import MAX_TOKENS

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
""" + REXRANK_CITATION

_DESCRIPTION = """\
FineRadScore (rajpurkarlab/FineRadScore, 3f5e1dc): an LLM judge rewrites the generated report line by line into the
reference and grades each correction Emergent (4), Urgent (3), Actionable nonurgent (2) or Not actionable (1); a
line it leaves alone needs no correction (0). The candidate's sentences are numbered [0] ... [n] as the reference
numbers them, and the authors' instructions go in verbatim. A study's score is its highest severity (ReXrank's
column; the paper sums them, `how="sum"`); the leaderboard shows 1/FineRadScore = 1 / mean over studies. The
authors' example turns quote MIMIC-CXR reports and are not shipped: synthetic examples of ours by default, the
reference's own from a FineRadScore checkout or a JSON file (`shots=`), or the reference's zero-shot prompt. A reply
that cannot be read gets one repair turn; still unreadable, cut at max_tokens, or refused by the judge, the study
counts as the worst (severity 4; for the sum, 4 for every line and one inserted line) and is counted.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    judge_url (str, optional): OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL, else OpenAI.
    judge_model (str, optional): the served model's name. Default: REXRANK_JUDGE_MODEL. The API key is read from
        OPENAI_API_KEY only. Without a judge model the metric cannot run (there is no local model).
    shots (str, optional): "synthetic" (default), "zero-shot", or a path to a rajpurkarlab/FineRadScore checkout or a
        JSON list of {"role", "content"} messages holding the reference's example turns.
    how (str, optional): a study's score from its severities, "max" (default, ReXrank) or "sum" (the paper).
    dataset (str, optional): where the reports come from, for the messages. A list of texts is never known to be
        public: it goes only to a loopback endpoint or to one in allow_endpoints.
    allow_endpoints (list of str, optional): non-loopback endpoints you may send these texts to (for MIMIC-CXR,
        CheXpert Plus and ReXGradient, only ones your data use agreement covers).
    concurrency (int, optional): requests in flight. Default 8.
    max_tokens (int, optional): answer tokens asked of the judge. Default 2048.
Returns:
    fineradscore (float): mean per-study score over every study (0 to 4 with "max"), an unread study at the worst;
        NaN for no study.
    inv_fineradscore (float): 1 / fineradscore, the leaderboard's 1/FineRadScore (inf when every report is perfect).
    fineradscore_per_sample (list of int): each study's score, the worst where its reply was not read.
    judged (int), judged_mean (float or None): the studies whose reply was read, and their mean.
    unparseable, cut, refused, repaired (int): replies unreadable after the repair turn, replies cut at max_tokens,
        prompts the judge refused, replies read after the repair turn. A judge server that fails after its retries
        raises instead: no study is scored.
    max_severity_per_sample, sum_severity_per_sample (list of int or None): both aggregates, None where not read.
    corrections_per_sample (list of list of dict or None): line (None: an inserted line), severity, correction,
        comments, categories.
    replies (list of str or None), problems_per_sample (list of str or None): the judge's replies and why a study's
        was not read.
    signature (str): e.g. `fineradscore:3|backend:judge:gpt-4o:t=0:max_tokens=2048|prompt:fineradscore-3f5e1dc|
        shots:synthetic-v1|agg:max|repair:1|rexrank:<version>`.
Examples:
    The judge is the endpoint REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL name (or judge_url= and judge_model=), e.g.
    a vLLM server at http://localhost:8000/v1 serving Qwen/Qwen2.5-72B-Instruct.

    >>> fineradscore = evaluate.load("rexrank/fineradscore")
    >>> results = fineradscore.compute(predictions=["Small left effusion."], references=["No effusion."])
    >>> results["fineradscore_per_sample"][0] in (0, 1, 2, 3, 4)
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FineRadScore(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/rajpurkarlab/FineRadScore"],
                                  reference_urls=["https://arxiv.org/abs/2405.20613",
                                                  "https://proceedings.mlr.press/v252/huang24a.html",
                                                  "https://rexrank.ai"])

    def _compute(self, predictions, references, judge_url=None, judge_model=None, shots=None, how="max",
                 dataset=None, allow_endpoints=(), concurrency=8, max_tokens=MAX_TOKENS):
        return compute("fineradscore", predictions, references, dataset=dataset, shots=shots, how=how,
                       judge_url=judge_url, judge_model=judge_model, allow_endpoints=allow_endpoints,
                       concurrency=concurrency, max_tokens=max_tokens)
