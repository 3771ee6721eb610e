"""One contract for every metric rexrank computes (issue 32, item 3: one tester for all, as torchmetrics has).

Each metric in CASES is checked for: per-study scores within its declared bounds; its declared empty-prediction score;
its signature's round trip; its features/score split; the same per-study values whatever the batch, chunk and order;
non-ASCII text, and NFC against NFD; and its cache. Adding a metric is adding its case to CASES, nothing else
(`test_every_metric_is_listed` fails until it is there). What a case's metric genuinely lacks is skipped with the
reason written in the case (`skips`), never silently.

Models are the tiny random ones of tests/fixtures/tiny_models.py (the session fixtures of conftest.py). The LLM-judged
metrics ask the loopback OpenAI server of tests/fakeopenai.py, whose replies are computed from the reports quoted in
the prompt (their sentences compared), so each metric's own prompt building, reply reading and arithmetic run as they
do in a real run. Every report here is synthetic, written for this file.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rexrank.cache import FeatureCache
from rexrank.hf_metric import compute
from rexrank.llm import Judge
from rexrank.official import departures
from rexrank.radrbench import answers
from rexrank.rules.contents import BOUND_SLACK
from rexrank.scorers import AGGREGATED, COMPOSITES, JUDGED, METRICS, SCORERS, Composite, Judged, Scorer, spec
from rexrank.scorers import radrscore as radr
from rexrank.scorers.bertscore import BASELINE, rescale
from rexrank.scorers.coco import r2gen_clean, rouge_l_pair
from rexrank.scorers.fineradscore import FineRadScore, split_lines
from rexrank.scorers.green import Green
from rexrank.scorers.label_f1 import LabelF1, masks
from rexrank.scorers.radcliq import COMPONENTS
from rexrank.scorers.ratescore import near_tie
from rexrank.signature import Signature

# --- synthetic reports (no real report text) ---

REFERENCES = [
    "Heart size is normal. The lungs are clear. No pleural effusion or pneumothorax.",
    "Moderate cardiomegaly with mild pulmonary edema. Small bilateral pleural effusions.",
    "Left lower lobe opacity, possibly atelectasis or early pneumonia. No pneumothorax.",
    "Endotracheal tube tip 5 cm above the carina. Right PICC line ends in the low SVC.",
    "Stable 8 mm nodule in the right upper lobe. Degenerative changes of the thoracic spine.",
    "No acute cardiopulmonary process.",
    "Heart size is normal. The lungs are clear. No pleural effusion or pneumothorax.",  # a repeated reference
]
PREDICTIONS = [
    "Heart size is normal. The lungs are clear. No pleural effusion or pneumothorax.",  # the reference itself
    "Mild cardiomegaly. Small left pleural effusion. No pulmonary edema.",
    "Left lower lobe atelectasis. No pneumothorax.",
    "Endotracheal tube tip 5 cm above the carina.",
    "No acute cardiopulmonary process.",  # another study's reference
    "NO ACUTE CARDIOPULMONARY PROCESS.",
    "Heart size is normal.\nThe lungs  are clear.",  # a line break and a double space
]
# Non-ASCII text: accents, the micro sign, an ellipsis, curly quotes, CJK, emoji (one with a skin-tone modifier),
# zero-width spaces, full-width letters, a ligature and a no-break space.
UNICODE = [
    "Café-au-lait spots over the chest wall; naïve reader — no pleural effusion.",
    "Rétrocardiac opacité. Müller manoeuvre négatif. Heart size is normal.",
    "A 5 µm calcified granuloma… “likely benign”, ‘stable’.",
    "右肺下叶小结节 (small nodule in the right lower lobe). 心影正常.",
    "Heart size normal 👍🏽 lungs clear 🫁 no effusion ✅.",
    "No pneu\u200bmo\u200bthorax. Heart\u200b size is normal.\u200b",
    "Ｆｕｌｌ-width ＣＴ; ligature ﬁbrosis; no-break\u00a0space.",
]
UNICODE_PAIRS = ([*UNICODE, *UNICODE, *UNICODE[:3]],
                 [*UNICODE, *UNICODE[::-1], *REFERENCES[:3]])
# Text that NFC and NFD write differently (precomposed é, ü, ï against a letter and a combining mark).
DECOMPOSABLE = [t for t in UNICODE if unicodedata.normalize("NFD", t) != t]


def nfc(texts: Sequence[str]) -> list[str]:
    return [unicodedata.normalize("NFC", t) for t in texts]


def nfd(texts: Sequence[str]) -> list[str]:
    return [unicodedata.normalize("NFD", t) for t in texts]


# What a metric does with the same text in NFC and in NFD (no metric's documentation says; these are what the code
# does, asserted so that a change is seen).
SAME = "same"  # a study scores the same whichever form either side is in
DIFFERS = "differs"  # the two forms are other text to the metric: an NFD prediction of an NFC reference scores lower
AS_WRITTEN = "as written"  # handed to the judge byte for byte: the judge decides

# --- the loopback judge: replies computed from the reports quoted in each prompt ---


def sentences(text: str) -> list[str]:
    return [s.strip().rstrip(".").casefold() for s in re.split(r"(?<=\.)\s+|\n", text) if s.strip(" .")]


def between(text: str, start: str, end: str | None) -> str:
    rest = text.split(start, 1)[1]
    return rest if end is None else rest.split(end, 1)[0]


GREEN_LINES = ["False report of a finding in the candidate", "Missing a finding present in the reference",
               "Misidentification of a finding's anatomic location/position",
               "Misassessment of the severity of a finding", "Mentioning a comparison that isn't in the reference",
               "Omitting a comparison detailing a change from a prior study"]


def green_reply(prompt: str) -> str:
    """GREEN's answer format: matched = candidate sentences found in the reference, (a) = the others, (b) = the
    reference's sentences missing from the candidate."""
    reference = set(sentences(between(prompt, "2. Reference Report:\n    ", "\n\n    3. Candidate Report:")))
    candidate = set(sentences(between(prompt, "3. Candidate Report:\n    ", "\n\n    4. Reporting Your Assessment")))
    significant = [len(candidate - reference), len(reference - candidate), 0, 0, 0, 0]

    def section(counts):
        return "\n".join(f"({k}) {line}: {n}." + (" Some; others" if n else "")
                         for k, line, n in zip("abcdef", GREEN_LINES, counts))
    return (f"[Explanation]:\nCompared sentence by sentence.\n\n[Clinically Significant Errors]:\n"
            f"{section(significant)}\n\n[Clinically Insignificant Errors]:\n{section([0] * 6)}\n\n[Matched Findings]:\n"
            f"{len(candidate & reference)}. The shared sentences.")


