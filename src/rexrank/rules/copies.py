"""Predictions for a public test set cannot be its references.

The references of MIMIC-CXR, IU-Xray and CheXpert Plus are public, so a submitter can send them back, lightly
edited, and every metric ranks the copy first. What tells a copy from a good model is that it matches its own
study's reference, and that reference alone: a model that writes a common report ("No acute cardiopulmonary
process.") matches every study whose reference says that, a copy matches the one it was copied from. So:

- a report's words are its runs of letters and digits, case-folded; its pairs are its adjacent word pairs, and the
  likeness of two reports is the Jaccard index of their pairs (shared over either's);
- a prediction is a **near-copy** when its likeness to its own reference is at least `LIKENESS`, exceeds its
  likeness to every other study's reference by at least `MARGIN` (a text that several references share identifies
  none of them), and the set does not write it for another study too (a model's stock report is its own);
- a set is refused when more than `MAX_SHARE` of its studies (and at least `MIN_COPIES`) are near-copies.

A paraphrase keeps few pairs and is not caught: this stops copying, not rewording (docs/security.md, rule 11).

Measured on real models' published outputs (docs/security.md, rule 11): of 2,347 MIMIC-CXR test studies, CXRMate-2
writes 9 near-copies (0.38%: stock normal reports that happen to be unique among the references), cvt2distilgpt2 1
(a text it writes for 59 studies, so not counted); MoERad, CXRMate-ED and the IU-Xray models none; CheXpert Plus
impressions 1 of 200.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

LIKENESS = 0.8
MARGIN = 0.2
MAX_SHARE = 0.01
MIN_COPIES = 2

_WORD = re.compile(r"[^\W_]+")


def pairs(text: str) -> frozenset[tuple[str, str]]:
    words = _WORD.findall(text.casefold())
    return frozenset(zip(words, words[1:]))


def likeness(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def near_copies(predictions: Sequence[str], references: Sequence[str], stop: int | None = None) -> list[int]:
    """The positions whose prediction is a near-copy of its own reference (the module's rule), in order; with
    `stop`, no more than that many are looked for."""
    referenced = [pairs(r) for r in references]
    written = Counter(" ".join(p.casefold().split()) for p in predictions)
    found = []
    for i, prediction in enumerate(predictions):
        if written[" ".join(prediction.casefold().split())] > 1:
            continue  # the set writes it for several studies: its own stock report, identifying none
        made = pairs(prediction)
        own = likeness(made, referenced[i])
        if own < LIKENESS:
            continue
        # only references sharing a pair with the prediction can come near it; the costly part, rarely reached
        if all(own - likeness(made, other) >= MARGIN for j, other in enumerate(referenced) if j != i and made & other):
            found.append(i)
            if stop is not None and len(found) >= stop:
                break
    return found


def copy_problem(study_ids: Sequence[str], predictions: Sequence[str], references: Sequence[str]) -> str | None:
    """Why a prediction set may not be ranked as a model's (too many near-copies of their references); None when
    it may."""
    allowed = max(MIN_COPIES - 1, int(MAX_SHARE * len(predictions)))
    copies = near_copies(predictions, references, stop=allowed + 1)
    if len(copies) <= allowed:
        return None
    shown = ", ".join(str(study_ids[i]) for i in copies[:3])
    return (f"more than {allowed:,} of {len(predictions):,} predictions are near-copies of their own reference "
            f"(studies {shown}, ...): each shares at least {LIKENESS:.0%} of its word pairs with its study's reference "
            f"and {MARGIN:.0%} more than with any other; at most {MAX_SHARE:.0%} of a set may be")
