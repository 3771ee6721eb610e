"""Synthetic report pairs for benchmarks (sentences written for this project; no real report)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.reports import SENTENCES  # noqa: E402  (one list of synthetic sentences for tests and benchmarks)


def pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs of 3-8 sentences; half the candidates are edited references."""
    rng = random.Random(seed)

    def report() -> str:
        return " ".join(rng.sample(SENTENCES, rng.randint(3, 8)))

    references = [report() for _ in range(n)]
    candidates = [report() if rng.random() < 0.5 else " ".join(r.split(". ")[1:]) for r in references]
    return candidates, references


SIDES = ("right", "left", "bilateral", "bibasilar", "right basilar", "left apical", "retrocardiac")
SIZES = ("small", "moderate", "large", "trace", "tiny", "mild", "minimal", "subtle", "patchy", "focal")
FINDINGS = ("pleural effusion", "pneumothorax", "consolidation", "atelectasis", "opacity", "nodule", "edema",
            "pneumonia", "scarring", "emphysema", "granuloma", "infiltrate", "thickening", "calcification")
PLACES = ("lower lobe", "upper lobe", "lung base", "hilum", "costophrenic angle", "lingula", "apex", "mid lung")
CHANGES = ("unchanged from prior", "new since the prior study", "improved", "slightly worse", "stable",
           "not significantly changed", "decreased in size", "increased compared to the prior radiograph")
DEVICES = ("endotracheal tube", "nasogastric tube", "right internal jugular catheter", "left PICC line",
           "Dobhoff tube", "pacemaker lead", "chest tube")


def varied_report(rng: random.Random) -> str:
    """A report of 2-9 sentences from templates: most sentences are rare, as in real reports, a few are the
    stock phrases every radiologist writes."""
    def sentence() -> str:
        kind = rng.random()
        if kind < 0.25:
            return rng.choice(SENTENCES)
        if kind < 0.6:
            return (f"There is a {rng.choice(SIZES)} {rng.choice(SIDES)} {rng.choice(FINDINGS)} in the "
                    f"{rng.choice(PLACES)}, {rng.choice(CHANGES)}.")
        if kind < 0.8:
            return f"No {rng.choice(FINDINGS)} or {rng.choice(FINDINGS)} is seen in the {rng.choice(PLACES)}."
        return (f"The {rng.choice(DEVICES)} terminates {rng.randint(1, 9)}.{rng.randint(0, 9)} cm above the "
                f"{rng.choice(('carina', 'cavoatrial junction', 'diaphragm'))}.")
    return " ".join(sentence() for _ in range(rng.randint(2, 9)))


def varied_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs of template reports; half the candidates are edited references."""
    rng = random.Random(seed)
    references = [varied_report(rng) for _ in range(n)]
    candidates = [varied_report(rng) if rng.random() < 0.5 else ". ".join(r.split(". ")[1:]) or r
                  for r in references]
    return candidates, references
