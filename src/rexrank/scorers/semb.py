"""SembScore and CheXbert label F1 (docs/metrics.md §3).

SembScore (CXR-Report-Metric `add_semb_col`): cosine similarity of the CheXbert [CLS] embeddings of the
reference and the candidate, per study. Computed in float64 from the float32 embeddings (the reference's
float32 numpy differs by ~1e-7).

Label F1 (f1chexbert 0.0.2 `F1CheXbert.forward`, "rrg" mode): each report's 14 CheXbert labels become
1 for positive or uncertain and 0 for negative or blank; micro and macro F1 over the 14 conditions and over
the five (Cardiomegaly, Edema, Consolidation, Atelectasis, Pleural Effusion), as sklearn's
classification_report gives them (a condition with no positive anywhere scores 0 in the macro mean).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rexrank.models import models_extra, resolve
from rexrank.models.conditions import CONDITIONS, POSITIVE, UNCERTAIN
from rexrank.scorers.base import Scorer
from rexrank.signature import Signature
from rexrank.stats import macro_f1, micro_f1

TOP5 = ("Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion")
TOP5_INDEX = [CONDITIONS.index(c) for c in TOP5]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def binary_labels(classes: np.ndarray) -> np.ndarray:
    """f1chexbert "rrg" mode: positive or uncertain -> 1, negative or blank -> 0."""
    return np.isin(classes, (POSITIVE, UNCERTAIN)).astype(np.int64)


def label_f1(candidate_classes: Sequence[np.ndarray], reference_classes: Sequence[np.ndarray]) -> dict[str, float]:
    """Micro/macro F1 of candidate labels against reference labels, over 14 conditions and the top 5."""
    hyp = binary_labels(np.asarray(candidate_classes))
    ref = binary_labels(np.asarray(reference_classes))
    out = {}
    for suffix, columns in (("14", slice(None)), ("5", TOP5_INDEX)):
        h, r = hyp[:, columns], ref[:, columns]
        sums = np.concatenate([(h & r).sum(0), (h & ~r.astype(bool)).sum(0), (~h.astype(bool) & r).sum(0)])
        out[f"micro_f1_{suffix}"] = float(micro_f1(sums))  # the label-F1 metrics' own arithmetic (rexrank.stats)
        out[f"macro_f1_{suffix}"] = float(macro_f1(sums))
    return out


class SembScore(Scorer):
    name = "semb_score"
    models = ("CHEXBERT", "BERT_BASE_UNCASED")  # the weights it resolves (rexrank.models.registry)
    title = "SembScore"
    version = "1"
    bounds = (-1.0, 1.0)  # a cosine
    cacheable = True
    empty_prediction = "cosine with the embedding of [CLS][SEP] (a fixed vector), not 0"
    summary = "Cosine similarity of the CheXbert embeddings of the prediction and the reference."
    section = "§3"
    board, demo = 3, 0.45  # the board's third column by default; the demo's value at quality 1

    def __init__(self, **runtime):
        super().__init__(**runtime)
        self.checkpoint, self.base = resolve("CHEXBERT"), resolve("BERT_BASE_UNCASED")
        self._model = None

    @property
    def model(self):
        if self._model is None:
            CheXbert = models_extra("rexrank.models.chexbert", "CheXbert")
            self._model = CheXbert(self.checkpoint, self.base, self.runtime)
        return self._model

    def features(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.model.encode(texts, self.progress)

    def score(self, candidates, references) -> np.ndarray:
        return np.array([cosine(c[0], r[0]) for c, r in zip(candidates, references, strict=True)])

    def extras_columns(self, candidates, references) -> dict[str, np.ndarray]:
        def labels(features) -> np.ndarray:  # a row of condition classes per report
            return np.array([f[1] for f in features]).reshape(len(features), len(CONDITIONS))

        return {"candidate_labels": labels(candidates), "reference_labels": labels(references)}

    def extras_from(self, columns) -> dict:
        return {"chexbert_label_f1": label_f1(columns["candidate_labels"], columns["reference_labels"])}

    def signature(self) -> Signature:
        return Signature(self.name, self.version, models={"chexbert": self.checkpoint.identity,
                                                          "tokenizer": self.base.identity},
                         settings=self.runtime.settings)
