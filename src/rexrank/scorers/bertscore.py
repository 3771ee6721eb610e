"""BERTScore as ReXrank computes it (docs/metrics.md §2).

Source: rajpurkarlab/CXR-Report-Metric `add_bertscore_col` (runs of spaces collapsed, then bert-score
0.3.11 `BERTScorer(model_type="distilroberta-base", rescale_with_baseline=True, idf=False)`), and
bert-score's `greedy_cos_idf`: cosine similarity of every candidate token with every reference token
(special tokens included as match targets), each token's best match weighted by its idf share (special
tokens weigh 0; without idf every other token weighs 1), F1 of P and R; a text with no token besides
<s></s> sets P and R to 0 and F to 0; F is then rescaled with the layer's baseline, (F - b) / (1 - b).
Similarities are computed in float64 from the float32 states (the reference's float32 sums differ by
< 2e-7 in raw F); the rescale is float32, as the reference applies it.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from rexrank.models import models_extra, resolve
from rexrank.scorers.base import Scorer
from rexrank.signature import Signature

# bert-score 0.3.11 `rescale_baseline/en/distilroberta-base.tsv`, row LAYER=5 (P, R, F).
BASELINE = {"P": 0.84732, "R": 0.84759504, "F": 0.8473319}
LAYER = 5


def clean(text: str) -> str:
    """CXR-Report-Metric collapses runs of spaces; bert-score strips."""
    return re.sub(r" +", " ", text)


def idf_weights(reference_ids: Sequence[np.ndarray]) -> defaultdict[int, float]:
    """bert-score `get_idf_dict` over the reference list (duplicates count): log((N+1)/(df+1)), unseen log(N+1).

    <s> and </s> occur in every reference, so their weight is log(1) = 0, as without idf.
    """
    counts = Counter(token for ids in reference_ids for token in set(ids.tolist()))
    n = len(reference_ids)
    return defaultdict(lambda: math.log(n + 1), {t: math.log((n + 1) / (df + 1)) for t, df in counts.items()})


def _weights(ids: np.ndarray, idf: dict[int, float] | None) -> np.ndarray:
    if idf is None:  # every token weighs 1 but <s> and </s>, which are always the first and the last
        w = np.ones(len(ids))
        w[[0, -1]] = 0
    else:
        w = np.array([idf[t] for t in ids.tolist()])
    with np.errstate(invalid="ignore", divide="ignore"):
        return w / w.sum()


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def pair_scores(candidate: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray],
                idf: dict[int, float] | None = None) -> tuple[float, float, float]:
    """Raw (P, R, F) of one pair from (ids, states) features."""
    (c_ids, c_emb), (r_ids, r_emb) = candidate, reference
    sim = _unit(c_emb.astype(np.float64)) @ _unit(r_emb.astype(np.float64)).T  # every token, specials too
    with np.errstate(invalid="ignore"):
        p = (sim.max(axis=1) * _weights(c_ids, idf)).sum()
        r = (sim.max(axis=0) * _weights(r_ids, idf)).sum()
        f = 2 * p * r / (p + r)
    if len(c_ids) == 2 or len(r_ids) == 2:  # only <s></s>: bert-score sets P and R to 0 (F is NaN -> 0)
        p = r = 0.0
    return float(p), float(r), 0.0 if math.isnan(f) else float(f)


def rescale(value: float, baseline: float) -> float:
    """(x - b) / (1 - b) in float32, as bert-score applies its baseline."""
    b = np.float32(baseline)
    return float((np.float32(value) - b) / (np.float32(1) - b))


class BertScore(Scorer):
    name = "bertscore"
    version = "1"
    # No bounds: raw F is 2PR/(P+R), unbounded when P and R have opposite signs (cosines can be negative).
    empty_prediction = "raw F 0, rescaled (0 - 0.8473319) / (1 - 0.8473319) = -5.5502"
    summary = ("BERTScore F1 with distilroberta-base (layer 5, no idf), rescaled with bert-score's baseline: token "
               "embeddings matched by cosine.")
    section = "§2"

    cacheable = True

    def __init__(self, idf: bool = False, **runtime):
        super().__init__(**runtime)
        self.idf = idf
        self.model = resolve("BERTSCORE")  # weights located now; loaded only if a feature is not cached
        self._encoder = None

    @property
    def encoder(self):
        if self._encoder is None:
            BertScoreEncoder = models_extra("rexrank.models.bertscore", "BertScoreEncoder")
            self._encoder = BertScoreEncoder(self.model, LAYER, self.runtime)
        return self._encoder

    def features(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.encoder.encode([clean(t) for t in texts], self.progress)

    def score_prf(self, candidates, references) -> np.ndarray:
        """[n, 3] raw P, R, F per pair."""
        idf = idf_weights([ids for ids, _ in references]) if self.idf else None
        return np.array([pair_scores(c, r, idf) for c, r in zip(candidates, references, strict=True)],
                        dtype=np.float64).reshape(-1, 3)

    def score(self, candidates, references) -> np.ndarray:
        return np.array([rescale(f, BASELINE["F"]) for f in self.score_prf(candidates, references)[:, 2]])

    def cache_namespace(self) -> str:
        precision = "".join(f"|{k}:{v}" for k, v in self.runtime.settings.items())  # idf is applied later
        return f"bertscore-features:{self.version}|{self.model.identity}|layer:{LAYER}{precision}"

    def signature(self) -> Signature:
        return Signature(self.name, self.version, models={"model": self.model.identity},
                         settings={"layer": str(LAYER), "idf": "refs" if self.idf else "no",
                                   "rescale": f"F:{BASELINE['F']}", **self.runtime.settings})