def fineradscore_reply(prompt: str) -> str:
    """A correction for each candidate line the reference lacks (urgent if it names a pleural or tube finding, else
    not actionable) and one inserted line when a reference sentence is missing."""
    numbered = between(prompt, "Generated Text: ", " \n \n Ground Truth Text: ")
    reference = sentences(between(prompt, " \n \n Ground Truth Text: ", None))
    lines = re.findall(r"\[(\d+)\] (.*?)(?= \[\d+\] |\Z)", numbered, re.DOTALL)

    def entry(severity):
        return {"corrections": "[delete]", "clinical severity": severity, "comments": "",
                "error category": ["False prediction of finding"]}
    out = {i: entry("Urgent error" if re.search("pleura|thorax|tube", line, re.IGNORECASE) else "Not actionable")
           for i, line in lines if sentences(line)[0] not in reference}
    if set(reference) - {s for _, line in lines for s in sentences(line)}:
        out["None"] = entry("Actionable nonurgent error")
    return json.dumps(out, ensure_ascii=False)


# The fake judge answers from several threads, and CPython 3.11 builds ast objects with one recursion counter per
# interpreter: two literal_evals at once can raise "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905), which killed a reply in CI. One at a time.
_AST_LOCK = threading.Lock()


def radrscore_reply(prompt: str) -> str:
    """The five RadRScore calls: observations = sentences; recalled, correct and effective by sentence match."""
    def observations(rendered: str) -> list[str]:
        with _AST_LOCK:
            parsed = ast.literal_eval(rendered)
        return [o["observation"] for o in parsed["key_conclusion"]]

    if "1. Ground Truth Report: " in prompt:  # factuality
        report = between(prompt, "1. Ground Truth Report: ", "\n            2. Reasoning Steps: ")
        predicted = observations(between(prompt, "2. Reasoning Steps: ", "\n"))
        return json.dumps({"correct_steps": [], "correct_count": sum(o in sentences(report) for o in predicted)})
    if "1. Ground Truth: " in prompt:  # completeness
        reference = observations(between(prompt, "1. Ground Truth: ", "\n"))
        predicted = observations(between(prompt, "2. Model Output: ", "\n"))
        return json.dumps({"recalled_count": len(set(reference) & set(predicted))})
    if "2. Model Prediction: " in prompt:  # effectiveness
        steps = sentences(between(prompt, "1. Reasoning Steps: ", "\n            2. Model Prediction: "))
        predicted = sentences(between(prompt, "2. Model Prediction: ", "\n            \n            # Goal"))
        effective = sum(s in steps for s in predicted)
        return json.dumps({"effective_steps": [], "effective_count": effective,
                           "ineffective_count": len(predicted) - effective})
    found = sentences(between(prompt, "1. Reason Steps: ", "\n\n            # Goal"))  # extraction
    return "```json\n" + json.dumps({"key_conclusion": [{"observation": s, "status": "as written"} for s in found]},
                                    ensure_ascii=False) + "\n```"


# --- the context a case runs in ---


@pytest.fixture(scope="module")
def tiny_models(tiny_roberta, tiny_bert_base, tiny_chexbert, tiny_radgraph, tiny_rate_ner, tiny_biolord):
    """Every model at its tiny local copy and no feature cache (a check that wants one opens its own), for the
    module; what it yields keeps the scorers built, one per class and batch size (`Context.scorer`): models load
    once."""
    with pytest.MonkeyPatch.context() as patch:
        for key, path in {"BERTSCORE": tiny_roberta, "BERT_BASE_UNCASED": tiny_bert_base, "CHEXBERT": tiny_chexbert,
                          "RADGRAPH": tiny_radgraph, "RATE_NER": tiny_rate_ner, "BIOLORD": tiny_biolord}.items():
            patch.setenv(f"REXRANK_MODEL_{key}", str(path))
        patch.setenv("REXRANK_CACHE", "off")
        yield {}


@dataclass
class Context:
    request: pytest.FixtureRequest
    monkeypatch: pytest.MonkeyPatch
    tmp_path: Path
    built: dict

    def scorer(self, cls: type[Scorer], batch: int = 8, **settings) -> Scorer:
        key = (cls.name, batch, tuple(sorted(settings.items())))
        if key not in self.built:
            self.built[key] = cls(progress=False, batch_size=batch, **settings)
        return self.built[key]

    @cached_property
    def fake(self):
        return self.request.getfixturevalue("fake_openai")

    def judge(self, replies: Callable[[str], str], *, cache: Path | bool = False, concurrency: int = 8,
              **settings) -> Judge:
        def answer(prompt: str) -> str:  # a prompt the script cannot read gets an unreadable reply, not a dead server
            try:
                return replies(prompt)
            except (IndexError, KeyError, ValueError, SyntaxError) as err:
                return f"UNSCRIPTED PROMPT ({err!r})"

        self.fake.replies = answer
        return Judge(base_url=self.fake.url, model=self.fake.model, cache=cache, concurrency=concurrency,
                     progress=False, backoff_base=0.0, max_retries=0, timeout=10.0, **settings)


@pytest.fixture
def ctx(request, monkeypatch, tmp_path, tiny_models) -> Context:
    return Context(request, monkeypatch, tmp_path, tiny_models)


