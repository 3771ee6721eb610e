"""BLEU-2, as ReXrank computes it (docs/metrics.md §1).

Source: rajpurkarlab/CXR-Report-Metric `CXRMetric/run_eval.py` (`prep_reports`, `add_bleu_col`), which
scores each study with fast_bleu 0.0.90 `BLEU([ref], {"bigram": (1/2, 1/2)})`. That equals NLTK's
`sentence_bleu([ref], hyp, weights=(0.5, 0.5), smoothing_function=SmoothingFunction().method1)`:
clipped n-gram precisions with denominators max(1, count), a zero numerator replaced by
epsilon 0.1 over the unreduced denominator, brevity penalty exp(1 - r/c) unless the hypothesis is
longer, and 0 when no unigram matches. Sentence level, one reference, never corpus BLEU.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from rexrank.scorers.base import Scorer
from rexrank.signature import Signature

EPSILON = 0.1  # NLTK SmoothingFunction(epsilon=0.1).method1
WEIGHTS = (0.5, 0.5)


def tokenize(text: str) -> list[str]:
    """`prep_reports`: lower-case, split off '.', split on single spaces; commas and newlines stay in tokens."""
    return [t for t in str(text).lower().replace(".", " .").split(" ") if t != ""]


class Ngrams(NamedTuple):
    length: int
    unigrams: Counter
    bigrams: Counter


def ngrams(text: str) -> Ngrams:
    tokens = tokenize(text)
    return Ngrams(len(tokens), Counter(tokens), Counter(zip(tokens, tokens[1:])))


def _clipped(hypothesis: Counter, reference: Counter) -> int:
    """Hypothesis n-gram counts clipped by the reference's (a plain loop: twice as fast as sum/min here)."""
    matched = 0
    for gram, count in hypothesis.items():
        available = reference.get(gram)
        if available:
            matched += count if count < available else available
    return matched


def bleu2_pair(candidate: Ngrams, reference: Ngrams) -> float:
    """Sentence BLEU-2 of one candidate against one reference."""
    c, r = candidate.length, reference.length
    matched_unigrams = _clipped(candidate.unigrams, reference.unigrams)
    if matched_unigrams == 0:  # also covers the empty candidate
        return 0.0
    bigram_total = max(1, c - 1)
    matched_bigrams = _clipped(candidate.bigrams, reference.bigrams)
    p1 = matched_unigrams / c
    p2 = (matched_bigrams if matched_bigrams else EPSILON) / bigram_total
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(math.fsum((WEIGHTS[0] * math.log(p1), WEIGHTS[1] * math.log(p2))))


class Bleu2(Scorer):
    name = "bleu2"
    title = "BLEU"
    published = {"tok": "lower+dot", "smooth": "method1:eps=0.1"}
    version = "1"
    bounds = (0.0, 1.0)
    empty_prediction = "0: no unigram can match"
    summary = ("BLEU-2: unigram and bigram precision against the reference with the brevity penalty, sentence by "
               "sentence (NLTK method1 smoothing).")
    section = "§1"
    board, demo = 1, 0.20  # the board's first column by default; the demo's value at quality 1
    convention = ("ReXrank's BLEU-2 (CXR-Report-Metric, fast_bleu): tokens lower-cased with each \".\" split off, a "
                  "sentence BLEU-2 per report (method1 smoothing), then the mean. RadEval's `bleu_2` is another "
                  "number: corpus BLEU-2 (coco-caption's scorer) on whitespace tokens, case kept.")

    def features(self, texts: Sequence[str]) -> list[Ngrams]:
        return [ngrams(t) for t in texts]

    def score(self, candidates: Sequence[Ngrams], references: Sequence[Ngrams]) -> np.ndarray:
        return np.fromiter(
            (bleu2_pair(c, r) for c, r in zip(candidates, references, strict=True)),
            dtype=np.float64,
            count=len(candidates),
        )

    def signature(self) -> Signature:
        return Signature(self.name, self.version, settings={"tok": "lower+dot", "smooth": "method1:eps=0.1"})
