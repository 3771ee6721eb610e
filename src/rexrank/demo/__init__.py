"""The embedded demo: a synthetic split (`dataset.jsonl`) and three synthetic systems' predictions."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
DATASET = HERE / "dataset.jsonl"
NAME = "rexrank-demo"


def systems() -> dict[str, dict]:
    """system key -> model card fields (name, institution, url, trained_on)."""
    return json.loads((HERE / "systems.json").read_text())


def predictions(system: str, task: str) -> Path:
    return HERE / "predictions" / f"{system}.{task}.jsonl"


def is_demo(source: str | Path) -> bool:
    """Whether a split was read from the demo's own file. Its careful system copies reference sentences by design,
    so the rule against near-copies of the references (`rexrank.rules.copies`) does not apply to it."""
    return Path(source).resolve() == DATASET.resolve()