def scorecard_column(name: str, predictions, references, chunk: int, judge: dict | None = None) -> np.ndarray:
    """The per-study column `rexrank score` writes, its studies scored `chunk` at a time."""
    from rexrank.scorecard import MetricSet, score

    rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(len(predictions))], "prediction": list(predictions),
                         "reference": list(references)})
    card = score(rows, MetricSet([name], progress=False, batch_size=8, chunk=chunk, judge=judge), resamples=20)
    assert name in card.metrics, card.skipped
    return card.per_study[name].to_numpy(dtype=np.float64)


# --- the cases: one per metric ---


@dataclass
class Case:
    """A metric as the contract sees it: per-study scores of (prediction, reference) pairs, and what it declares."""

    name: str
    tolerance: float  # how far per-study values may move with the batch, chunk or order; 0: exactly equal
    why: str  # why that tolerance
    nfd: str  # SAME, DIFFERS or AS_WRITTEN
    nfd_why: str
    skips: dict[str, str] = field(default_factory=dict)  # check -> why this metric has nothing to check
    variant: dict | None = None  # a setting that changes the number, so must change the point key
    bounds: tuple[float, float] = (-math.inf, math.inf)  # the metric's own, where it declares them
    empty_words: str = ""  # what the metric says an empty prediction scores

    def scores(self, ctx: Context, predictions, references, batch: int = 8) -> np.ndarray:
        """Per-study values, end to end; `batch`: the model batch size or the judge's concurrency."""
        raise NotImplementedError

    def signature(self, ctx: Context, batch: int = 8, **settings) -> Signature:
        raise NotImplementedError

    def expected_empty(self, ctx: Context, references) -> np.ndarray:
        """What an empty prediction scores against each reference, by the metric's own words."""
        raise NotImplementedError

    def split(self, ctx: Context, predictions, references) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scored from features computed ahead, scored end to end, the pairs the two must agree on)."""
        raise NotImplementedError

    def entry_points(self, ctx: Context, predictions, references) -> dict[str, np.ndarray]:
        """The per-study values through each public way in (the `evaluate` module's `compute`, `rexrank score`)."""
        raise NotImplementedError

    def twice_cached(self, ctx: Context, predictions, references) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(without the cache, a first run filling it, a second run that must only read it)."""
        raise NotImplementedError

    def sent(self, ctx: Context) -> list[str]:
        """What reached the judge (AS_WRITTEN metrics)."""
        return [json.dumps(body["messages"], ensure_ascii=False) for body in ctx.fake.requests]


@dataclass
class ScorerCase(Case):
    """A per-text scorer of the registry (`Scorer`: features per distinct text, then per-pair math)."""

    cls: type[Scorer] = None
    empty_rule: Callable[[ScorerCase, Context, list[str]], np.ndarray] | None = None
    split_exempt: Callable | None = None  # (candidate, reference features) -> whether `features` alone may differ
    split_exempt_why: str = ""

    def __post_init__(self):
        self.bounds, self.empty_words = self.cls.bounds, self.cls.empty_prediction

    def scores(self, ctx, predictions, references, batch=8):
        return np.asarray(ctx.scorer(self.cls, batch)(list(predictions), list(references)), dtype=np.float64)

    def signature(self, ctx, batch=8, **settings):  # a new scorer each time (weights are loaded only when used)
        return self.cls(progress=False, batch_size=batch, **settings).signature()

    def expected_empty(self, ctx, references):
        return self.empty_rule(self, ctx, list(references))

    def split(self, ctx, predictions, references):
        scorer = ctx.scorer(self.cls)
        candidates, refs = scorer.features(list(predictions)), scorer.features(list(references))  # two calls
        ahead = np.asarray(scorer.score(candidates, refs), dtype=np.float64)
        end_to_end = self.scores(ctx, predictions, references)
        agree = np.ones(len(ahead), dtype=bool)
        if self.split_exempt:
            agree = ~np.array([self.split_exempt(c, r) for c, r in zip(candidates, refs)], dtype=bool)
            assert scorer.rescored == (~agree).sum(), f"the pairs left out are not those that {self.split_exempt_why}"
        return ahead, end_to_end, agree

    def entry_points(self, ctx, predictions, references):
        module = compute(self.name, list(predictions), list(references), batch_size=8)
        return {"compute": np.array(module[f"{self.name}_per_sample"], dtype=np.float64),
                "rexrank score, chunks of 2": scorecard_column(self.name, predictions, references, chunk=2)}

    def twice_cached(self, ctx, predictions, references):
        scorer = ctx.scorer(self.cls)
        uncached = self.scores(ctx, predictions, references)
        if not self.cls.cacheable:  # as a composite's component: nothing to read back
            return uncached, uncached, uncached
        path = ctx.tmp_path / "features.sqlite"
        ctx.monkeypatch.setattr(scorer, "cache", FeatureCache(path))
        first = self.scores(ctx, predictions, references)
        assert scorer.cache.misses == len(set(predictions) | set(references)) and scorer.cache.hits == 0

        def recomputed(texts):
            raise AssertionError(f"{self.name} computed features again for {len(texts)} cached texts")

        ctx.monkeypatch.setattr(scorer, "cache", FeatureCache(path))
        ctx.monkeypatch.setattr(scorer, "features", recomputed)
        second = self.scores(ctx, predictions, references)
        assert scorer.cache.hits == len(set(predictions) | set(references)) and scorer.cache.misses == 0
        return uncached, first, second


@dataclass
class SufficientCase(ScorerCase):
    """A per-text scorer whose studies give sufficient statistics (corpus BLEU-4's counts), not scores: its per-study
    value here is each study's own statistic (the statistic of its row, as LabelF1Case's)."""

    def own(self, counts) -> np.ndarray:
        from rexrank.stats import AGGREGATES

        return AGGREGATES[spec(self.name).statistic](np.asarray(counts, dtype=np.float64))

    def scores(self, ctx, predictions, references, batch=8):
        return self.own(super().scores(ctx, predictions, references, batch))

    def split(self, ctx, predictions, references):
        scorer = ctx.scorer(self.cls)
        ahead = scorer.score(scorer.features(list(predictions)), scorer.features(list(references)))
        return self.own(ahead), self.scores(ctx, predictions, references), np.ones(len(ahead), dtype=bool)

    def entry_points(self, ctx, predictions, references):
        from rexrank.scorecard import MetricSet, score

        module = compute(self.name, list(predictions), list(references), resamples=20)
        rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(len(predictions))], "prediction": list(predictions),
                             "reference": list(references)})
        card = score(rows, MetricSet([self.name], progress=False, chunk=2), resamples=20)
        return {"compute's per_sample": self.own(spec(self.name).table(module["per_sample"])),
                "rexrank score's sufficient statistics, chunks of 2": self.own(spec(self.name).table(card.per_study))}


@dataclass
class CompositeCase(Case):
    """A composite of per-text scorers' columns; each component's case is in CASES."""

    composite: Composite = None

    def __post_init__(self):
        self.bounds, self.empty_words = self.composite.bounds, self.composite.empty_prediction

    @property
    def components(self) -> dict[str, ScorerCase]:
        return {name: BY_NAME[name] for name in self.composite.needs}

    def columns(self, how: Callable[[ScorerCase], np.ndarray]) -> np.ndarray:
        return self.composite.combine({name: how(case) for name, case in self.components.items()})

    def scores(self, ctx, predictions, references, batch=8):
        return self.columns(lambda case: case.scores(ctx, predictions, references, batch))

    def signature(self, ctx, batch=8, **settings):
        return self.composite.signature([case.signature(ctx, batch, **settings.get(name, {}))
                                         for name, case in self.components.items()])

    def expected_empty(self, ctx, references):
        return self.columns(lambda case: case.expected_empty(ctx, references))

    def split(self, ctx, predictions, references):  # the components' columns, made ahead, combined
        ahead = self.columns(lambda case: case.split(ctx, predictions, references)[0])
        module = compute(self.name, list(predictions), list(references), batch_size=8, resamples=20)
        return ahead, np.array(module[f"{self.name}_per_sample"], dtype=np.float64), np.ones(len(ahead), dtype=bool)

    def entry_points(self, ctx, predictions, references):
        return {"rexrank score, chunks of 2": scorecard_column(self.name, predictions, references, chunk=2)}

    def twice_cached(self, ctx, predictions, references):
        runs = [case.twice_cached(ctx, predictions, references) for case in self.components.values()]
        return tuple(self.composite.combine(dict(zip(self.composite.needs, column))) for column in zip(*runs))


@dataclass
class LabelF1Case(Case):
    """A CheXbert label F1: a statistic of summed per-study TP/FP/FN, not a mean of scores. Its per-study value here
    is each study's own F1 (the statistic of its row of sufficient statistics), made from SembScore's features."""

    metric: LabelF1 = None

    def __post_init__(self):
        self.bounds, self.empty_words = self.metric.bounds, self.metric.empty_prediction

    def own(self, columns) -> np.ndarray:
        from rexrank.stats import AGGREGATES

        return AGGREGATES[self.metric.statistic](self.metric.table(columns))  # each row's sums are its own counts

    def of_features(self, candidates, references) -> np.ndarray:
        return self.own(masks([f[1] for f in candidates], [f[1] for f in references]))

    def scores(self, ctx, predictions, references, batch=8):
        scorer = ctx.scorer(SCORERS["semb_score"], batch)
        return self.of_features(*scorer.paired_features(list(predictions), list(references)))

    def signature(self, ctx, batch=8, **settings):
        return self.metric.signature([SEMB.signature(ctx, batch, **settings)])

    def expected_empty(self, ctx, references):  # "the labels of [CLS][SEP]": what any blank report gets
        return self.scores(ctx, [" \n\t "] * len(references), references)

    def split(self, ctx, predictions, references):
        scorer = ctx.scorer(SCORERS["semb_score"])
        ahead = self.of_features(scorer.features(list(predictions)), scorer.features(list(references)))
        return ahead, self.scores(ctx, predictions, references), np.ones(len(ahead), dtype=bool)

    def entry_points(self, ctx, predictions, references):
        from rexrank.scorecard import MetricSet, score

        rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(len(predictions))], "prediction": list(predictions),
                             "reference": list(references)})
        card = score(rows, MetricSet([self.name], progress=False, batch_size=8, chunk=2), resamples=20)
        assert self.name in card.metrics, card.skipped
        return {"rexrank score's sufficient statistics, chunks of 2": self.own(card.per_study)}


@dataclass
class JudgedCase(Case):
    """An LLM-judged metric of the registry, through the judge client on the loopback server."""

    cls: type[Judged] = None
    replies: Callable[[str], str] = None
    make: Callable[[Judge, dict], Judged] = None  # the metric, given its judge and its own settings
    compute_key: str = "judge"  # the name `compute` takes the judge under
    empty_rule: Callable | None = None

    def __post_init__(self):
        self.bounds, self.empty_words = self.cls.bounds, self.cls.empty_prediction

    def metric(self, ctx, concurrency=8, cache: Path | bool = False, judge_settings=None, **settings) -> Judged:
        return self.make(ctx.judge(self.replies, concurrency=concurrency, cache=cache, **(judge_settings or {})),
                         settings)

    def scores(self, ctx, predictions, references, batch=8, cache: Path | bool = False):
        values, _, extras = self.metric(ctx, batch, cache).run(list(predictions), list(references), None)
        assert extras[self.name]["judged"] == len(predictions), extras  # every answer read: no study at its worst
        return values

    def signature(self, ctx, batch=8, **settings):
        return self.metric(ctx, batch, **settings).signature()

    def expected_empty(self, ctx, references):
        return self.empty_rule(ctx, list(references))

    def entry_points(self, ctx, predictions, references):
        judge = ctx.judge(self.replies)
        module = compute(self.name, list(predictions), list(references), **{self.compute_key: judge})
        options = {"judge_url": ctx.fake.url, "judge_model": ctx.fake.model}
        return {"compute": np.array(module[f"{self.name}_per_sample"], dtype=np.float64),
                "rexrank score": scorecard_column(self.name, predictions, references, chunk=2, judge=options)}

    def twice_cached(self, ctx, predictions, references):
        uncached = self.scores(ctx, predictions, references)
        path = ctx.tmp_path / "replies.sqlite"
        first = self.scores(ctx, predictions, references, cache=path)
        calls = ctx.fake.calls
        ctx.fake.fail_after = 0  # a request now would be answered 500: the second run must not ask
        second = self.scores(ctx, predictions, references, cache=path)
        assert ctx.fake.calls == calls, f"{ctx.fake.calls - calls} calls on a rerun"
        return uncached, first, second


@dataclass
class RadRScoreCase(Case):
    """RadRScore (rexrank.scorers.radrscore): not a `Judged` class; its items are (model output, reference reasoning
    steps, original report). Here the reference report is both the steps and the report."""

    replies: Callable[[str], str] = None

    def run(self, ctx, predictions, references, concurrency=8, cache: Path | bool = False, **judge_settings):
        judge = ctx.judge(self.replies, concurrency=concurrency, cache=cache, **judge_settings)
        return radr.radrscore(list(predictions), list(references), list(references), judge)

    def scores(self, ctx, predictions, references, batch=8, cache: Path | bool = False):
        result = self.run(ctx, predictions, references, batch, cache)
        assert result.judged == len(predictions), result.messages  # every reply read: no item at its worst
        return np.array(result.board_scores, dtype=np.float64)

    def signature(self, ctx, batch=8, **settings):
        return radr.signature(ctx.judge(self.replies, concurrency=batch, **settings))

    def expected_empty(self, ctx, references):
        return np.zeros(len(references))  # nothing extracted: every ratio's numerator is 0

    def entry_points(self, ctx, predictions, references):
        module = compute("radrscore", list(predictions), list(references), reports=list(references),
                         judge=ctx.judge(self.replies))
        return {"compute": np.array(module["radrscore_per_sample"], dtype=np.float64)}

    twice_cached = JudgedCase.twice_cached


@dataclass
class AccuracyCase(Case):
    """RadRBench-CXR answer accuracy (rexrank.radrbench.answers): here the free-text task (`multi_no_option`, no
    options), the prediction inside the model's <answer> tags and the reference report as the reference answer."""

    @staticmethod
    def outputs(predictions) -> list[str]:
        return [f"<think>Reading the film.</think><answer>{p}</answer>" if p else p for p in predictions]

    def scores(self, ctx, predictions, references, batch=8):
        result = answers.accuracy(self.outputs(predictions), list(references), [None] * len(references),
                                  answers.MULTI_NO_OPTION)
        return np.array(result.correct, dtype=np.float64)

    def signature(self, ctx, batch=8, **settings):
        return answers.signature()

    def expected_empty(self, ctx, references):
        assert answers.parse_answer("", answers.MULTI_NO_OPTION).failure == answers.EMPTY_OUTPUT
        return np.zeros(len(references))  # an unreadable answer is wrong

    def split(self, ctx, predictions, references):  # each answer and each reference parsed on its own, then compared
        task = answers.MULTI_NO_OPTION
        parsed = [answers.parse_answer(o, task).value for o in self.outputs(predictions)]
        gold = [answers.parse_reference(a, task) for a in references]
        ahead = np.array([p == g for p, g in zip(parsed, gold)], dtype=np.float64)
        return ahead, self.scores(ctx, predictions, references), np.ones(len(ahead), dtype=bool)

    def entry_points(self, ctx, predictions, references):
        from rexrank.radrbench.score import score_outputs

        n = len(predictions)
        items = pd.DataFrame({"config": ["mimic_multi_test_no_option"] * n, "item_id": [f"q{i}" for i in range(n)],
                              "source": ["synthetic"] * n, "task": [answers.MULTI_NO_OPTION] * n,
                              "answer": list(references), "question": [None] * n})
        outputs = dict(zip(zip(items["config"], items["item_id"]), self.outputs(predictions)))
        scored = score_outputs(items, outputs, resamples=20)
        return {"radrbench score_outputs": scored.per_item["correct"].to_numpy(dtype=np.float64)}


# --- each metric's empty-prediction rule, from its words (`empty_prediction`) ---


def empty_is(value: float) -> Callable:
    return lambda case, ctx, references: np.full(len(references), value)


def bleu4_empty(case, ctx, references):
    """"no n-gram, its reference's length added (under r2gen it is " .", one token)": the one token "." matches the
    end every cleaned reference has; no 2-, 3- or 4-gram."""
    return case.own([[1, 0, 0, 0, 1, 0, 0, 0, 1, len(r2gen_clean(r).split())] for r in references])


def semb_empty(case, ctx, references):
    """"cosine with the embedding of [CLS][SEP] (a fixed vector), not 0": what a blank report gets, whatever its
    whitespace; not 0 against these references."""
    blank = case.scores(ctx, [" \n\t "] * len(references), references)
    assert np.all(blank != 0)
    return blank


def radgraph_empty(case, ctx, references):
    """"the graph of the single word None (what the reference substitutes)"."""
    return case.scores(ctx, ["None"] * len(references), references)


def green_empty(ctx, references):
    """"judged as written": the empty candidate goes into the prompt as it is, and matches nothing."""
    prompts = ctx.fake.prompts()[-len(references):]
    assert all("3. Candidate Report:\n    \n\n    4. Reporting" in p for p in prompts)
    return np.zeros(len(references))


def fineradscore_empty(ctx, references):
    """"no line to correct, so only inserted lines": no numbered line reaches the judge; the judge here inserts a line
    as an actionable nonurgent error (2)."""
    assert split_lines("") == []
    assert all(re.search(r"Generated Text:  \n", p) for p in ctx.fake.prompts()[-len(references):])
    return np.full(len(references), 2.0)


# The tolerances, reasoned. A model metric's features are float32 states of a transformer. Another batch (its
# padding, its size, which texts share it) gives the matrix products other shapes, and the CPU's BLAS picks its
# blocking by shape, so each sum of K float32 products is added in another order: it moves by at most about
# (K - 1) * 2^-24 of the sum of the products' magnitudes, and LayerNorm brings every layer back to unit scale
# (tests/scorers/test_ratescore.py `float32_bound` adds this up layer by layer). On these tiny models that is ~1e-7 on
# a cosine, before what the metric does with it.
FLOAT32 = ("float32 states: another batch shape takes another BLAS blocking, each sum of K products adds in another "
           "order (<= K 2^-24 relative)")

BLEU = ScorerCase(
    name="bleu2", cls=SCORERS["bleu2"], tolerance=0.0, why="counts of tokens; the same float operations per pair",
    nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
    empty_rule=empty_is(0.0),
    skips={"cache": "not cacheable (cacheable = False): its features are token counts, cheaper to count again",
           "variant": "no setting: its tokenisation and smoothing are fixed"})
BERTSCORE = ScorerCase(
    name="bertscore", cls=SCORERS["bertscore"], tolerance=2e-6,
    why=f"{FLOAT32}; cosines summed in float64 from them; the rescale divides by 1 - b (x6.5)",
    nfd=DIFFERS, nfd_why="RoBERTa's byte-level BPE has no normalizer: NFD is other bytes, other tokens",
    empty_rule=empty_is(rescale(0.0, BASELINE["F"])), variant={"idf": True})
SEMB = ScorerCase(
    name="semb_score", cls=SCORERS["semb_score"], tolerance=1e-6, why=f"{FLOAT32}; the cosine in float64",
    nfd=SAME, nfd_why="bert-base-uncased's normalizer lower-cases and strips accents (NFD, marks dropped) first",
    empty_rule=semb_empty, variant={"dtype": "bf16"})
RADGRAPH = ScorerCase(
    name="radgraph", cls=SCORERS["radgraph"], tolerance=0.0,
    why="graphs are argmax labels (no near tie in these texts) and F1 is set counts",
    nfd=DIFFERS, nfd_why="the model reads accent-stripped wordpieces, but entities are matched by the report's own "
    "tokens, which keep the form they were written in",
    empty_rule=radgraph_empty, variant={"dtype": "bf16"})
RATESCORE = ScorerCase(
    name="ratescore", cls=SCORERS["ratescore"], tolerance=1e-4,
    why=f"{FLOAT32}: ~3e-5 on an entity vector of the tiny 2-layer encoders (test_ratescore.float32_bound), twice, "
    "one per direction; near ties between types are given per-report vectors, the same bits in every batch",
    nfd=DIFFERS, nfd_why="its sentence splitter (rexrank.ratescore_sentences) ends no sentence at a period after a "
    "combining mark, so 'opacite\u0301. Mu\u0308ller' is one sentence in NFD and two in NFC; NER (NFKC) and BioLORD "
    "(accents stripped) would see the same text",
    empty_rule=empty_is(0.5), variant={"weights": "short"},
    split_exempt=lambda c, r: near_tie((c[2], c[1].tolist()), (r[2], r[1].tolist())),
    split_exempt_why="`paired_features` gives per-report vectors (the reference's bits): a best match within "
    "NEAR_TIE of another type's, where `features` alone may pick the other weight")


BLEU4 = SufficientCase(
    name="bleu4", cls=SCORERS["bleu4"], tolerance=0.0, why="counts of n-grams; the same float operations per study",
    nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
    empty_rule=bleu4_empty, variant={"tokenize": "none"},
    skips={"cache": "not cacheable (cacheable = False): its features are n-gram counts, cheaper to count again"})
ROUGE_L = ScorerCase(
    name="rouge_l", cls=SCORERS["rouge_l"], tolerance=0.0, why="an LCS of tokens; the same float operations per pair",
    nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
    # "under r2gen it is ' .'": the tokens '' and '.', the second matching the end of the cleaned reference
    empty_rule=lambda case, ctx, references: np.array([rouge_l_pair(["", "."], r2gen_clean(r).split(" "))
                                                       for r in references]),
    variant={"tokenize": "none"},
    skips={"cache": "not cacheable (cacheable = False): its features are tokens, cheaper to split again"})


def composite_case(name: str) -> CompositeCase:
    weights = np.abs(COMPOSITES[name].model.weights)
    tolerance = float(sum(w * BY_NAME[c].tolerance for w, c in zip(weights, COMPONENTS)))
    return CompositeCase(
        name=name, composite=COMPOSITES[name], tolerance=tolerance,
        why="its components' tolerances through its linear weights (sum |coef / scale| x tolerance)",
        nfd=DIFFERS, nfd_why="its components BLEU-2, BERTScore and RadGraph differ",
        variant={"bertscore": {"idf": True}})


GREEN = JudgedCase(
    name="green", cls=Green, replies=green_reply, make=lambda judge, settings: Green(judge), compute_key="backend",
    tolerance=0.0, why="counts read from the judge's answers; the loopback judge answers each prompt the same",
    nfd=AS_WRITTEN, nfd_why="'judged as written': the reports go into the prompt unnormalised",
    empty_rule=green_empty, variant={"judge_settings": {"max_tokens": 512}},
    skips={"split": "no features: the judge reads each pair, reference and candidate together"})
FINERADSCORE = JudgedCase(
    name="fineradscore", cls=FineRadScore, replies=fineradscore_reply,
    make=lambda judge, settings: FineRadScore(judge, **settings), tolerance=0.0,
    why="severities read from the judge's answers; the loopback judge answers each prompt the same",
    nfd=AS_WRITTEN, nfd_why="'judged as written': the candidate's lines and the reference go into the prompt as given",
    empty_rule=fineradscore_empty, variant={"how": "sum"},
    skips={"split": "no features: the judge reads each pair, reference and candidate together"})
RADRSCORE = RadRScoreCase(
    name="radrscore", replies=radrscore_reply, tolerance=0.0, bounds=(0.0, math.inf),
    empty_words="(none declared: RadRScore has no class; its docstring: an item counts 0 in each component when "
                "unread, and each ratio is 0 when its denominator is)",
    why="counts read from the judge's answers; the loopback judge answers each prompt the same",
    nfd=AS_WRITTEN, nfd_why="the output, steps and report go into the prompts as given",
    variant={"temperature": 0.5},
    skips={"split": "no features: the judge reads each item's texts together",
           "chunk": "not a `rexrank score` metric: RadRBench scores every item in one call (compute checked)"})
ACCURACY = AccuracyCase(
    name="radrbench-accuracy", tolerance=0.0, why="exact parsing and set comparison", bounds=(0.0, 1.0),
    empty_words="(none declared: accuracy has no class; its docstring: an empty output is `empty_output`, wrong)",
    nfd=DIFFERS, nfd_why="answers are compared case-folded, not normalised: an NFD finding is another finding",
    skips={"cache": "nothing to cache: it parses text", "variant": "no setting: one parser",
           "chunk": "not a `rexrank score` metric: radrbench scores every item in one call (score_outputs checked)"})


def label_f1_case(name: str) -> LabelF1Case:
    return LabelF1Case(
        name=name, metric=AGGREGATED[name], tolerance=0.0,
        why="counts of CheXbert labels, argmax classes (no near tie in these texts)",
        nfd=SAME, nfd_why="CheXbert reads bert-base-uncased wordpieces, whose normalizer strips accents (NFD) first",
        variant={"dtype": "bf16"},
        skips={"cache": "no features of its own: they are SembScore's, whose case checks their cache"})


LABEL_F1_CASES = [label_f1_case(name) for name in AGGREGATED]
BY_NAME: dict[str, Case] = {c.name: c for c in (BLEU, BERTSCORE, SEMB, RADGRAPH, RATESCORE)}
# Every metric rexrank computes: the one list. A new metric is a new line here.
CASES: list[Case] = [BLEU, BERTSCORE, SEMB, RADGRAPH, RATESCORE, BLEU4, ROUGE_L, composite_case("radcliq_v1"),
                     composite_case("radcliq_v0"), *LABEL_F1_CASES, GREEN, FINERADSCORE, RADRSCORE, ACCURACY]
BY_NAME |= {c.name: c for c in CASES}


# The checks, by the name a case's `skips` gives them.
CHECKS = ("bounds", "empty", "signature", "variant", "split", "batch", "chunk", "unicode", "nfd", "cache")


def cases(check: str):
    """CASES as parameters; a case that has nothing to `check` is marked skipped with its reason."""
    assert check in CHECKS
    return [pytest.param(c, id=c.name, marks=[pytest.mark.skip(reason=f"{c.name}: {c.skips[check]}")]
                         if check in c.skips else []) for c in CASES]


def assert_close(got, expected, tolerance: float, what: str):
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, what
    if tolerance == 0:
        assert got.tolist() == expected.tolist(), f"{what}: {got.tolist()} != {expected.tolist()}"
    else:
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance, err_msg=what)


