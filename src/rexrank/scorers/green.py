"""GREEN in the scorecard: `rexrank.green` through a judge endpoint or a local model (docs/metrics.md §7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rexrank import green
from rexrank.llm.guard import DataUse
from rexrank.scorers.base import Judged
from rexrank.signature import Signature


class Green(Judged):
    name = "green"
    version = green.VERSION
    bounds = (0.0, 1.0)  # matched / (matched + errors)
    details = {f"green.{key}": "number" for key in green.COUNT_KEYS}
    empty_prediction = "judged as written (an empty candidate matches nothing: usually 0)"
    summary = ("A fine-tuned LLM judge counts matched findings and clinically significant errors: matched / (matched"
               " + significant errors).")
    section = "§7"

    def __init__(self, backend: green.Backend):
        self.backend = backend

    @classmethod
    def from_options(cls, judge: Mapping[str, Any], device: str | None = None, progress: bool = True) -> Green:
        known = ("judge_url", "judge_model", "concurrency", "allow_endpoints")
        return cls(green.backend_for(**{k: judge[k] for k in known if k in judge}, device=device, progress=progress,
                                     trust_remote_code=bool(judge.get("green_trust_remote_code"))))

    def run(self, predictions: Sequence[str], references: Sequence[str], dataset: DataUse | str | None):
        result = green.green(predictions, references, self.backend, dataset=dataset)
        scores = np.array([np.nan if s is None else s for s in result.scores], dtype=np.float64)
        detail = {f"green.{key}": [None if c is None else c[key] for c in result.counts] for key in green.COUNT_KEYS}
        extras = {"green": {"unparseable": result.unparseable, "failed": result.failed,
                            "truncated": result.truncated, "error_counts": result.totals}}
        return scores, detail, extras

    def signature(self) -> Signature:
        return green.signature(self.backend)
