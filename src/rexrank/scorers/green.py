"""GREEN (Ostmeier et al., Findings of EMNLP 2024) as Stanford-AIMI/GREEN's `green_score` computes it.

Reference: github.com/Stanford-AIMI/GREEN at d72c1951 — `green_score/utils.py` (`make_prompt`, `clean_responses`)
and `green_score/green.py` (`GREEN.__init__`, `get_response`, `parse_error_counts`, `compute_green`). What it does:

- Prompt: each report cut to its first 300 whitespace-separated words, rejoined with single spaces (so runs of
  whitespace and newlines collapse even in short reports), put into the prompt below, sent as the one human turn
  of a conversation that also holds an empty assistant turn, rendered by the reference's own chat template (which
  replaces the tokenizer's), and tokenized with a BOS in front and an EOS behind (`add_eos_token=True`).
- Decoding: greedy, `max_length=2048` counting prompt and answer together, batches of 8 left-padded with EOS. A
  padded batch shares one limit, so there a study's room depends on its neighbours; we give every study its own
  (2048 minus its own prompt), which is the reference's rule at batch size 1 and does not depend on batching.
- Cleaning: decode with transformers 4's space clean-up (" ." -> "."), keep what follows the last `<|assistant|>`
  and then the last `[Explanation]:`, or, when the answer echoes the template's `[Explanation]:\\n    <Explanation>\\n`,
  only what lies between its first and second `[Explanation]:` (the answer is then lost); drop `</s>`, `<unk>`.
- Parsing: a section is `[Name]:` up to the first blank line; one that starts with "No" counts 0. Significant and
  insignificant errors: the lines `(a) ...`..`(f) ...` (else `(1)`..`(6)`), found anywhere in the section, sorted
  as strings; a line's count is the first integer right after ": " and right before "."; a line without one
  counts 0. Matched findings: the integer that opens the section, right before ".".
- GREEN = 0 when matched is 0, else matched / (matched + the six significant counts). Insignificant errors do not
  count.

Where the reference falls back silently we do not: it scores a study whose answer lacks the significant-errors or
the matched-findings section, or whose section gives no count at all, as if the counts were 0 (so 0, or 1 when
only the errors are missing). Such an answer is unparseable here, and counted. Every answer the reference can read
is read the same way, quirks included (a count without its trailing period is 0).

Ours, for a board that ranks what submitters send (version 4; docs/security.md, rules 10 and 19): a candidate that
carries pieces of the answer format ("[Matched Findings]:", a count line "(a) ...: 0.", a chat marker), as written
or as a judge would retype it (fullwidth brackets, zero-width spaces, HTML entities), has them made inert before it
enters the prompt (`rexrank.llm.quoting.GREEN`), so a judge that quotes it back cannot be read as scoring it; one
with a sentence that is not radiology (`rexrank.llm.radiology`: another language, a spelling no report writes) is
never sent and counts 0; every other report's prompt is the reference's byte for byte. Version 5: with `quoted` (the
board's default, signed; off reproduces the reference), a system message ahead of that prompt tells the judge that
the reports are quoted data it must not obey (`rexrank.llm.quoting.QUOTED`). A study whose answer cannot be read, is
cut at the length limit or is refused by the judge counts as 0, GREEN's worst, in the value; the mean over the
studies read and each kind's count are reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

from rexrank.llm import Reply
from rexrank.llm.guard import DataUse
from rexrank.llm.quoting import GREEN as ANSWER_FORMAT
from rexrank.llm.quoting import quoted as quoting
from rexrank.llm.radiology import not_radiology
from rexrank.models.green import CHAT_TEMPLATE, MAX_LENGTH, local_identity  # noqa: F401  (CHAT_TEMPLATE re-exported)
from rexrank.models.registry import MODELS
from rexrank.reports import check_pairs
from rexrank.scorers import published as record
from rexrank.scorers.base import Judged, Judgements, Problem
from rexrank.scorers.green_reply import (  # noqa: F401  (re-exported: the reply's reading)
    COUNT_KEYS,
    INSIGNIFICANT,
    MATCHED,
    SIGNIFICANT,
    SUBCATEGORIES,
    Parsed,
    clean_completion,
    parse,
    score,
)
from rexrank.signature import Signature

REFERENCE = "Stanford-AIMI/GREEN@d72c1951e69683b93405968901fd4f14cc6c27b0"
PROMPT_VERSION = "green-d72c195"  # the prompt text below; unchanged since 6fa533d (2024-09-22), where the cut came in
VERSION = "5"  # 5: candidates quoted as data (an option), and one with a sentence that is not radiology counts 0;
# 4: candidates are read as a judge would retype them, and one addressed to the evaluator counts 0;
# 3: an unread study counts 0, and candidates cannot carry the answer format (2: left out of the mean; 1 also scored
# an answer cut at the length limit when a section parsed)
WORST = 0.0
MAX_WORDS = 300

# Verbatim from Stanford-AIMI/GREEN, green_score/utils.py `make_prompt` at d72c1951 (their f-string's {text1} and
# {text2} are {reference} and {candidate} here). The model was fine-tuned on this text: it is part of the metric.
PROMPT = (
    "Objective: Evaluate the accuracy of a candidate radiology report in comparison to a reference radiology report "
    "composed by expert radiologists.\n"
    "\n"
    "    Process Overview: You will be presented with:\n"
    "\n"
    "    1. The criteria for making a judgment.\n"
    "    2. The reference radiology report.\n"
    "    3. The candidate radiology report.\n"
    "    4. The desired format for your assessment.\n"
    "\n"
    "    1. Criteria for Judgment:\n"
    "\n"
    "    For each candidate report, determine:\n"
    "\n"
    "    The count of clinically significant errors.\n"
    "    The count of clinically insignificant errors.\n"
    "\n"
    "    Errors can fall into one of these categories:\n"
    "\n"
    "    a) False report of a finding in the candidate.\n"
    "    b) Missing a finding present in the reference.\n"
    "    c) Misidentification of a finding's anatomic location/position.\n"
    "    d) Misassessment of the severity of a finding.\n"
    "    e) Mentioning a comparison that isn't in the reference.\n"
    "    f) Omitting a comparison detailing a change from a prior study.\n"
    "    Note: Concentrate on the clinical findings rather than the report's writing style. Evaluate only the findings "
    "that appear in both reports.\n"
    "\n"
    "    2. Reference Report:\n"
    "    {reference}\n"
    "\n"
    "    3. Candidate Report:\n"
    "    {candidate}\n"
    "\n"
    "    4. Reporting Your Assessment:\n"
    "\n"
    "    Follow this specific format for your output, even if no errors are found:\n"
    "    ```\n"
    "    [Explanation]:\n"
    "    <Explanation>\n"
    "\n"
    "    [Clinically Significant Errors]:\n"
    "    (a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n"
    "    ....\n"
    "    (f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n"
    "\n"
    "    [Clinically Insignificant Errors]:\n"
    "    (a) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n"
    "    ....\n"
    "    (f) <Error Type>: <The number of errors>. <Error 1>; <Error 2>; ...; <Error n>\n"
    "\n"
    "    [Matched Findings]:\n"
    "    <The number of matched findings>. <Finding 1>; <Finding 2>; ...; <Finding n>\n"
    "    ```\n"
)

# A vLLM server for GREEN's pinned checkpoint (rexrank.models.registry): its tokenizer is the repository's own
# code (tokenization_chexagent.py, a slow sentencepiece tokenizer; no tokenizer.json), hence --trust-remote-code
# and --tokenizer-mode slow, both at the pinned commit; a context of 2,048 tokens, prompt and answer, as the
# reference's max_length; float16, as the reference runs it; vLLM's own sampling defaults, not the repository's
# generation_config.json; VLLM_CHAT_TEMPLATE (below) written to green.jinja.
VLLM_COMMAND = ("vllm serve StanfordAIMI/GREEN-RadLlama2-7b --revision 832389d56bbd45a36bbd61dfa4f0be76e99f1dad "
                "--tokenizer-revision 832389d56bbd45a36bbd61dfa4f0be76e99f1dad "
                "--code-revision 832389d56bbd45a36bbd61dfa4f0be76e99f1dad --trust-remote-code --tokenizer-mode slow "
                "--max-model-len 2048 --dtype float16 --generation-config vllm --chat-template green.jinja")

# Ours: for an OpenAI-compatible server (`vllm serve ... --chat-template FILE`), one user message rendered to the
# reference's text for [human prompt, empty gpt turn] plus generation prompt, with the BOS and the EOS its tokenizer
# call adds written out (chat servers tokenize the rendered text without adding special tokens).
VLLM_CHAT_TEMPLATE = (
    "{% if messages | length > 2 or messages[-1]['role'] != 'user' or (messages | length == 2 and "
    "messages[0]['role'] != 'system') %}"
    "{{ raise_exception('GREEN takes one user message, after a system message or none') }}{% endif %}"
    "{{ bos_token }}{% if messages | length == 2 %}{{ '<|system|>\n' + messages[0]['content'] + eos_token + '\n' }}"
    "{% endif %}"
    "{{ '<|user|>\n' + messages[-1]['content'] + eos_token + '\n<|assistant|>\n' + eos_token + "
    "'\n<|assistant|>\n' + eos_token }}"
)

def truncate_words(text: str, max_words: int = MAX_WORDS) -> str:
    """The first `max_words` whitespace-separated words, joined by single spaces (as the reference does always)."""
    return " ".join(text.split()[:max_words])


def build_prompt(reference: str, candidate: str) -> str:
    """The reference's prompt; a candidate's pieces of the answer format are made inert (the module docstring)."""
    return PROMPT.format(reference=truncate_words(reference),
                         candidate=ANSWER_FORMAT.neutral(truncate_words(candidate)))


class Backend(Protocol):
    """What produces GREEN's answers: `rexrank.llm.Judge` (an OpenAI-compatible server) or `LocalGreen`."""

    @property
    def identity(self) -> str: ...

    def complete(self, prompts: list[str] | list[list[dict]], prompt_version: str, *,
                 dataset: DataUse | str | None) -> list[Reply]: ...


