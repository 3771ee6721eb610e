"""RaTEScore math, as the `ratescore` package 0.6.0 computes it (docs/metrics.md §6).

Source: MAGIC-AI4Med/RaTEScore 0.6.0 `utils.py: compute` and `scorer.py: compute_score` (notes in
docs/reference-notes/ratescore.md). For each entity of the query report, its best cosine match among the
other report's entities (L2-normalised [CLS] embeddings, float32); the match weighs W[query type, match
type], times the negation penalty when one side is negated and the other is not (NON-X vs X across
ABNORMALITY and DISEASE); s(Q, K) = sum(cos * w * p) / sum(w) -- the penalty is not in the denominator.
RaTEScore is the harmonic mean of s(reference, candidate) and s(candidate, reference), 0 when their sum is
0, and 0.5 when either report has no entity. The inference side (sentences, NER, embeddings) is separate.

Entity vectors are computed once per distinct text, where the reference computes them report by report; the
two differ in the last float32 bits (cosines by < 1e-6). That moves a score by rounding only, unless a best
match is a near tie between key entities of different types (an entity text found twice in a report, once
negated, ties exactly): then the winner decides the weight, and CPU `topk` picks among exact ties by the
row's other values. Such pairs get the reference's own per-report vectors (`paired_features`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rexrank.models import models_extra, resolve
from rexrank.scorers.base import Scorer
from rexrank.signature import Signature

TYPES = ("ABNORMALITY", "NON-ABNORMALITY", "DISEASE", "NON-DISEASE", "ANATOMY")
NEGATION_PAIRS = {(a, b) for pos in ("ABNORMALITY", "DISEASE") for neg in ("NON-ABNORMALITY", "NON-DISEASE")
                  for a, b in ((pos, neg), (neg, pos))}

# ratescore 0.6.0 `scorer.py`, the "long" matrix (also the 0.1.0-0.5.0 default), rows = query type,
# columns = best match's type, in TYPES order.
LONG = (
    (0.4276119164393705, 0.5431049700217344, 0.0034478181112993847, 0.27005425386213877, 0.6240929990607657),
    (0.16546764653692908, 0.0009357166071730684, 0.719397354576018, 0.0927333564267591, 0.018670610691852826),
    (0.8396510075734789, 0.9820689020512646, 0.8460555030578727, 0.3789136708096537, 0.9950209388542061),
    (0.7759420231214385, 0.03860183811876373, 0.10073046076318157, 0.34065681486566446, 0.1839139293714062),
    (0.7487824274337533, 0.02097055139911715, 0.4592143222158069, 0.00013736314126696204, 0.2856134859160784),
)
# ratescore 0.6.0 `scorer.py`, the "short" matrix.
SHORT = (
    (0.4070293318365468, 0.9479148658006686, 0.28342529466226446, 0.23875064111146294, 0.6952639610605605),
    (0.1712744286898638, 0.0007887930317199857, 0.00045065329822896076, 0.8555432840895761, 0.4485149671497294),
    (0.8840397619834857, 0.6962283914800402, 0.19018958438059513, 0.943727057946997, 0.9637659445696822),
    (0.9555801066212176, 0.05650711141169969, 0.6072996585919443, 0.3214769399791204, 0.13122106162635216),
    (0.5829759950441763, 0.794672584951181, 0.0006059634829551632, 0.27982942400798977, 0.7709590751917746),
)


@dataclass(frozen=True)
class Weights:
    name: str
    matrix: tuple[tuple[float, ...], ...]
    neg_weight: float

    def weight(self, query_type: str, match_type: str) -> float:
        return self.matrix[TYPES.index(query_type)][TYPES.index(match_type)]


WEIGHTS = {
    "0.6.0": Weights("0.6.0", LONG, 0.8716553966489615),  # the default since commit 649a814 (2025-05-18)
    "pre-2025-05": Weights("pre-2025-05", LONG, 0.3612),  # 0.5.0 and earlier: same matrix, hard-coded penalty
    "short": Weights("short", SHORT, 0.3611577852354489),
}


def best_matches(query: np.ndarray, keys: np.ndarray) -> tuple[list[float], list[int]]:
    """Each query row's best cosine among the keys, computed as ratescore's `topk_similarity`: float32
    `F.normalize`, one matrix-vector product per query, `torch.topk(k=1)`. Mirrored op for op because exact
    ties are common (an entity text found twice in a report, once negated, has two identical vectors) and
    CPU `topk` does not pick the first of equal values."""
    import torch
    import torch.nn.functional as F

    q = F.normalize(torch.as_tensor(np.asarray(query, dtype=np.float32)), p=2, dim=1)
    k = F.normalize(torch.as_tensor(np.asarray(keys, dtype=np.float32)), p=2, dim=1)
    values, indices = [], []
    for row in q:
        value, index = torch.topk(torch.matmul(k, row), 1, largest=True)
        values.append(value[0].item())
        indices.append(index[0].item())
    return values, indices


NEAR_TIE = 1e-5  # cosines this close to a row's best may swap with it under the reference's rounding (< 1e-6)


def near_tie(candidate: tuple[np.ndarray, list[str]], reference: tuple[np.ndarray, list[str]]) -> bool:
    """Whether a best match of the pair, either way, is within NEAR_TIE of a key entity of another type."""
    (c_emb, c_types), (r_emb, r_types) = candidate, reference
    if not c_types or not r_types:
        return False

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    cosines = unit(c_emb) @ unit(r_emb).T
    for sims, key_types in ((cosines, np.asarray(r_types)), (cosines.T, np.asarray(c_types))):
        close = sims >= sims.max(axis=1, keepdims=True) - NEAR_TIE
        if any(len(set(key_types[row])) > 1 for row in close):
            return True
    return False


def direction(query: np.ndarray, query_types: list[str], keys: np.ndarray, key_types: list[str],
              weights: Weights) -> float:
    """s(Q, K): each query entity's best match among the keys, weighted and penalised, over the weights."""
    numerator = denominator = 0.0
    for t, c, j in zip(query_types, *best_matches(query, keys)):
        w = weights.weight(t, key_types[j])
        numerator += c * w * (weights.neg_weight if (t, key_types[j]) in NEGATION_PAIRS else 1)
        denominator += w
    return numerator / denominator if denominator else 0.0


