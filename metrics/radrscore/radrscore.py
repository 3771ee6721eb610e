"""RadRScore (ChestX-Reasoner) for reasoning outputs on RadRBench-CXR, through an OpenAI-compatible judge."""

import datasets
import evaluate

from rexrank.catalog import RADRBENCH_CITATION as CITATION
from rexrank.hf_metric import compute, report_metric_info

_CITATION = CITATION

_DESCRIPTION = """\
RadRScore as MAGIC-AI4Med/ChestX-Reasoner (eval/reasoning_eval.py, 9a8a00d) computes it: an LLM judge (GPT-4o in
the paper) extracts key observations from the ground-truth reasoning steps and from the model's whole output, then
counts how many reference observations the model recalls (completeness Rc), how many of the model's observations
agree with the original report (factuality Rf), and how many of the model's steps the reference steps support
(effectiveness Re), each 0 when its denominator is 0. The authors' prompts are kept verbatim. RadRScore, the mean of
the three, is ours (the reference reports them apart). An item with a reply that cannot be read, is cut at
max_tokens or is refused by the judge counts 0, the worst, in every component, and is counted.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the model's whole outputs, `<think>...</think><answer>...</answer>`.
    references (list of str, or list of list of str): the ground-truth reasoning steps (RadRBench's `reason_steps`).
    reports (list of str): the original report of each item (RadRBench's `original_report`).
    judge_url (str, optional): OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.
    judge_model (str, optional): the judge model's name (the reference used gpt-4o). Default: REXRANK_JUDGE_MODEL.
        The API key is read from OPENAI_API_KEY only.
    dataset (str, optional): where the text comes from. Default "radrbench-cxr": credentialed (MIMIC-CXR and
        CheXpert reports), so it goes only to loopback endpoints or to those in allow_endpoints (text of any
        other origin too: a list of texts is never known to be public).
    allow_endpoints (list of str, optional): non-loopback endpoints your data use agreement covers.
    concurrency (int, optional): requests in flight. Default 8.
    max_tokens (int, optional): answer tokens asked of the judge. Default 4096.
    temperature (float, optional): default 0 (the reference used the API default, 1).
Returns:
    radrscore, completeness, factuality, effectiveness (float): means over every item, an unread one at 0; NaN for
        no item.
    radrscore_per_sample, completeness_per_sample, factuality_per_sample, effectiveness_per_sample (list of float):
        0 where the item was not read.
    judged (int), judged_mean (float or None), judged_completeness, judged_factuality, judged_effectiveness (float):
        the items read, and the means over them (the reference's figures), signed by judged_signature.
    counts_per_sample (list of dict or None): reference_observations, prediction_observations, recalled, correct,
        effective, ineffective.
    unparseable, cut, refused, out_of_range (int): items with an unreadable judge reply, with a reply cut at
        max_tokens, with a prompt the judge refused, and items read with a count above its denominator. A judge
        server that fails after its retries raises instead: no item is scored.
    problems (list of str or None): why an item was not read. judge_replies (list of dict): raw replies by stage.
    signature (str): e.g. `radrscore:3|backend:judge:gpt-4o:t=0:max_tokens=4096|prompt:radrscore-9a8a00d|...`.
Examples:
    The judge is the endpoint REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL name (or judge_url= and judge_model=), e.g.
    a vLLM server at http://localhost:8000/v1 serving Qwen/Qwen2.5-72B-Instruct.

    >>> radrscore = evaluate.load("rexrank/radrscore")
    >>> results = radrscore.compute(predictions=["<think>No blunting of the costophrenic angles.</think>"
    ...                                          "<answer>B</answer>"],
    ...                             references=[["Check the costophrenic angles.", "They are sharp: no effusion."]],
    ...                             reports=["No pleural effusion."])
    >>> 0.0 <= results["radrscore"] <= 1.0
    True
"""

_FEATURES = [datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
             datasets.Features({"predictions": datasets.Value("string"),
                                "references": datasets.Sequence(datasets.Value("string"))})]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RadRScore(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/MAGIC-AI4Med/ChestX-Reasoner"],
                                  reference_urls=["https://arxiv.org/abs/2504.20930",
                                                  "https://huggingface.co/datasets/byrLLCC/RadRBench-CXR"],
                                  features=_FEATURES)

    def _compute(self, predictions, references, reports=None, judge_url=None, judge_model=None,
                 dataset="radrbench-cxr", allow_endpoints=(), concurrency=8, max_tokens=4096, temperature=0.0):
        if reports is None:
            raise ValueError("RadRScore needs reports=[...]: the original report of each item")
        return compute("radrscore", predictions, references, reports=reports, dataset=dataset, judge_url=judge_url,
                       judge_model=judge_model, allow_endpoints=allow_endpoints, concurrency=concurrency,
                       max_tokens=max_tokens, temperature=temperature)