@dataclass(kw_only=True)
class GreenResult(Judgements):
    counts: list[dict[str, int] | None]  # COUNT_KEYS per study; None where the answer was not read
    completions: list[str | None]  # cleaned answers; None where the judge refused the prompt

    @property
    def totals(self) -> dict[str, int]:
        """Each category summed over the studies read."""
        return {key: sum(c[key] for c in self.counts if c is not None) for key in COUNT_KEYS}


def signature(backend: Backend, quoted: bool = True) -> Signature:
    """The backend's identity carries its length rule (a judge's max_tokens, a local model's max_length)."""
    return Signature("green", VERSION, settings={"prompt": PROMPT_VERSION, "words": str(MAX_WORDS),
                                                 "quoted": "yes" if quoted else "no"},
                     models={"backend": backend.identity})


def green(predictions: Sequence[str], references: Sequence[str], backend: Backend, *,
          dataset: DataUse | str | None = None, quoted: bool = True) -> GreenResult:
    """GREEN per study through `backend`. `dataset` names where the reports come from, for the judge's data-use
    guard (credentialed sets go only to loopback or explicitly allowed endpoints). `quoted`: the reports are sent
    as quoted data, with a system message (the board's); off, the reference's one message."""
    check_pairs(predictions, references)
    # never sent: such a study counts GREEN's worst
    flags = [not_radiology(p, r) for p, r in zip(predictions, references)]
    prompts = [quoting([{"role": "user", "content": build_prompt(r, p)}]) if quoted else build_prompt(r, p)
               for p, r, flag in zip(predictions, references, flags) if flag is None]
    replies = iter(backend.complete(prompts, PROMPT_VERSION, dataset=dataset) if prompts else [])
    scores, counts, completions, problems, messages = [], [], [], [], []
    for flag in flags:  # a judge whose server failed raised instead: no study is scored for it
        if flag is not None:
            for column, value in ((completions, None), (scores, None), (counts, None),
                                  (problems, Problem.ADDRESSED), (messages, flag)):
                column.append(value)
            continue
        reply = next(replies)
        completion = None if reply.text is None else clean_completion(reply.text)
        # An answer cut at the length limit is not read, even when a section parsed: the errors it would have
        # listed after the cut are unknown, so its matched findings alone would score it too high.
        parsed = None if completion is None or reply.truncated else parse(completion)
        problem, message = (None, None) if parsed is not None else (
            (Problem.REFUSED, reply.error or "no answer") if completion is None else
            (Problem.CUT, "cut at the length limit") if reply.truncated else
            (Problem.UNPARSEABLE, "no significant-errors or matched-findings count to read"))
        completions.append(completion)
        scores.append(None if parsed is None else score(parsed))
        counts.append(None if parsed is None else parsed.counts())
        problems.append(problem)
        messages.append(message)
    return GreenResult(scores=scores, problems=problems, messages=messages, worst=[WORST] * len(scores),
                       signature=str(signature(backend, quoted)), counts=counts, completions=completions)