def ratescore_pair(candidate: tuple[np.ndarray, list[str]], reference: tuple[np.ndarray, list[str]],
                   weights: Weights = WEIGHTS["0.6.0"]) -> float:
    """RaTEScore of one pair from (entity embeddings [n, d], entity types) per report."""
    (c_emb, c_types), (r_emb, r_types) = candidate, reference
    if not c_types or not r_types:
        return 0.5
    p = direction(r_emb, r_types, c_emb, c_types, weights)
    r = direction(c_emb, c_types, r_emb, r_types, weights)
    return 2 * p * r / (p + r) if p + r != 0 else 0.0


class RaTEScore(Scorer):
    """RaTEScore per study; `weights` names the matrix and negation penalty ("0.6.0", "pre-2025-05", "short").

    Pairs are aligned by position: a report left with no sentence (empty, or every sentence under 3
    characters) has no entity and scores 0.5, where ratescore 0.6.0 drops it and shifts every later pair."""

    name = "ratescore"
    models = ("RATE_NER", "BIOLORD")  # the weights it resolves (rexrank.models.registry)
    title = "RaTEScore"
    # ReXrank does not say which ratescore release scored its figures (0.6.0 changed the penalty in May 2025), nor
    # whether a report left without sentences shifted its pairs there.
    published = {"weights": None, "align": None}
    version = "0.6.0"
    # No bounds: a harmonic mean of two signed weighted cosines, unbounded when their signs differ.
    cacheable = True
    empty_prediction = "0.5 (a report without entities)"
    summary = ("Medical entities tagged by RaTE-NER and matched by BioLORD embeddings, weighted by entity type: the "
               "F-measure of the two directions.")
    section = "§6"
    board, demo = 6, 0.52  # the board's sixth column by default; the demo's value at quality 1
    option_texts = {"weights": "\"0.6.0\", \"pre-2025-05\" (ratescore <= 0.5.0's penalty) or \"short\""}

    def __init__(self, weights: str = "0.6.0", **runtime):
        super().__init__(**runtime)
        if weights not in WEIGHTS:
            raise ValueError(f"unknown RaTEScore weights {weights!r}: expected one of {', '.join(WEIGHTS)}")
        self.weights = WEIGHTS[weights]
        self.ner, self.encoder = resolve("RATE_NER"), resolve("BIOLORD")
        self._model = None
        self.rescored = 0  # pairs of the last `paired_features` given per-report vectors (near ties)

    @property
    def model(self):
        if self._model is None:
            RaTEModels = models_extra("rexrank.models.ratescore", "RaTEModels")
            self._model = RaTEModels(self.ner, self.encoder, self.runtime)
        return self._model

    def features(self, texts: Sequence[str]) -> list[tuple[np.ndarray, ...]]:
        return self.model.features(texts, self.progress)

    def paired_features(self, predictions: Sequence[str], references: Sequence[str]) -> tuple[list, list]:
        """Each text's features computed once (and cached); then a pair whose best match is a near tie between
        types gets, for both reports, the vectors the reference computes report by report, so `score` is math
        alone and a near tie is decided as the reference decides it. Those per-report vectors are cached by report
        text too: the references scored against many systems are embedded report by report once."""
        candidates, refs = super().paired_features(predictions, references)
        tied = [i for i, (c, r) in enumerate(zip(candidates, refs, strict=True))
                if near_tie((c[2], c[1].tolist()), (r[2], r[1].tolist()))]
        features = {t: f for i in tied for t, f in ((predictions[i], candidates[i]), (references[i], refs[i]))}
        texts = list(features)

        def per_report(batch: Sequence[str]) -> list[tuple[np.ndarray]]:
            return [(self.model.encoder.embed(features[t][0].tolist()),) for t in batch]

        exact = dict(zip(texts, self.cache.get_or_compute(self.cache_namespace() + "|per-report", texts, per_report,
                                                          counted=False), strict=True))
        for i in tied:
            c, r = candidates[i], refs[i]
            candidates[i] = (c[0], c[1], exact[predictions[i]][0], *c[3:])
            refs[i] = (r[0], r[1], exact[references[i]][0], *r[3:])
        self.rescored = len(tied)
        return candidates, refs

    def score(self, candidates, references) -> np.ndarray:
        return np.array([ratescore_pair((c[2], c[1].tolist()), (r[2], r[1].tolist()), self.weights)
                         for c, r in zip(candidates, references, strict=True)])

    def cache_namespace(self) -> str:  # entities and vectors do not depend on the weights
        return Signature(self.name, self.version, models=self._models(), settings=self.runtime.settings).point_key

    def _models(self) -> dict[str, str]:
        return {"ner": self.ner.identity, "encoder": self.encoder.identity}

    def signature(self) -> Signature:
        return Signature(self.name, self.version, models=self._models(),
                         settings={"weights": self.weights.name, "align": "position", **self.runtime.settings})
