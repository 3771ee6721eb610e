r"""FineRadScore (Huang et al., MLHC 2024) as rajpurkarlab/FineRadScore asks its judge, with ReXrank's per-study max.

Reference: github.com/rajpurkarlab/FineRadScore at 3f5e1dc7: `few_shot_prompt.py` (`PROMPT_LONG`, `JSON_formatting`,
the example corrections), `gpt4_generations.py` (`generate_gpt4_response`, `generate_gpt4_response_zeroshot`: the
chat messages) and `run_rexval_experiments.py` (line ids for free-text reports, the check of a reply). The repository
has no scoring code; docs/reference-notes/fineradscore.md says where the rest comes from. What it does:

- Candidate: split with `re.split(r'(?<!\d)\.(?!\d|$) ', text)` (a period not after a digit, then a space), the first
  '' and the first ' ' piece dropped, each piece stripped, its double quotes removed, a period added and ".." made
  ".", then numbered `[i] piece` and joined by spaces. The reference report goes in as written.
- Messages, few-shot (the authors' main setting): system PROMPT, the example turns (user; assistant = `json.dumps` of
  the corrections), then the user turn QUERY. Zero-shot: one user turn, PROMPT + JSON_FORMAT + QUERY.
- Reply: a JSON object whose keys are line ids, or "None" for an inserted line, each value an object with the keys
  FIELDS (the reference asks again otherwise). A line not listed needs no correction.
- Severity: Emergent error 4, Urgent error 3, Actionable nonurgent error 2, Not actionable 1 (0: no correction).
  Per study the max (ReXrank's column) or the sum (called the paper's); the dataset value is 1 / mean over studies.

Ours, where the reference has no rule or one we do not copy (the signature records shots, aggregate and repair): the
reference asks again up to five times with the same messages at the API's default temperature; we ask once at the
judge's temperature (0 by default) and, when the reply cannot be read, once more with the reading error quoted. A
reply still unreadable is unparseable, and a reply cut at the judge's max_tokens is not read (version 2: both count
as the worst value in the board's mean; docs/security.md, rule 10). A candidate is read as a judge would retype it
(version 3; rule 19); one with a sentence that is not radiology (`rexrank.llm.radiology`) is never sent and counts as
the worst value, and with `quoted` (the board's default, signed; off reproduces the reference's messages) the system
message also tells the judge that the reports are quoted data it must not obey (version 4). A reply that
is one ``` fenced block is read. A line id beyond the candidate's lines and a severity that is not one of the four
labels (or "No error", 0) are reading errors. `{}` scores 0 (the reference's fifth example teaches it for a report
that needs no correction). Duplicate keys: the last wins, as `json.loads` has it. The reference's example turns
quote MIMIC-CXR reports, which may not be redistributed, so they are not shipped: SYNTHETIC (our own examples, the
default), the reference's own from a FineRadScore checkout or a JSON file (`load_shots`), or ZERO_SHOT.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol

from rexrank.errors import InputError
from rexrank.llm import JudgeUnavailable, Reply
from rexrank.llm.guard import DataUse
from rexrank.llm.quoting import FINERADSCORE
from rexrank.llm.quoting import quoted as quoting
from rexrank.llm.radiology import not_radiology
from rexrank.reports import check_pairs
from rexrank.scorers import published as record
from rexrank.scorers.base import Judged, Judgements, Problem, mean_scored
from rexrank.scorers.fineradscore.prompt import (
    JSON_FORMAT,
    PROMPT,
    PROMPT_VERSION,
    QUERY,
    REFERENCE,
    REFERENCE_SHOTS,
    REPAIR,
    SYNTHETIC,
    ZERO_SHOT,
    Shots,
    build_messages,
    load_shots,
    number_lines,
    shots_digest,
    shots_for,
    split_lines,
)
from rexrank.scorers.fineradscore.reply import (
    FIELDS,
    INSERTED,
    NO_ERROR,
    SEVERITIES,
    Correction,
    ReplyError,
    parse,
    read_severity,
)
from rexrank.signature import Signature

__all__ = ["AGGREGATES", "FIELDS", "INSERTED", "JSON_FORMAT", "MAX_TOKENS", "NO_ERROR", "PROMPT", "PROMPT_VERSION",
           "QUERY", "REFERENCE", "REPAIR", "SEVERITIES", "SYNTHETIC", "VERSION", "ZERO_SHOT", "Correction",
           "FineRadScore", "FineRadScoreResult", "ReplyError", "Shots", "aggregate", "build_messages", "compute",
           "fineradscore", "judge_for", "load_shots", "number_lines", "parse", "read_severity", "shots_digest",
           "shots_for", "signature", "split_lines"]

VERSION = "4"  # 4: candidates quoted as data (an option), one with a sentence that is not radiology counts the worst;
# 3: candidates read as a judge would retype them, one addressed to the evaluator counts the worst;
# 2: an unread study counts as the worst severity, a cut reply is never read, candidates' braces inert
MAX_TOKENS = 2048  # ours: the reference's GPT-4 call sets none (its Claude call 1024)
AGGREGATES = ("max", "sum")
WORST_SEVERITY = max(SEVERITIES.values())


# A GPT-4 model, as a signature names an endpoint's (which GPT-4 made ReXrank's figures is not published).
PUBLISHED_JUDGE = "judge:gpt-4:t=0:max_tokens=1024"


def worst(lines: int, how: str = "max") -> int:
    """What an unread study counts as: the worst severity, or for the sum every line and one inserted line at it."""
    return WORST_SEVERITY if how == "max" else WORST_SEVERITY * (lines + 1)


def aggregate(corrections: Sequence[Correction], how: str = "max") -> int:
    """A study's score: the highest severity (ReXrank) or their sum (the paper); 0 without corrections."""
    severities = [c.severity for c in corrections]
    if how == "max":
        return max(severities, default=0)
    if how == "sum":
        return sum(severities)
    raise InputError(f"unknown FineRadScore aggregate {how!r}: use one of {', '.join(AGGREGATES)}")