def assert_within(values, bounds, what: str):
    """Within the bounds give or take the submission check's BOUND_SLACK (a cosine of identical float32 vectors,
    computed in float64, may come out 1 + 2^-52)."""
    values = np.asarray(values, dtype=np.float64)
    low, high = bounds
    assert np.isfinite(values).all(), f"{what}: not finite: {values.tolist()}"
    assert ((values >= low - BOUND_SLACK) & (values <= high + BOUND_SLACK)).all(), (
        f"{what}: outside [{low}, {high}]: {values.tolist()}")


# --- the checks ---


def test_every_metric_is_listed():
    """A metric added to the registry fails here until its case is in CASES."""
    listed = {c.name for c in CASES}
    assert len(listed) == len(CASES)
    assert listed == {*SCORERS, *COMPOSITES, *AGGREGATED, *JUDGED, "radrscore", "radrbench-accuracy"}
    for case in CASES:  # each case is the registry's own metric
        if isinstance(case, ScorerCase):
            assert SCORERS[case.name] is case.cls
        elif isinstance(case, CompositeCase):
            assert COMPOSITES[case.name] is case.composite
        elif isinstance(case, LabelF1Case):
            assert AGGREGATED[case.name] is case.metric
        elif isinstance(case, JudgedCase):
            assert JUDGED[case.name] is case.cls and case.cls.name == case.name
        assert case.why and case.nfd in (SAME, DIFFERS, AS_WRITTEN) and case.nfd_why
        assert set(case.skips) <= set(CHECKS) and all(case.skips.values()), case.skips  # each skip says why
        assert (case.variant is None) == ("variant" in case.skips), case.name


