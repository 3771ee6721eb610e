"""RadRScore (Fan et al., ChestX-Reasoner, arXiv 2504.20930) as MAGIC-AI4Med/ChestX-Reasoner computes it.

Reference: github.com/MAGIC-AI4Med/ChestX-Reasoner at 9a8a00d, `eval/reasoning_eval.py` (`get_key_finding`,
`cal_recall`, `get_precision`, `get_efficiency`, `process_item`, `main`). Per item, with GPT-4o as the judge:

- Five chat calls, each a system message "You are a medical AI assistant. " and one of the user prompts below:
  key observations extracted as JSON `{"key_conclusion": [{"observation": ..., "status": ...}]}` from the
  ground-truth reasoning steps and, separately, from the model's whole output (think and answer); recall: how many
  reference observations the model's observations recall; precision: how many model observations agree with the
  original report; efficiency: effective and ineffective steps of the model's output against the reference steps.
  Values enter the prompts as the reference's f-strings write them: text as is, a list of steps as Python prints
  it (`['...', '...']`), an extraction as the parsed dict (`{'key_conclusion': [...]}`).
- A reply is read by stripping it, deleting every "```json" and "```", and `json.loads` of what is left.
- Completeness Rc = recalled_count / len(reference key_conclusion); factuality Rf = correct_count / len(model
  key_conclusion); effectiveness Re = effective_count / (effective_count + ineffective_count); each 0 when its
  denominator is 0. A dataset value is the mean over the items whose replies all read.

Departures, each named in the signature or counted in the result:
- RadRScore = (Rc + Rf + Re) / 3, per item and over the dataset (ours; the reference reports the three apart).
- Decoding: the reference used the API defaults (temperature 1, sampled) and asked once more when a reply was not
  JSON. We ask greedily by default (the judge's settings are in the signature) and do not ask again.
- An item is read only when all five replies read, and then enters all three means. The reference added an item's
  completeness (and factuality) to its sums before a later reply failed, while leaving the item out of the count.
- Version 2, for a board that ranks what submitters send (docs/security.md, rule 10): an item with a reply that
  cannot be read, is cut at the length limit or is refused by the judge counts 0 in all three components, their
  worst; the means over the items read and each kind's count are reported beside them. A model output that carries
  the keys the reader takes its counts from (`effective_count`, `key_conclusion`, ...) has them made inert before it
  enters a prompt (`rexrank.llm.quoting.RADRSCORE`), so a judge that quotes it back cannot be read as scoring it;
  every other output's prompts are the reference's byte for byte.
- Two figures, each signed: the board's (`unreadable:worst`) and the read items' (`judged_*`, `unreadable:left-out`).
- `key_conclusion` must be a list (the plural is not read: nor is it by the reference) and each count a non-negative
  number (the reference would take a string's length or divide by a negative). A count above its denominator is
  kept, as in the reference, and counted (`out_of_range`).
- Stage two (recall, precision) is asked only for items whose three stage-one replies read.

The prompts hold no report text (their examples are generic phrases), so they are kept verbatim.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rexrank.errors import InputError
from rexrank.llm import Judge, Reply
from rexrank.llm.guard import DataUse
from rexrank.llm.quoting import RADRSCORE as ANSWER_FORMAT
from rexrank.scorers.base import Judgements, Problem, mean_scored
from rexrank.signature import Signature

REFERENCE = "MAGIC-AI4Med/ChestX-Reasoner@9a8a00df76110d71f23f60e912b492b5d65f2d39"
PROMPT_VERSION = "radrscore-9a8a00d"  # the prompts below, unchanged at HEAD 6bbe912 (2025-06-04)
VERSION = "2"  # 2: an unread item counts 0 in every component, and outputs cannot carry the reply's keys
WORST, LEFT_OUT = 0.0, "left-out"  # what an unread item counts on the board; the signature's word for leaving it out
MAX_TOKENS = 4096  # ours: the reference set no limit; lists of quoted steps are long
DATASET = "radrbench-cxr"  # what the reports and reasoning steps are, for the judge's data-use guard

SYSTEM = "You are a medical AI assistant. "  # verbatim, trailing space included

# The four user prompts, verbatim from eval/reasoning_eval.py at 9a8a00d (their f-strings' {reason_steps},
# {pred} and {report} are named for what they hold here). Lines are split only in the source.

# `get_key_finding`: applied to the reference steps and to the model output alike.
EXTRACT_PROMPT = (
    '\n'
    '            # Context\n'
    '            1. Reason Steps: {reasoning}\n'
    '\n'
    '            # Goal\n'
    '            1. Read the provided Reason Steps carefully.\n'
    '            2. Identify each key medical observation (e.g., widening of the mediastinum, size '
    'of the cardiac silhouette) and determine its status based on the reasoning (e.g., confirmed as '
    'xxx, not present, unlikely).\n'
    '            \n'
    '            3. Ensure the observations are concise and directly tied to the reasoning steps.\n'
    '            4. If there is any ambiguity or contradiction in the reasoning, reflect the '
    'findings as per the steps provided, and do not infer beyond the given text.\n'
    '            5. If the reason steps lacks some key findings, \n'
    '            5. **Output Format**:\n'
    '            - Return the extracted key reasoning steps as a JSON list of strings, where each '
    'string represents a specific observation or finding from the report.\n'
    '            - Structure your response in JSON format with the following schema:\n'
    '            {{\n'
    '                "key_conclusion": [\n'
    '                    {{\n'
    '                        "observation": "<description of the finding>",\n'
    '                        "status": "<status based on reasoning>"\n'
    '                    }}\n'
    '                ]\n'
    '            }}\n'
    '            - Respond directly with the JSON object, without explanations or additional content.\n'
    '            '
)

# `cal_recall`: completeness.
RECALL_PROMPT = (
    '\n'
    '            # Context\n'
    '            You need to calculate the recall of key medical findings between ground truth and '
    'model predictions. Given two dictionaries:\n'
    '            1. Ground Truth: {reference_findings}\n'
    '            2. Model Output: {prediction_findings}\n'
    '            \n'
    '            \n'
    '            # Goal\n'
    '            Your job is to determine how many observations from Ground Truth are recalled in '
    'Model Output. Follow these steps:\n'
    '\n'
    '            1. Compare each observation in Ground Truth with the observations in Model Output.\n'
    '            2. An observation is considered "recalled" if its meaning or content is '
    'substantially present in Model Output, even if the phrasing differs slightly. Focus on semantic '
    'equivalence rather than exact wording.\n'
    '            3. Compile a list of recalled observations from Ground Truth that match Model Output.\n'
    '            4. Count the total number of recalled observations.\n'
    '\n'
    '            Output Format:\n'
    '            - Return a JSON object with:\n'
    '            - "recalled_findings": A list of dictionaries, each containing the "observation" '
    'and "status" from `gt_key_finding` that were recalled.\n'
    '            - "recalled_count": An integer representing the number of recalled observations.\n'
    '            - Respond directly with the JSON object, without explanations or additional content.\n'
    '            '
)

# `get_precision`: factuality, against the original report.
FACTUALITY_PROMPT = (
    '\n'
    '            # Context\n'
    '            1. Ground Truth Report: {report}\n'
    '            2. Reasoning Steps: {prediction_findings}\n'
    '            # Goal\n'
    '            Your task is to determine which steps in a provided list of reasoning steps are '
    'correct based on a chest X-ray report. Follow these instructions:\n'
    '\n'
    '            1. **Input Data**:\n'
    '            - "Ground Truth Report": A text string containing the factual observations and '
    'findings from a chest X-ray report.\n'
    '            - "Reasoning Steps": A JSON list of strings, where each string represents a '
    'reasoning step (e.g., an observation, finding, or analytical statement) derived from a model output.\n'
    '\n'
    '            2. **Correctness Criteria**:\n'
    '            - A reasoning step is **correct** if:\n'
    '                - It explicitly aligns with or does not contradict the observations/findings in '
    'the ground truth report.\n'
    '                - It analyzes an observation or finding not mentioned in the report, and the '
    'report implies it is normal (e.g., absence of mention means no abnormality), and the step '
    'concludes it is normal.\n'
    '            - A reasoning step is **incorrect** if:\n'
    '                - It contradicts an explicit observation or finding in the ground truth report.\n'
    '                - It analyzes an observation or finding not mentioned in the report, the report '
    'implies it is normal, and the step concludes it is abnormal.\n'
    '            - General statements (e.g., definitions or procedural intent) are considered '
    'correct unless they misrepresent the report.\n'
    '            3. **Task**:\n'
    '            - Compare each reasoning step to the ground truth report.\n'
    '            - Assess its correctness based on the criteria above.\n'
    '            - Count the number of correct steps.\n'
    '\n'
    '            4. **Output Format**:\n'
    '            - Return a JSON object with:\n'
    '                - "correct_steps": A list of the reasoning steps that are factually correct.\n'
    '                - "correct_count": An integer representing the number of correct steps.\n'
    '            - Response directly with json object, Do not explain or return irrelevant content.\n'
    '            '
)

# `get_efficiency`: effectiveness, the whole model output against the reference steps.
EFFECTIVENESS_PROMPT = (
    '\n'
    '            # Context\n'
    '            1. Reasoning Steps: {reference_steps}\n'
    '            2. Model Prediction: {prediction}\n'
    '            \n'
    '            # Goal\n'
    '            You are an AI assistant tasked with evaluating the reasoning efficiency of a '
    "model's prediction based on a ground truth. I will provide you with two pieces of information:\n"
    '            1. "Reasoning Steps": A list of 10 reasoning steps representing the ground truth '
    'analysis of a chest X-ray.\n'
    '            2. "Model Prediction": The model\'s output, which contains its own reasoning and '
    'conclusions about the same chest X-ray.\n'
    '\n'
    '            # Task\n'
    '            Your task is to:\n'
    '                - Identify the distinct reasoning steps in "pred".\n'
    '                - Compare each reasoning step in "pred" to the "reason_steps" to determine if '
    'it is supported, contradicted, or unsupported by the ground truth.\n'
    '                - Calculate the efficiency as the ratio of supported reasoning steps in "pred" '
    'to the total number of reasoning steps in "pred" (i.e., supported steps / total steps in pred).\n'
    '                - Provide a step-by-step explanation of your analysis and the final efficiency '
    'score as a percentage.\n'
    '\n'
    '            # Output Format:\n'
    '            - Return a JSON object containing:\n'
    '                - "effective_steps": A list of the reasoning steps from "pred" that are '
    'supported by "reason_steps" (include the text of each step).\n'
    '                - "effective_count": The number of effective steps.\n'
    '                - "ineffective_count": The number of ineffective steps.\n'
    '            - Response directly with json object, Do not explain or return irrelevant content.\n'
    '            '
)

# The five judge calls of an item, in the order they are asked (the last two need the first two).
REFERENCE_FINDINGS, PREDICTION_FINDINGS, EFFECTIVENESS = "reference_findings", "prediction_findings", "effectiveness"
COMPLETENESS, FACTUALITY = "completeness", "factuality"
STAGES = (REFERENCE_FINDINGS, PREDICTION_FINDINGS, EFFECTIVENESS, COMPLETENESS, FACTUALITY)
COMPONENTS = (COMPLETENESS, FACTUALITY, EFFECTIVENESS)


def render(value: Any) -> str:
    """A value as the reference's f-strings write it: text as is, a list or dict as Python prints it."""
    return f"{value}"