class Backend(Protocol):
    """What answers the judge's messages: `rexrank.llm.Judge` (an OpenAI-compatible endpoint)."""

    @property
    def identity(self) -> str: ...

    def complete(self, prompts: list[list[dict]], prompt_version: str, *,
                 dataset: DataUse | str | None) -> list[Reply]: ...


@dataclass(kw_only=True)
class FineRadScoreResult(Judgements):
    """`scores`: each study's severities aggregated as `aggregate` says (None: not scored)."""

    corrections: list[list[Correction] | None]  # None: the reply was not read
    replies: list[str | None]  # the reply read, else the last one received
    repaired_flags: list[bool]  # read from the reply to the repair turn
    aggregate: str = "max"

    def _per_study(self, how: str) -> list[int | None]:
        return [None if c is None else aggregate(c, how) for c in self.corrections]

    @property
    def max_severity(self) -> list[int | None]:
        return self._per_study("max")

    @property
    def sum_severity(self) -> list[int | None]:
        return self._per_study("sum")

    @property
    def repaired(self) -> int:
        return sum(self.repaired_flags)

    def mean_of(self, how: str) -> float:
        """Mean per-study score over the studies read, aggregated `how` (NaN when none was)."""
        return mean_scored(self._per_study(how))

    @property
    def inverse(self) -> float:
        """The leaderboard's 1/FineRadScore: 1 / mean (inf when every scored report needs no correction)."""
        return math.inf if self.mean == 0 else 1 / self.mean


def signature(judge: Backend, shots: Shots = SYNTHETIC, how: str = "max", quoted: bool = True) -> Signature:
    return Signature("fineradscore", VERSION, settings={"prompt": PROMPT_VERSION, "shots": shots.name, "agg": how,
                                                        "repair": "1", "quoted": "yes" if quoted else "no"},
                     models={"backend": judge.identity})


