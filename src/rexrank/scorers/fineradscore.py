"""FineRadScore in the scorecard: `rexrank.fineradscore` through a judge endpoint (docs/metrics.md §8)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rexrank import fineradscore
from rexrank.llm.guard import DataUse
from rexrank.scorers.base import Judged
from rexrank.signature import Signature


class FineRadScore(Judged):
    name = "fineradscore"
    version = fineradscore.VERSION
    statistic = "inverse_mean"  # the board's 1/FineRadScore
    bounds = (0.0, math.inf)  # severities 0-4, per study their max or their sum
    details = {"fineradscore.max": "number", "fineradscore.sum": "number", "fineradscore.corrections": "text"}
    empty_prediction = "judged as written: no line to correct, so only inserted lines (usually severe)"
    summary = ("An LLM judge corrects the prediction line by line and grades each correction's severity (0-4); per "
               "study the maximum; the board shows 1 / the mean.")
    section = "§8"

    def __init__(self, judge: fineradscore.Backend, shots: fineradscore.Shots | str | None = None, how: str = "max"):
        fineradscore.aggregate([], how)
        self.judge, self.shots, self.how = judge, fineradscore.shots_for(shots), how

    @classmethod
    def from_options(cls, judge: Mapping[str, Any], device: str | None = None, progress: bool = True
                     ) -> FineRadScore:
        endpoint = fineradscore.judge_for(judge.get("judge_url"), judge.get("judge_model"),
                                          concurrency=judge.get("concurrency", 8),
                                          allow_endpoints=judge.get("allow_endpoints", ()), progress=progress)
        return cls(endpoint, judge.get("fineradscore_shots"))

    def run(self, predictions: Sequence[str], references: Sequence[str], dataset: DataUse | str | None):
        result = fineradscore.fineradscore(predictions, references, self.judge, shots=self.shots, how=self.how,
                                           dataset=dataset)
        scores = np.array([np.nan if s is None else s for s in result.scores], dtype=np.float64)
        detail = {"fineradscore.max": result.max_severity, "fineradscore.sum": result.sum_severity,
                  "fineradscore.corrections": [None if c is None else json.dumps([x.to_dict() for x in c])
                                               for c in result.corrections]}
        extras = {"fineradscore": {"aggregate": self.how, "mean_max": result.mean_of("max"),
                                   "mean_sum": result.mean_of("sum"), "unparseable": result.unparseable,
                                   "failed": result.failed, "truncated": result.truncated,
                                   "repaired": result.repaired}}
        return scores, detail, extras

    def signature(self) -> Signature:
        return fineradscore.signature(self.judge, self.shots, self.how)