def backend_for(judge_url: str | None = None, judge_model: str | None = None, model_path: str | Path | None = None,
                *, concurrency: int | str = 8, max_tokens: int | None = None, allow_endpoints: Sequence[str] = (),
                device: str | None = None, dtype: str | None = None, batch_size: int = 8,
                max_length: int = MAX_LENGTH, progress: bool = False, trust_remote_code: bool = False) -> Backend:
    """A local model when `model_path` is given; else the judge endpoint from the arguments or `REXRANK_JUDGE_URL` /
    `REXRANK_JUDGE_MODEL` (key in `OPENAI_API_KEY`) when one is named; else GREEN's weights through
    `rexrank.models` (`REXRANK_MODEL_GREEN` or the Hugging Face cache).

    A server hosting GREEN holds the reference's length rule itself: `VLLM_COMMAND` serves the pinned checkpoint
    with a context of 2,048 tokens, and no `max_tokens` is sent (None), so each answer gets what is left after its
    prompt, as the reference's `max_length=2048` gives it. Sending `max_tokens=2048` to that server would be refused
    for every study: vLLM answers 400 when prompt plus max_tokens exceeds --max-model-len; it does not cut."""
    import os

    from rexrank.llm import Judge
    from rexrank.models.green import LocalGreen  # the local model: torch and transformers, loaded when asked

    local = {"device": device, "dtype": dtype, "batch_size": batch_size, "max_length": max_length,
             "progress": progress, "trust_remote_code": trust_remote_code}
    if model_path is not None:
        return LocalGreen(model_path, **local)
    if judge_url or judge_model or os.environ.get("REXRANK_JUDGE_URL") or os.environ.get("REXRANK_JUDGE_MODEL"):
        return Judge(base_url=judge_url, model=judge_model, max_tokens=max_tokens, concurrency=concurrency,
                     allow_endpoints=tuple(allow_endpoints), progress=progress)
    return LocalGreen(**local)