def chat(prompt: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]


def extraction_prompt(reasoning: Any) -> str:
    return EXTRACT_PROMPT.format(reasoning=render(reasoning))


def completeness_prompt(reference_findings: dict, prediction_findings: dict) -> str:
    return RECALL_PROMPT.format(reference_findings=render(reference_findings),
                                prediction_findings=render(prediction_findings))


def factuality_prompt(report: str, prediction_findings: dict) -> str:
    return FACTUALITY_PROMPT.format(report=render(report), prediction_findings=render(prediction_findings))


def effectiveness_prompt(reference_steps: Any, prediction: str) -> str:
    return EFFECTIVENESS_PROMPT.format(reference_steps=render(reference_steps), prediction=render(prediction))


def read_json(text: str) -> Any | None:
    """The reference's reading: strip, delete every "```json" and "```", parse; None when that is not JSON."""
    try:
        return json.loads(text.strip().replace("```json", "").replace("```", ""))
    except (ValueError, RecursionError):
        return None


def read_findings(reply: Any) -> dict | None:
    """An extraction: a JSON object whose "key_conclusion" is a list (its length is what counts)."""
    return reply if isinstance(reply, dict) and isinstance(reply.get("key_conclusion"), list) else None


def read_count(reply: Any, key: str) -> int | float | None:
    """A count the judge gave: a finite, non-negative number (JSON true/false are not counts)."""
    value = reply.get(key) if isinstance(reply, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return value


def ratio(part: float, whole: float) -> float:
    return 0.0 if whole == 0 else part / whole


@dataclass(kw_only=True)
class RadRScoreResult(Judgements):
    """`scores`: RadRScore per item, the mean of its three components (ours); `messages` say which stage left an
    item unscored: "<stage>: unparseable" or "<stage>: failed: <error>"."""

    completeness: list[float | None]  # per item; None where the item was not read
    factuality: list[float | None]
    effectiveness: list[float | None]
    counts: list[dict[str, float] | None]  # the judge's counts and the two observation lists' lengths
    replies: list[dict[str, str | None]]  # the judge's raw replies by stage (None: not asked, or failed)

    @property
    def out_of_range(self) -> int:
        """Scored items with a count above its denominator (Rc or Rf > 1)."""
        return sum(c is not None and (c["recalled"] > c["reference_observations"]
                                      or c["correct"] > c["prediction_observations"]) for c in self.counts)

    def board(self, component: str) -> list[float]:
        """A component per item, 0 (its worst) where the item was not read."""
        return [WORST if v is None else v for v in getattr(self, component)]

    def mean_of(self, component: str) -> float:
        """A component's board mean: every item, an unread one at 0 (NaN when there is none)."""
        return mean_scored(self.board(component))

    def judged_mean_of(self, component: str) -> float:
        """A component's mean over the items read (NaN when none was)."""
        return mean_scored(getattr(self, component))


def signature(judge: Judge, unreadable: str = "worst") -> Signature:
    return Signature("radrscore", VERSION, settings={"prompt": PROMPT_VERSION, "radrscore": "mean3",
                                                     "unreadable": unreadable}, models={"backend": judge.identity})


def _check(predictions, references, reports) -> None:
    if not len(predictions) == len(references) == len(reports):
        raise InputError(f"{len(predictions)} predictions, {len(references)} reference reasoning steps and "
                         f"{len(reports)} reports: one of each per item")
    for i, (prediction, steps, report) in enumerate(zip(predictions, references, reports)):
        for kind, value in (("prediction", prediction), ("report", report)):
            if not isinstance(value, str):
                raise InputError(f"item {i}: the {kind} is {type(value).__name__} {value!r:.40}, not text")
        if not isinstance(steps, str | list | dict):
            raise InputError(f"item {i}: the reference reasoning steps are {type(steps).__name__} {steps!r:.40}, "
                             "not text, a list of steps or a dict")


def _refused(stage: str, reply: Reply) -> str:
    return f"{stage}: refused: {reply.error or 'no answer'}"


def radrscore(predictions: Sequence[str], references: Sequence[Any], reports: Sequence[str], judge: Judge, *,
              dataset: DataUse | str | None = DATASET) -> RadRScoreResult:
    """RadRScore per item through `judge`: `predictions` are the models' whole outputs, `references` the
    ground-truth reasoning steps (text, or a list of steps as RadRBench stores them), `reports` the original
    reports. `dataset` names where the text comes from, for the judge's data-use guard (RadRBench-CXR's reports
    are MIMIC-CXR and CheXpert text: loopback or explicitly allowed endpoints only)."""
    _check(predictions, references, reports)
    predictions = [ANSWER_FORMAT.neutral(p) for p in predictions]
    n = len(predictions)
    first = [chat(p) for prediction, steps in zip(predictions, references)
             for p in (extraction_prompt(steps), extraction_prompt(prediction),
                       effectiveness_prompt(steps, prediction))]
    asked = judge.complete(first, PROMPT_VERSION, dataset=dataset) if n else []
    replies: list[dict[str, Reply]] = [dict(zip(STAGES[:3], asked[3 * i:3 * i + 3])) for i in range(n)]
    read: list[dict[str, Any]] = [{} for _ in range(n)]
    second, waiting = [], []
    for i, item in enumerate(replies):
        ok = {stage: reply.text is not None and reply.error is None for stage, reply in item.items()}
        if all(ok.values()):
            read[i][REFERENCE_FINDINGS] = read_findings(read_json(item[REFERENCE_FINDINGS].text))
            read[i][PREDICTION_FINDINGS] = read_findings(read_json(item[PREDICTION_FINDINGS].text))
            parsed = read_json(item[EFFECTIVENESS].text)
            counts = (read_count(parsed, "effective_count"), read_count(parsed, "ineffective_count"))
            read[i][EFFECTIVENESS] = None if None in counts else counts
        if all(ok.values()) and all(v is not None for v in read[i].values()):
            second += [chat(completeness_prompt(read[i][REFERENCE_FINDINGS], read[i][PREDICTION_FINDINGS])),
                       chat(factuality_prompt(reports[i], read[i][PREDICTION_FINDINGS]))]
            waiting.append(i)
    asked = judge.complete(second, PROMPT_VERSION, dataset=dataset) if second else []
    for position, i in enumerate(waiting):
        replies[i].update(zip(STAGES[3:], asked[2 * position:2 * position + 2]))
        for stage, key in ((COMPLETENESS, "recalled_count"), (FACTUALITY, "correct_count")):
            reply = replies[i][stage]
            ok = reply.text is not None and reply.error is None
            read[i][stage] = read_count(read_json(reply.text), key) if ok else None

    completeness, factuality, effectiveness, counts, problems, messages = [], [], [], [], [], []
    for item, values in zip(replies, read):  # a judge whose server failed raised instead: no item is scored for it
        refused = next((_refused(stage, reply) for stage, reply in item.items() if reply.text is None), None)
        cut = next((f"{stage}: cut at the length limit" for stage, reply in item.items() if reply.truncated), None)
        unread = next((f"{stage}: unparseable" for stage in STAGES if stage in item and values.get(stage) is None),
                      None)
        problems.append(Problem.REFUSED if refused else Problem.CUT if cut else Problem.UNPARSEABLE if unread
                        else None)
        messages.append(refused or cut or unread)
        if problems[-1] is not None:
            for column in (completeness, factuality, effectiveness, counts):
                column.append(None)
            continue
        effective, ineffective = values[EFFECTIVENESS]
        row = {"reference_observations": len(values[REFERENCE_FINDINGS]["key_conclusion"]),
               "prediction_observations": len(values[PREDICTION_FINDINGS]["key_conclusion"]),
               "recalled": values[COMPLETENESS], "correct": values[FACTUALITY],
               "effective": effective, "ineffective": ineffective}
        counts.append(row)
        completeness.append(ratio(row["recalled"], row["reference_observations"]))
        factuality.append(ratio(row["correct"], row["prediction_observations"]))
        effectiveness.append(ratio(effective, effective + ineffective))
    texts = [{stage: item[stage].text if stage in item else None for stage in STAGES} for item in replies]
    scores = [None if rc is None else (rc + rf + re) / 3 for rc, rf, re in zip(completeness, factuality, effectiveness)]
    return RadRScoreResult(scores=scores, problems=problems, messages=messages, worst=[WORST] * n,
                           signature=str(signature(judge)), completeness=completeness, factuality=factuality,
                           effectiveness=effectiveness, counts=counts, replies=texts)


def judge_for(judge_url: str | None = None, judge_model: str | None = None, *, concurrency: int | str = 8,
              max_tokens: int = MAX_TOKENS, temperature: float = 0.0, seed: int | None = None,
              allow_endpoints: Sequence[str] = (), progress: bool = False) -> Judge:
    """The judge from the arguments or `REXRANK_JUDGE_URL` / `REXRANK_JUDGE_MODEL` (key in `OPENAI_API_KEY`). The
    reference's judge was OpenAI's gpt-4o at the API's default temperature (1); ours defaults to 0."""
    return Judge(base_url=judge_url, model=judge_model, max_tokens=max_tokens, temperature=temperature, seed=seed,
                 concurrency=concurrency, allow_endpoints=tuple(allow_endpoints), progress=progress)


def compute(predictions: Sequence[str], references: Sequence[Any], reports: Sequence[str], *,
            dataset: DataUse | str | None = DATASET, judge: Judge | None = None, **settings) -> dict:
    """What the `evaluate` module returns; `settings` go to `judge_for` unless a judge is given."""
    result = radrscore(predictions, references, reports, judge := judge or judge_for(**settings), dataset=dataset)
    return {"radrscore": result.mean, **{c: result.mean_of(c) for c in COMPONENTS},
            "radrscore_per_sample": result.board_scores, **result.tally(),
            **{f"judged_{c}": result.judged_mean_of(c) for c in COMPONENTS},
            **{f"{c}_per_sample": result.board(c) for c in COMPONENTS},
            "counts_per_sample": result.counts, "out_of_range": result.out_of_range, "problems": result.messages,
            "judge_replies": result.replies, "signature": result.signature,
            "judged_signature": str(signature(judge, LEFT_OUT))}