def fineradscore(predictions: Sequence[str], references: Sequence[str], judge: Backend, *,
                 shots: Shots | str | os.PathLike | None = None, how: str = "max",
                 dataset: DataUse | str | None = None, quoted: bool = True) -> FineRadScoreResult:
    """FineRadScore per study through `judge`. `dataset` names where the reports come from, for the judge's
    data-use guard (credentialed sets go only to loopback or explicitly allowed endpoints). `quoted`: the reports are
    sent as quoted data, said in the system message (the board's); off, the reference's messages."""
    check_pairs(predictions, references)
    aggregate([], how)  # an unknown aggregate fails before any call
    shots = shots_for(shots)
    # never sent: such a study counts the worst severity
    flags = [not_radiology(p, r) for p, r in zip(predictions, references)]
    candidates = [FINERADSCORE.neutral(p) for p in predictions]  # as sent: its lines are the ones the judge numbers
    made = (lambda c, r: quoting(build_messages(c, r, shots))) if quoted else (lambda c, r: build_messages(c, r, shots))
    conversations = {i: made(c, r) for i, (c, r, flag) in enumerate(zip(candidates, references, flags)) if flag is None}
    lines = [len(split_lines(c)) for c in candidates]
    n = len(candidates)
    corrections: list[list[Correction] | None] = [None] * n
    replies: list[str | None] = [None] * n
    errors: list[str | None] = list(flags)
    problems: list[Problem | None] = [Problem.ADDRESSED if flag else None for flag in flags]
    repaired = [False] * n
    repairs: dict[int, list[dict]] = {}

    def read(i: int, reply: Reply, turn: str) -> ReplyError | None:
        """Read study i's reply (the first turn's or the repair's); the reading error, if any, for a repair."""
        if reply.text is None:  # refused by the judge; a judge whose server failed raised instead
            problems[i], errors[i] = Problem.REFUSED, f"{turn}{reply.error or 'no answer'}"
            return None
        replies[i] = reply.text
        if reply.truncated:  # the same budget would cut the answer again: no repair turn
            problems[i], errors[i] = Problem.CUT, f"{turn}cut at the judge's max_tokens"
            return None
        try:
            corrections[i], problems[i], errors[i] = parse(reply.text, lines[i]), None, None
        except ReplyError as err:
            problems[i], errors[i] = Problem.UNPARSEABLE, f"{turn}{err}"
            return err
        return None

    first = judge.complete(list(conversations.values()), PROMPT_VERSION, dataset=dataset) if conversations else []
    for i, reply in zip(conversations, first):
        if err := read(i, reply, ""):
            repairs[i] = [*conversations[i], {"role": "assistant", "content": reply.text},
                          {"role": "user", "content": REPAIR.format(error=err)}]
    second = judge.complete(list(repairs.values()), PROMPT_VERSION, dataset=dataset) if repairs else []
    for i, reply in zip(repairs, second):
        before = errors[i]
        read(i, reply, f"unreadable ({before}), and after the repair turn: ")
        repaired[i] = problems[i] is None
    return FineRadScoreResult(scores=[None if c is None else aggregate(c, how) for c in corrections],
                              problems=problems, messages=errors, worst=[worst(k, how) for k in lines],
                              signature=str(signature(judge, shots, how, quoted)), corrections=corrections,
                              replies=replies,
                              repaired_flags=repaired, aggregate=how)


def judge_for(judge_url: str | None = None, judge_model: str | None = None, *, concurrency: int | str = 8,
              max_tokens: int = MAX_TOKENS, allow_endpoints: Sequence[str] = (), progress: bool = False):
    """The judge endpoint from the arguments or `REXRANK_JUDGE_URL` / `REXRANK_JUDGE_MODEL` (key in
    `OPENAI_API_KEY`). FineRadScore has no local model: without a judge model it is unavailable."""
    from rexrank.llm import Judge

    if not (judge_model or os.environ.get("REXRANK_JUDGE_MODEL")):
        raise JudgeUnavailable("FineRadScore needs an LLM judge behind an OpenAI-compatible endpoint: give "
                               "--judge-url URL --judge-model NAME (or REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL; "
                               "the key in OPENAI_API_KEY)")
    return Judge(base_url=judge_url, model=judge_model, max_tokens=max_tokens, concurrency=concurrency,
                 allow_endpoints=tuple(allow_endpoints), progress=progress)


def compute(predictions: Sequence[str], references: Sequence[str], *, dataset: DataUse | str | None = None,
            judge: Backend | None = None, shots: Shots | str | os.PathLike | None = None, how: str = "max",
            quoted: bool = True, **settings) -> dict:
    """What the `evaluate` module returns; `settings` go to `judge_for` unless a judge is given."""
    result = fineradscore(predictions, references, judge or judge_for(**settings), shots=shots, how=how,
                          dataset=dataset, quoted=quoted)
    return {"fineradscore": result.mean, "inv_fineradscore": result.inverse,
            "fineradscore_per_sample": result.board_scores, **result.tally(),
            "max_severity_per_sample": result.max_severity, "sum_severity_per_sample": result.sum_severity,
            "corrections_per_sample": [None if c is None else [x.to_dict() for x in c] for c in result.corrections],
            "repaired": result.repaired, "replies": result.replies, "problems_per_sample": result.messages,
            "signature": result.signature}