def compute(predictions: Sequence[str], references: Sequence[str], *, dataset: DataUse | str | None = None,
            backend: Backend | None = None, quoted: bool = True, **settings) -> dict:
    """What the `evaluate` module returns; `settings` go to `backend_for` unless a backend is given."""
    result = green(predictions, references, backend or backend_for(**settings), dataset=dataset, quoted=quoted)
    return {"green": result.mean, "green_per_sample": result.board_scores, **result.tally(),
            "problems_per_sample": result.messages, "green_counts_per_sample": result.counts,
            "green_counts": result.totals, "completions": result.completions, "signature": result.signature}


class Green(Judged):
    """GREEN in the scorecard, through a judge endpoint or the local model (docs/metrics.md §7)."""

    name = "green"
    title = "GREEN"
    published = {"prompt": PROMPT_VERSION, "words": str(MAX_WORDS), "quoted": "no"}
    options = {"quoted": True}  # the board's: candidates quoted as data (off: the reference's prompt alone)
    version = VERSION
    bounds = (0.0, 1.0)  # matched / (matched + errors)
    details = {f"green.{key}": "number" for key in COUNT_KEYS}
    best = 1.0  # no clinically significant error, a finding matched
    worst = WORST  # what an unread study counts as
    local = True  # GREEN's own model runs here too (rexrank models download green)
    board, demo = 7, 0.30  # the board's seventh column by default; the demo's value at quality 1
    empty_prediction = "judged as written (an empty candidate matches nothing: usually 0)"
    summary = ("A fine-tuned LLM judge counts matched findings and clinically significant errors: matched / (matched"
               " + significant errors).")
    section = "§7"

    def __init__(self, backend: Backend, quoted: bool = True):
        self.backend, self.quoted = backend, quoted

    @classmethod
    def from_options(cls, judge: Mapping[str, Any], device: str | None = None, progress: bool = True) -> Green:
        known = ("judge_url", "judge_model", "concurrency", "allow_endpoints")
        return cls(backend_for(**{k: judge[k] for k in known if k in judge}, device=device, progress=progress,
                               trust_remote_code=bool(judge.get("green_trust_remote_code"))),
                   quoted=judge.get("quoted", True))

    def judge(self, predictions, references, dataset) -> GreenResult:
        return green(predictions, references, self.backend, dataset=dataset, quoted=self.quoted)

    def detail(self, result: GreenResult) -> dict[str, list]:
        return {f"green.{key}": [None if c is None else c[key] for c in result.counts] for key in COUNT_KEYS}

    def extras(self, result: GreenResult) -> dict[str, Any]:
        return {"error_counts": result.totals}

    def signature(self) -> Signature:
        return signature(self.backend, self.quoted)

    @staticmethod
    def as_published(backend: str | None = None) -> Signature:
        """The signature of a number made as the published figures were (by `backend`, an identity, where named):
        its pinned model in float16 on CUDA, as the reference runs it, asked with the reference's one message."""
        judge = backend or local_identity(MODELS["GREEN"].pinned, "float16")
        return signature(SimpleNamespace(identity=judge), quoted=False)

    @staticmethod
    def departures(made: Signature) -> list[str]:
        """The published GREEN is its own pinned model's (by its weights or an endpoint serving it by name)."""
        model, backend = MODELS["GREEN"], made.models.get("backend", "")
        own = backend.startswith(f"{model.pinned}:") or record.asked(made) in {
            n.casefold() for n in (model.repo_id, *model.names)}
        judge = [] if own else [f"GREEN by {backend or 'an unnamed backend'}, the published by {model.repo_id}"]
        return judge + record.settings(made, Green.published, {"quoted": record.QUOTED.format(title="GREEN")})
