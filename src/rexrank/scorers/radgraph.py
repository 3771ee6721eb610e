"""RadGraph-F1 math, as ReXrank computes it (docs/metrics.md §4).

Source: rajpurkarlab/CXR-Report-Metric `CXRMetric/radgraph_evaluate_model.py`: `parse_entity_relation`
turns a RadGraph into the entity set {(span text, label)} and the relation set {((source text, source
label), (target text, target label), relation)}, matched exactly (case-sensitive); `compute_f1` gives
P = tp/|candidate set| (0 if empty), R = tp/|reference set| (0 if empty), F1 = 0 when P + R = 0, so two
empty sets score 0, not 1; `radgraph_combined` = (entity F1 + relation F1) / 2.

The model side (text -> graph) lives in `rexrank.models.radgraph`; this module is the math on graphs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rexrank.models import models_extra, resolve
from rexrank.models.radgraph_graphs import LABELS, RELATIONS, Entity, Graph, tokenize_report  # noqa: F401
from rexrank.scorers.base import Scorer
from rexrank.signature import Signature


def f1(reference: set, candidate: set) -> float:
    """`compute_f1`: 0 when either side is empty or nothing matches."""
    tp = len(reference & candidate)
    precision = tp / len(candidate) if candidate else 0
    recall = tp / len(reference) if reference else 0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def radgraph_f1(candidate: Graph, reference: Graph) -> tuple[float, float, float]:
    """(entity F1, relation F1, radgraph_combined) of one pair."""
    entity = f1(reference.entity_set(), candidate.entity_set())
    relation = f1(reference.relation_set(), candidate.relation_set())
    return entity, relation, (entity + relation) / 2


REWARD_LEVELS = ("simple", "partial", "complete")


def reward_elements(graph: Graph, level: str) -> set:
    """The radgraph package's `F1RadGraph` reward sets (0.1.18 wheel; NOT the ReXrank RadGraph-F1):
    simple {(text, label)}; partial adds True for entities with relations; complete has one element per
    relation, (text lowercased, label, relation, target text lowercased) -- no target label."""
    out: set = set()
    for i, e in enumerate(graph.entities):
        outgoing = [(t, r) for s, t, r in graph.relations if s == i]
        if level == "simple" or not outgoing:
            out.add((e.text, e.label))
        elif level == "partial":
            out.add((e.text, e.label, True))
        elif level == "complete":
            out |= {(e.text.lower(), e.label, r, graph.entities[t].text.lower()) for t, r in outgoing}
        else:
            raise ValueError(f"unknown reward level {level!r}: expected one of {', '.join(REWARD_LEVELS)}")
    return out


def reward(candidate: Graph, reference: Graph, level: str) -> float:
    """`F1RadGraph` reward of one pair at `level`; 0 when either graph has no entity. (F1RadGraph also scores
    0, without running the model, a pair where either text is the empty string; here "" is the graph of
    "None", as the ReXrank number has it.)"""
    if not candidate.entities or not reference.entities:
        return 0.0
    return f1(reward_elements(reference, level), reward_elements(candidate, level))


def to_arrays(graph: Graph) -> tuple[np.ndarray, ...]:
    """A graph as plain arrays, for the feature cache (no pickle)."""
    e = graph.entities
    return (np.array([x.text for x in e], dtype=str), np.array([x.label for x in e], dtype=str),
            np.array([(x.start, x.end) for x in e], dtype=np.int64).reshape(-1, 2),
            np.array([(s, t) for s, t, _ in graph.relations], dtype=np.int64).reshape(-1, 2),
            np.array([r for _, _, r in graph.relations], dtype=str))


def from_arrays(arrays: Sequence[np.ndarray]) -> Graph:
    texts, labels, spans, pairs, names = arrays
    entities = tuple(Entity(str(t), str(lab), int(s), int(e)) for t, lab, (s, e) in zip(texts, labels, spans))
    return Graph(entities, tuple((int(s), int(t), str(r)) for (s, t), r in zip(pairs, names)))


class RadGraphF1(Scorer):
    name = "radgraph"
    models = ("RADGRAPH", "RADGRAPH_ENCODER")  # the weights it needs (the encoder: what the archive's config names)
    title = "RadGraph"
    published = {"sets": "cxr-report-metric", "empty": "0"}
    version = "1"
    bounds = (0.0, 1.0)
    cacheable = True
    empty_prediction = "the graph of the single word None (what the reference substitutes); usually 0"
    summary = ("RadGraph F1 (partial reward): overlap of the clinical entities and relations RadGraph extracts from "
               "each report.")
    section = "§4"
    board, demo = 4, 0.25  # the board's fourth column by default; the demo's value at quality 1

    def __init__(self, **runtime):
        super().__init__(**runtime)
        self.weights = resolve("RADGRAPH")
        self._model = None

    @property
    def model(self):
        if self._model is None:
            RadGraphModel = models_extra("rexrank.models.radgraph", "RadGraphModel")
            self._model = RadGraphModel(self.weights, self.runtime)
        return self._model

    def features(self, texts: Sequence[str]) -> list[tuple[np.ndarray, ...]]:
        return [to_arrays(g) for g in self.model.graphs(texts, self.progress)]

    def score(self, candidates, references) -> np.ndarray:
        return np.array([radgraph_f1(from_arrays(c), from_arrays(r))[2]
                         for c, r in zip(candidates, references, strict=True)])

    def extras_columns(self, candidates, references) -> dict[str, np.ndarray]:
        pairs = [(from_arrays(c), from_arrays(r)) for c, r in zip(candidates, references)]
        return {level: np.array([reward(c, r, level) for c, r in pairs], dtype=np.float64) for level in REWARD_LEVELS}

    def extras_from(self, columns) -> dict:
        """The `F1RadGraph` reward levels other papers report, named apart from the ReXrank number."""
        if not len(columns[REWARD_LEVELS[0]]):
            return {}
        return {"f1radgraph_rewards": {level: float(np.mean(columns[level])) for level in REWARD_LEVELS}}

    def signature(self) -> Signature:
        return Signature(self.name, self.version, models={"radgraph": self.weights.identity},
                         settings={"sets": "cxr-report-metric", "empty": "0", **self.runtime.settings})
