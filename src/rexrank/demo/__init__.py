"""The embedded demo: a synthetic split (`dataset.jsonl`, and the same studies in ReXrank's split format as a template,
`split.json`) and three synthetic systems' predictions."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
DATASET = HERE / "dataset.jsonl"
SPLIT_TEMPLATE = HERE / "split.json"  # the demo's split as ReXrank's split JSON: a template for one's own
NAME = "rexrank-demo"


def systems() -> dict[str, dict]:
    """system key -> model card fields (name, institution, url, trained_on)."""
    return json.loads((HERE / "systems.json").read_text())


def predictions(system: str, task: str) -> Path:
    return HERE / "predictions" / f"{system}.{task}.jsonl"