@pytest.mark.parametrize("case", cases("bounds"))
def test_per_study_scores_lie_within_the_declared_bounds(case, ctx):
    values = case.scores(ctx, PREDICTIONS, REFERENCES)
    assert len(values) == len(REFERENCES)
    assert_within(values, case.bounds, case.name)
    assert len(set(values.tolist())) > 1, f"{case.name}: every study scored alike, the check proves nothing"


@pytest.mark.parametrize("case", cases("empty"))
def test_the_empty_prediction_scores_what_the_metric_declares(case, ctx):
    references = REFERENCES[:4] + ["None"]
    got = case.scores(ctx, [""] * len(references), references)
    assert_close(got, case.expected_empty(ctx, references), case.tolerance, f"{case.name}: empty prediction")
    assert_within(got, case.bounds, case.name)
    if isinstance(case, ScorerCase) and case.empty_rule.__qualname__.startswith("empty_is"):
        assert f"{got[0]:.4g}" in case.empty_words, (got[0], case.empty_words)  # the words name the number


@pytest.mark.parametrize("case", cases("signature"))
def test_the_signature_round_trips_and_is_the_same_for_the_same_settings(case, ctx):
    signature = case.signature(ctx)
    assert signature.metric == case.name
    parsed = Signature.from_dict(json.loads(json.dumps(signature.to_dict())))  # as result files carry it
    assert parsed == signature and str(parsed) == str(signature) and parsed.point_key == signature.point_key
    # The string form is '|'-separated parts; no part may hold a '|' of its own.
    parts = 1 + len(signature.models) + len(signature.settings) + len(signature.components) + len(signature.packages)
    assert len(str(signature).split("|")) == parts, str(signature)
    assert str(case.signature(ctx)) == str(signature)  # built again with the same settings: signed alike
    # Batch size (a judge's concurrency) never changes the number, so it is not in the key.
    assert case.signature(ctx, batch=1).point_key == signature.point_key


