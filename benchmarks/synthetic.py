"""Synthetic report pairs for benchmarks (sentences written for this project; no real report)."""

from __future__ import annotations

import random

SENTENCES = [
    "The lungs are clear without focal consolidation.", "No pleural effusion or pneumothorax is seen.",
    "Heart size is normal.", "Mild cardiomegaly is present.", "There is a small left pleural effusion.",
    "Bibasilar atelectasis is noted.", "Patchy opacity in the right lower lobe, concerning for pneumonia.",
    "Mild pulmonary vascular congestion without frank edema.", "No acute osseous abnormality is identified.",
    "An endotracheal tube terminates 4 cm above the carina.", "Degenerative changes of the thoracic spine.",
    "The cardiomediastinal silhouette is within normal limits.", "Hyperinflated lungs consistent with emphysema.",
    "Small apical left pneumothorax.", "A 1.2 cm nodule projects over the right upper lobe.",
    "Interval removal of the right internal jugular catheter.", "Unchanged moderate cardiomegaly.",
    "Possible early right basilar pneumonia; follow-up recommended.", "Stable post-operative changes.",
]


def pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs of 3-8 sentences; half the candidates are edited references."""
    rng = random.Random(seed)

    def report() -> str:
        return " ".join(rng.sample(SENTENCES, rng.randint(3, 8)))

    references = [report() for _ in range(n)]
    candidates = [report() if rng.random() < 0.5 else " ".join(r.split(". ")[1:]) for r in references]
    return candidates, references
