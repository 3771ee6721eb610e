"""Synthetic report pairs for benchmarks (sentences written for this project; no real report)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.reports import SENTENCES, varied_report  # noqa: E402  (one source of synthetic text for tests and benchmarks)


def pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs of 3-8 sentences; half the candidates are edited references."""
    rng = random.Random(seed)

    def report() -> str:
        return " ".join(rng.sample(SENTENCES, rng.randint(3, 8)))

    references = [report() for _ in range(n)]
    candidates = [report() if rng.random() < 0.5 else " ".join(r.split(". ")[1:]) for r in references]
    return candidates, references


def varied_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs of template reports; half the candidates are edited references."""
    rng = random.Random(seed)
    references = [varied_report(rng) for _ in range(n)]
    candidates = [varied_report(rng) if rng.random() < 0.5 else ". ".join(r.split(". ")[1:]) or r
                  for r in references]
    return candidates, references
