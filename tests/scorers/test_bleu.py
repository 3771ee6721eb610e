import random

import numpy as np
import pytest
from fixtures.metric_contract import DIFFERS, MetricContract, ScorerCase, empty_is
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from rexrank.hf_metric import compute
from rexrank.scorers import SCORERS
from rexrank.scorers.bleu import Bleu2, bleu2_pair, ngrams, tokenize

WORDS = ("the lungs are clear no pleural effusion pneumothorax heart size is normal mild cardiomegaly "
         "Bibasilar atelectasis Right LEFT lower lobe opacity, effusion, 1.2 cm nodule. stable. unchanged").split()
SEPARATORS = [" ", " ", " ", " ", "  ", "\n", ". ", ", ", " .", "...", "\t"]


def oracle(candidate: str, reference: str) -> float:
    """CXR-Report-Metric `prep_reports` tokenisation (copied from docs/metrics.md §1) + NLTK method1, the oracle."""
    def prep(text):
        return [t for t in str(text).lower().replace(".", " .").split(" ") if t != ""]

    return sentence_bleu([prep(reference)], prep(candidate), weights=(0.5, 0.5),
                         smoothing_function=SmoothingFunction().method1)


def synthetic_report(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(length)).strip(" ")


def generated_pairs(n: int = 300, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        reference = synthetic_report(rng, rng.randint(0, 25))
        kind = rng.random()
        if kind < 0.4:  # an edited copy: the realistic case, with bigram matches
            words = reference.split(" ")
            candidate = " ".join(w for w in words if rng.random() < 0.8) + rng.choice(["", " new finding."])
        else:
            candidate = synthetic_report(rng, rng.randint(0, 25))
        pairs.append((candidate, reference))
    return pairs


EDGE_CASES = [
    ("", "No pleural effusion."),  # empty candidate
    ("No pleural effusion.", ""),  # empty reference
    ("", ""),
    ("   ", "Heart size is normal."),  # whitespace only
    ("Heart size is normal.", "Heart size is normal."),  # identical
    ("HEART SIZE IS NORMAL.", "heart size is normal."),  # upper case folds
    ("Cardiomegaly", "No pleural effusion"),  # no overlap
    ("effusion", "effusion"),  # one token: no bigram at all
    ("effusion", "small effusion"),  # one matching token, shorter
    ("effusion, no", "effusion no"),  # commas stay inside tokens
    ("left\neffusion", "left effusion"),  # newlines stay inside tokens
    ("the the the the", "the cat"),  # clipping
    ("Lungs are clear. Lungs are clear. Lungs are clear.", "Lungs are clear."),  # longer candidate: bp 1
    ("1.2 cm nodule...", "1 . 2 cm nodule . . ."),  # '.' is split off everywhere
    ("Mild\tedema.", "Mild edema."),  # tabs are not separators
]


@pytest.mark.parametrize(("candidate", "reference"), EDGE_CASES + generated_pairs())
def test_equals_nltk_sentence_bleu_method1(candidate, reference):
    assert abs(bleu2_pair(ngrams(candidate), ngrams(reference)) - oracle(candidate, reference)) <= 1e-12


def test_generated_pairs_cover_every_branch():
    """The parity set must exercise smoothing, brevity and the zero rule, or it proves little."""
    pairs = EDGE_CASES + generated_pairs()
    scores = [oracle(c, r) for c, r in pairs]
    cand_longer = sum(len(tokenize(c)) > len(tokenize(r)) for c, r in pairs)
    smoothed = sum(0 < s and ngrams(c).bigrams.keys().isdisjoint(ngrams(r).bigrams) for (c, r), s in
                   zip(pairs, scores))
    assert len(pairs) >= 200
    assert scores.count(0.0) >= 10 and cand_longer >= 20 and smoothed >= 10
    assert sum(0.3 < s < 1 for s in scores) >= 50


def test_tokenisation_quirks():
    assert tokenize("Small effusion, left.\nStable.") == ["small", "effusion,", "left", ".\nstable", "."]
    assert tokenize("  a  b ") == ["a", "b"]
    assert tokenize("") == []


def test_known_values():
    assert bleu2_pair(ngrams("Heart size is normal."), ngrams("heart size is normal .")) == 1.0
    assert bleu2_pair(ngrams(""), ngrams("heart")) == 0.0
    # one unigram of one matches, no bigram: sqrt(1 * 0.1/1) with brevity exp(1 - 2/1)
    expected = np.sqrt(0.1) * np.exp(-1)
    assert bleu2_pair(ngrams("effusion"), ngrams("small effusion")) == pytest.approx(expected, abs=1e-15)


def test_scorer_is_per_study_and_order_free():
    pairs = generated_pairs(50, seed=3)
    candidates, references = [c for c, _ in pairs], [r for _, r in pairs]
    scores = Bleu2()(candidates, references)
    order = np.random.default_rng(0).permutation(len(pairs))
    shuffled = Bleu2()([candidates[i] for i in order], [references[i] for i in order])
    np.testing.assert_array_equal(shuffled, scores[order])
    np.testing.assert_allclose(scores, [oracle(c, r) for c, r in pairs], atol=1e-12, rtol=0)


def test_compute_returns_mean_per_sample_and_signature():
    out = compute("bleu2", ["Heart size is normal.", ""], ["Heart size is normal.", "Mild edema."])
    assert out["bleu2_per_sample"] == [1.0, 0.0]
    assert out["bleu2"] == 0.5
    assert out["signature"].startswith("bleu2:1|tok:lower+dot|smooth:method1:eps=0.1|rexrank:")


def test_compute_names_the_item_that_is_not_text():
    with pytest.raises(ValueError, match=r"reference 1 is NoneType"):
        compute("bleu2", ["a", "b"], ["a", None])


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


BLEU2 = ScorerCase(
    name="bleu2", cls=SCORERS["bleu2"], tolerance=0.0, why="counts of tokens; the same float operations per pair",
    nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
    empty_rule=empty_is(0.0),
    oracle=lambda ctx, predictions, references: [oracle(c, r) for c, r in zip(predictions, references)],
    oracle_tolerance=1e-12, oracle_why="NLTK's float operations in another order (its product of precisions)",
    skips={"cache": "not cacheable (cacheable = False): its features are token counts, cheaper to count again",
           "variant": "no setting: its tokenisation and smoothing are fixed"})


class TestBleu2Contract(MetricContract):
    case = BLEU2