@pytest.mark.parametrize("case", cases("signature"))
def test_every_signed_setting_is_in_the_record_of_how_the_published_figures_were_made(case, ctx):
    """`rexrank.official.departures` compares each signed setting with the metric's `published` record, so a setting
    the record lacks would mark every number of the metric as made otherwise: a new setting needs its record too.
    A per-text scorer's defaults are the published settings wherever the record knows them."""
    from rexrank.reports import text_settings
    from rexrank.scorers import spec

    if case.name not in METRICS:
        pytest.skip(f"{case.name}: not a board metric of the registry, no published figures to depart from")
    signature, published = case.signature(ctx), spec(case.name).published
    assert set(signature.settings) - {"dtype"} <= set(published), (signature.settings, published)
    for component in signature.components:
        assert set(component.settings) <= set(spec(component.metric).published), component
    if isinstance(case, ScorerCase):
        made = dataclasses.replace(signature, settings={**signature.settings, **text_settings("findings")})
        assert [d for d in departures(made) if not d.endswith("the published the pinned weights")] == []  # (tiny ones)
        assert departures(dataclasses.replace(made, settings={**made.settings, "new": "1"})) == [
            *departures(made), f"{case.name} new 1, a setting the published figures' record does not have"]


@pytest.mark.parametrize("case", cases("variant"))
def test_a_setting_that_changes_the_number_changes_the_point_key(case, ctx):
    assert case.signature(ctx, **case.variant).point_key != case.signature(ctx).point_key, case.variant