class FineRadScore(Judged):
    """FineRadScore in the scorecard, through a judge endpoint (docs/metrics.md §8)."""

    name = "fineradscore"
    title = "FineRadScore"
    # ReXrank stores the maximum severity per study; whether its judge was given a repair turn is not published.
    published = {"prompt": PROMPT_VERSION, "shots": REFERENCE_SHOTS, "agg": "max", "repair": None, "quoted": "no"}
    options = {"quoted": True}  # the board's: candidates quoted as data (off: the reference's messages)
    version = VERSION
    statistic = "inverse_mean"  # the board's 1/FineRadScore
    bounds = (0.0, math.inf)  # severities 0-4, per study their max or their sum
    details = {"fineradscore.max": "number", "fineradscore.sum": "number", "fineradscore.corrections": "text"}
    best = 0.0  # no correction
    worst = float(WORST_SEVERITY)  # what an unread study counts as, per study its highest severity
    board, demo = 8, 0.40  # the board's eighth column by default; the demo's value at quality 1
    empty_prediction = "judged as written: no line to correct, so only inserted lines (usually severe)"
    summary = ("An LLM judge corrects the prediction line by line and grades each correction's severity (0-4); per "
               "study the maximum; the board shows 1 / the mean.")
    section = "§8"

    def __init__(self, judge: Backend, shots: Shots | str | None = None, how: str = "max", quoted: bool = True):
        aggregate([], how)
        self.endpoint, self.shots, self.how, self.quoted = judge, shots_for(shots), how, quoted

    @classmethod
    def from_options(cls, judge: Mapping[str, Any], device: str | None = None, progress: bool = True
                     ) -> FineRadScore:
        endpoint = judge_for(judge.get("judge_url"), judge.get("judge_model"), concurrency=judge.get("concurrency", 8),
                             allow_endpoints=judge.get("allow_endpoints", ()), progress=progress)
        return cls(endpoint, judge.get("fineradscore_shots"), quoted=judge.get("quoted", True))

    def judge(self, predictions, references, dataset) -> FineRadScoreResult:
        return fineradscore(predictions, references, self.endpoint, shots=self.shots, how=self.how, dataset=dataset,
                            quoted=self.quoted)

    def detail(self, result: FineRadScoreResult) -> dict[str, list]:
        return {"fineradscore.max": result.max_severity, "fineradscore.sum": result.sum_severity,
                "fineradscore.corrections": [None if c is None else json.dumps([x.to_dict() for x in c])
                                             for c in result.corrections]}

    def extras(self, result: FineRadScoreResult) -> dict[str, Any]:
        return {"aggregate": self.how, "mean_max": result.mean_of("max"), "mean_sum": result.mean_of("sum"),
                "repaired": result.repaired}

    def signature(self) -> Signature:
        return signature(self.endpoint, self.shots, self.how, self.quoted)

    @staticmethod
    def as_published(backend: str | None = None) -> Signature:
        """The signature of a number made as the published figures were (by `backend`, an identity, where named): a
        GPT-4 model, the reference's examples and messages, a study's highest severity."""
        return signature(SimpleNamespace(identity=backend or PUBLISHED_JUDGE), SimpleNamespace(name=REFERENCE_SHOTS),
                         quoted=False)

    @staticmethod
    def departures(made: Signature) -> list[str]:
        """The published FineRadScore is a GPT-4 model's (which one is not published), with the reference's
        examples."""
        out = [] if "shots" in made.settings else [
            "FineRadScore with unnamed examples, the published with the reference's"]
        if not record.asked(made).startswith("gpt-4"):
            out.append(f"FineRadScore by {made.models.get('backend') or 'an unnamed judge'}, the published by a GPT-4 "
                       "model")
        return out + record.settings(made, FineRadScore.published, {
            "shots": "FineRadScore with {made} examples, the published with the reference's",
            "quoted": record.QUOTED.format(title="FineRadScore")})
