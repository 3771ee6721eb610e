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
  every other output's prompts are the reference's byte for byte. Version 3 (rule 19): outputs are read as a judge
  would retype them (fullwidth forms, invisible characters, HTML entities). Version 4: one with a sentence that is not
  radiology (`rexrank.llm.radiology`, read with the item's steps and report as its reference) is never sent and
  counts 0 in all three; with `quoted` (the board's default, signed; off reproduces the reference's messages) the
  system message also says that the texts are quoted data the judge must not obey.
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
from rexrank.llm.quoting import quoted as quoting
from rexrank.llm.radiology import not_radiology
from rexrank.scorers import RADRSCORE
from rexrank.scorers.base import Judgements, Problem, mean_scored
from rexrank.scorers.radrscore_prompts import (  # noqa: F401  (the reference's, re-exported)
    EFFECTIVENESS_PROMPT,
    EXTRACT_PROMPT,
    FACTUALITY_PROMPT,
    RECALL_PROMPT,
    SYSTEM,
)
from rexrank.signature import Signature

REFERENCE = "MAGIC-AI4Med/ChestX-Reasoner@9a8a00df76110d71f23f60e912b492b5d65f2d39"
PROMPT_VERSION = "radrscore-9a8a00d"  # the prompts (radrscore_prompts), unchanged at HEAD 6bbe912 (2025-06-04)
# 4: outputs quoted as data (an option), one with a sentence that is not radiology counts 0; 3: outputs read as a judge
# would retype them, one addressed to the evaluator counts 0; 2: an unread item counts 0 in
# every component, and outputs cannot carry the reply's keys
VERSION = RADRSCORE.version  # the registry's spec states it
WORST, LEFT_OUT = 0.0, "left-out"  # what an unread item counts on the board; the signature's word for leaving it out
MAX_TOKENS = 4096  # ours: the reference set no limit; lists of quoted steps are long
DATASET = "radrbench-cxr"  # what the reports and reasoning steps are, for the judge's data-use guard

# The five judge calls of an item, in the order they are asked (the last two need the first two).
REFERENCE_FINDINGS, PREDICTION_FINDINGS, EFFECTIVENESS = "reference_findings", "prediction_findings", "effectiveness"
COMPLETENESS, FACTUALITY = "completeness", "factuality"
STAGES = (REFERENCE_FINDINGS, PREDICTION_FINDINGS, EFFECTIVENESS, COMPLETENESS, FACTUALITY)
COMPONENTS = (COMPLETENESS, FACTUALITY, EFFECTIVENESS)


def render(value: Any) -> str:
    """A value as the reference's f-strings write it: text as is, a list or dict as Python prints it."""
    return f"{value}"


def chat(prompt: str, quoted: bool = False) -> list[dict]:
    """The reference's messages; `quoted`, its system message says the texts are quoted data (`QUOTED`)."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    return quoting(messages) if quoted else messages


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


def signature(judge: Judge, unreadable: str = "worst", quoted: bool = True) -> Signature:
    return Signature("radrscore", VERSION, settings={"prompt": PROMPT_VERSION, "radrscore": "mean3",
                                                     "unreadable": unreadable, "quoted": "yes" if quoted else "no"},
                     models={"backend": judge.identity})


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
              dataset: DataUse | str | None = DATASET, quoted: bool = True) -> RadRScoreResult:
    """RadRScore per item through `judge`: `predictions` are the models' whole outputs, `references` the
    ground-truth reasoning steps (text, or a list of steps as RadRBench stores them), `reports` the original
    reports. `dataset` names where the text comes from, for the judge's data-use guard (RadRBench-CXR's reports
    are MIMIC-CXR and CheXpert text: loopback or explicitly allowed endpoints only). `quoted`: the texts are sent as
    quoted data, said in the system message (the board's); off, the reference's messages."""
    _check(predictions, references, reports)
    # never sent: such an item counts 0 in every component
    flags = [not_radiology(p, f"{render(steps)}\n{report}")
             for p, steps, report in zip(predictions, references, reports)]
    predictions = [ANSWER_FORMAT.neutral(p) for p in predictions]
    n = len(predictions)
    sent = [i for i in range(n) if flags[i] is None]
    first = [chat(p, quoted) for i in sent
             for p in (extraction_prompt(references[i]), extraction_prompt(predictions[i]),
                       effectiveness_prompt(references[i], predictions[i]))]
    asked = judge.complete(first, PROMPT_VERSION, dataset=dataset) if first else []
    replies: list[dict[str, Reply]] = [{} for _ in range(n)]
    for position, i in enumerate(sent):
        replies[i] = dict(zip(STAGES[:3], asked[3 * position:3 * position + 3]))
    read: list[dict[str, Any]] = [{} for _ in range(n)]
    second, waiting = [], []
    for i, item in enumerate(replies):
        ok = {stage: reply.text is not None and reply.error is None for stage, reply in item.items()}
        if item and all(ok.values()):
            read[i][REFERENCE_FINDINGS] = read_findings(read_json(item[REFERENCE_FINDINGS].text))
            read[i][PREDICTION_FINDINGS] = read_findings(read_json(item[PREDICTION_FINDINGS].text))
            parsed = read_json(item[EFFECTIVENESS].text)
            counts = (read_count(parsed, "effective_count"), read_count(parsed, "ineffective_count"))
            read[i][EFFECTIVENESS] = None if None in counts else counts
        if item and all(ok.values()) and all(v is not None for v in read[i].values()):
            second += [chat(completeness_prompt(read[i][REFERENCE_FINDINGS], read[i][PREDICTION_FINDINGS]), quoted),
                       chat(factuality_prompt(reports[i], read[i][PREDICTION_FINDINGS]), quoted)]
            waiting.append(i)
    asked = judge.complete(second, PROMPT_VERSION, dataset=dataset) if second else []
    for position, i in enumerate(waiting):
        replies[i].update(zip(STAGES[3:], asked[2 * position:2 * position + 2]))
        for stage, key in ((COMPLETENESS, "recalled_count"), (FACTUALITY, "correct_count")):
            reply = replies[i][stage]
            ok = reply.text is not None and reply.error is None
            read[i][stage] = read_count(read_json(reply.text), key) if ok else None

    completeness, factuality, effectiveness, counts, problems, messages = [], [], [], [], [], []
    for item, values, flag in zip(replies, read, flags):  # a judge whose server failed raised instead
        if flag is not None:
            problems.append(Problem.ADDRESSED)
            messages.append(flag)
            for column in (completeness, factuality, effectiveness, counts):
                column.append(None)
            continue
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
                           signature=str(signature(judge, quoted=quoted)), completeness=completeness,
                           factuality=factuality, effectiveness=effectiveness, counts=counts, replies=texts)


def judge_for(judge_url: str | None = None, judge_model: str | None = None, *, concurrency: int | str = 8,
              max_tokens: int = MAX_TOKENS, temperature: float = 0.0, seed: int | None = None,
              allow_endpoints: Sequence[str] = (), progress: bool = False) -> Judge:
    """The judge from the arguments or `REXRANK_JUDGE_URL` / `REXRANK_JUDGE_MODEL` (key in `OPENAI_API_KEY`). The
    reference's judge was OpenAI's gpt-4o at the API's default temperature (1); ours defaults to 0."""
    return Judge(base_url=judge_url, model=judge_model, max_tokens=max_tokens, temperature=temperature, seed=seed,
                 concurrency=concurrency, allow_endpoints=tuple(allow_endpoints), progress=progress)


def compute(predictions: Sequence[str], references: Sequence[Any], reports: Sequence[str] | None = None, *,
            dataset: DataUse | str | None = DATASET, judge: Judge | None = None, quoted: bool = True,
            **settings) -> dict:
    """What the `evaluate` module returns; `settings` go to `judge_for` unless a judge is given."""
    if reports is None:
        raise InputError("RadRScore needs reports=[...]: the original report of each item")
    result = radrscore(predictions, references, reports, judge := judge or judge_for(**settings), dataset=dataset,
                       quoted=quoted)
    return {"radrscore": result.mean, **{c: result.mean_of(c) for c in COMPONENTS},
            "radrscore_per_sample": result.board_scores, **result.tally(),
            **{f"judged_{c}": result.judged_mean_of(c) for c in COMPONENTS},
            **{f"{c}_per_sample": result.board(c) for c in COMPONENTS},
            "counts_per_sample": result.counts, "out_of_range": result.out_of_range, "problems": result.messages,
            "judge_replies": result.replies, "signature": result.signature,
            "judged_signature": str(signature(judge, LEFT_OUT, quoted))}