@pytest.mark.parametrize("case", cases("split"))
def test_scores_from_features_made_ahead_equal_scores_end_to_end(case, ctx):
    ahead, end_to_end, agree = case.split(ctx, PREDICTIONS, REFERENCES)
    assert agree.sum() >= 2, f"{case.name}: too few pairs compared ({agree.sum()})"
    assert_close(ahead[agree], end_to_end[agree], case.tolerance, f"{case.name}: features made ahead")


@pytest.mark.parametrize("case", cases("batch"))
def test_batch_size_and_order_do_not_change_per_study_values(case, ctx):
    whole = case.scores(ctx, PREDICTIONS, REFERENCES, batch=8)
    alone = np.array([case.scores(ctx, [p], [r], batch=1)[0] for p, r in zip(PREDICTIONS, REFERENCES)])
    order = [3, 6, 0, 5, 2, 4, 1]
    shuffled = case.scores(ctx, [PREDICTIONS[i] for i in order], [REFERENCES[i] for i in order], batch=3)
    unshuffled = np.empty_like(shuffled)
    unshuffled[order] = shuffled
    assert_close(alone, whole, case.tolerance, f"{case.name}: one study per call, batches of 1 ({case.why})")
    assert_close(unshuffled, whole, case.tolerance, f"{case.name}: another order, batches of 3 ({case.why})")


