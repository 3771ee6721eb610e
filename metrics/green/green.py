"""GREEN as Stanford-AIMI/GREEN's green_score computes it, through an OpenAI-compatible server or locally."""

import evaluate

from rexrank.hf_metric import REXRANK_CITATION, compute, report_metric_info

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
""" + REXRANK_CITATION

_DESCRIPTION = """\
GREEN exactly as Stanford-AIMI/GREEN (green_score, d72c1951) computes it: the fine-tuned judge
StanfordAIMI/GREEN-RadLlama2-7b reads the reference and the candidate (each cut to 300 words) in the authors' prompt
and chat template, answers greedily within 2,048 tokens, and the answer's counts give GREEN = matched findings /
(matched findings + clinically significant errors (a)-(f)), 0 when nothing matched. The judge runs behind any
OpenAI-compatible endpoint (a vLLM server hosting the model) or locally with transformers. An answer the parser
cannot read is not scored (None) and is counted, where the reference would silently score it 0.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): generated reports.
    references (list of str): one ground-truth report per prediction.
    judge_url (str, optional): OpenAI-compatible base URL ending in /v1. Default: REXRANK_JUDGE_URL.
    judge_model (str, optional): the served model's name. Default: REXRANK_JUDGE_MODEL. The API key is read from
        OPENAI_API_KEY only.
    model_path (str, optional): a local copy of GREEN-RadLlama2-7b to run with transformers instead of a server.
        Without model_path and without a judge, the weights come through rexrank (REXRANK_MODEL_GREEN or the
        Hugging Face cache).
    dataset (str, optional): where the reports come from, for the messages. A list of texts is never known to be
        public: it goes only to a loopback endpoint or to one in allow_endpoints.
    allow_endpoints (list of str, optional): non-loopback endpoints you may send these texts to (for MIMIC-CXR,
        CheXpert Plus and ReXGradient, only ones your data use agreement covers).
    concurrency (int or "auto", optional): requests in flight; "auto": as many as a vLLM server's KV cache holds.
        Default 8.
    max_tokens (int, optional): answer tokens asked of the server. Default None: not sent, so a server started
        with --max-model-len 2048 gives each answer what its prompt leaves, the reference's rule (vLLM refuses a
        request whose prompt plus max_tokens exceeds --max-model-len).
    device, dtype, batch_size, max_length (optional): for the local model; defaults cuda or cpu, float16 on cuda
        and float32 on cpu, 8, 2048 (changing max_length changes the metric; the signature records it).
    trust_remote_code (bool, optional): for the local model, run the tokenizer code GREEN's repository ships in
        place of a tokenizer.json (tokenization_chexagent.py). Default False; the signature records it.
Returns:
    green (float): mean GREEN over every study, in [0, 1]; a study whose answer could not be read, was cut at the
        length limit or was refused by the judge counts 0, the worst (the board's value). NaN for no study.
    green_per_sample (list of float): each study's GREEN, 0 where its answer was not read.
    judged (int), judged_mean (float or None): the studies whose answer was read, and their mean.
    unparseable, cut, refused (int): answers without a readable score, answers cut at the length limit, prompts the
        judge refused (HTTP 4xx). A judge server that fails after its retries raises instead: no study is scored.
    problems_per_sample (list of str or None): why a study's answer was not read.
    green_counts_per_sample (list of dict or None): significant_a..f, insignificant_a..f, matched.
    green_counts (dict): each category summed over the studies read.
    completions (list of str or None): the judge's cleaned answers.
    signature (str): e.g. `green:4|backend:judge:StanfordAIMI/GREEN-RadLlama2-7b:t=0:max_tokens=server|prompt:...`.
Examples:
    The judge is the endpoint REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL name (or judge_url= and judge_model=), e.g.
    a vLLM server at http://localhost:8000/v1 serving StanfordAIMI/GREEN-RadLlama2-7b; without one, GREEN's local
    model runs (model_path=, or its weights through rexrank).

    >>> green = evaluate.load("rexrank/green")
    >>> results = green.compute(predictions=["Small left effusion."], references=["Small left pleural effusion."])
    >>> 0.0 <= results["green"] <= 1.0
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Green(evaluate.Metric):
    def _info(self):
        return report_metric_info(_DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION,
                                  codebase_urls=["https://github.com/Stanford-AIMI/GREEN"],
                                  reference_urls=["https://aclanthology.org/2024.findings-emnlp.21/",
                                                  "https://huggingface.co/StanfordAIMI/GREEN-RadLlama2-7b",
                                                  "https://rexrank.ai"])

    def _compute(self, predictions, references, judge_url=None, judge_model=None, model_path=None, dataset=None,
                 allow_endpoints=(), concurrency=8, max_tokens=None, device=None, dtype=None, batch_size=8,
                 max_length=2048, trust_remote_code=False):
        return compute("green", predictions, references, dataset=dataset, judge_url=judge_url, judge_model=judge_model,
                       model_path=model_path, allow_endpoints=allow_endpoints, concurrency=concurrency,
                       max_tokens=max_tokens, device=device, dtype=dtype, batch_size=batch_size,
                       max_length=max_length, trust_remote_code=trust_remote_code)