@pytest.mark.parametrize("case", cases("chunk"))
def test_every_entry_point_and_chunking_gives_the_same_per_study_values(case, ctx):
    whole = case.scores(ctx, PREDICTIONS, REFERENCES)
    for where, values in case.entry_points(ctx, PREDICTIONS, REFERENCES).items():
        assert_close(values, whole, case.tolerance, f"{case.name}: {where}")


@pytest.mark.parametrize("case", cases("unicode"))
def test_non_ascii_reports_score_within_bounds(case, ctx):
    predictions, references = UNICODE_PAIRS
    values = case.scores(ctx, predictions, references)
    assert len(values) == len(predictions)
    assert_within(values, case.bounds, f"{case.name} on non-ASCII text")


@pytest.mark.parametrize("case", cases("nfd"))
def test_nfc_and_nfd_behave_as_stated(case, ctx):
    """An NFD prediction of its own NFC text, against the NFC prediction of it (see each case's `nfd_why`)."""
    composed = case.scores(ctx, nfc(DECOMPOSABLE), nfc(DECOMPOSABLE))
    mixed = case.scores(ctx, nfd(DECOMPOSABLE), nfc(DECOMPOSABLE))
    assert_within(mixed, case.bounds, f"{case.name} on NFD text")
    if case.nfd == SAME:
        assert_close(mixed, composed, case.tolerance, f"{case.name}: NFD against NFC ({case.nfd_why})")
    elif case.nfd == DIFFERS:
        assert np.any(np.abs(mixed - composed) > max(case.tolerance, 1e-9)), (
            f"{case.name}: NFD now scores as NFC; was: {case.nfd_why}")
    else:  # every word NFD writes otherwise reached the judge in NFD (the NFC reference's words are there too)
        sent = "\n".join(case.sent(ctx))
        words = [w for t in nfd(DECOMPOSABLE) for w in t.split() if unicodedata.normalize("NFC", w) != w]
        assert words and all(w.strip(".;") in sent for w in words), f"{case.name}: the NFD text did not reach the judge"


@pytest.mark.parametrize("case", cases("cache"))
def test_a_second_run_reads_the_cache_and_gives_identical_values(case, ctx):
    uncached, first, second = case.twice_cached(ctx, PREDICTIONS, REFERENCES)
    assert_close(first, uncached, 0.0, f"{case.name}: with the cache against without")
    assert_close(second, first, 0.0, f"{case.name}: the rerun from the cache")
