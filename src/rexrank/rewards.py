"""Each metric of the registry as a reward function for TRL's `GRPOTrainer` (and any trainer of its convention).

    from rexrank.rewards import reward
    trainer = GRPOTrainer(model, reward_funcs=[reward("radgraph"), reward("bleu2")], train_dataset=...)

TRL calls a reward function as `f(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_extra=...,
log_metric=..., **columns)`, where `columns` are the training set's other columns, one value per completion; it wants
a list of floats, one per completion. `reward(name)` reads the reference of each completion from the column
`ground_truth` (`reference=` names another) and a completion as a string or as chat messages (the content of the last
assistant message). RadRScore reads `reports` too and ReXVQA accuracy `options`, as their `evaluate` modules do.

The number is the board's for that study: the per-study score the scorecard computes (the same scorer, the same
settings, signed alike), or, for a metric whose value is a statistic of sums (BLEU-4, the CheXbert label F1s), that
statistic over the study's own sufficient statistics: the board's value of a set of that one study. A metric the board
shows as 1 / its mean (RadCliQ, FineRadScore: lower is better per study) is rewarded negated: `-RadCliQ(study)`, so
that a higher reward is always better. A judged metric asks its judge (`judge_url`, `judge_model`) for each pair.

The references' features are computed once: kept in memory for the next steps (a reference comes back every epoch)
and, for a metric whose features are worth keeping (model outputs), read from and written to rexrank's feature cache
(`rexrank.cache`), so a second run starts warm. Completions are never cached: each is new.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

import numpy as np

from rexrank import stats
from rexrank.cache import FeatureCache, default_path
from rexrank.errors import InputError
from rexrank.functional import INPUTS, _spec, _split
from rexrank.scorers.base import Run

TRAINER_KWARGS = ("prompts", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments")


def text_of(item: Any, what: str = "completion") -> str:
    """A completion (or reference) as text: a string as it is; chat messages: the last assistant message's content
    (its text parts joined, for a content list)."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        item = [item]
    if isinstance(item, list) and item and all(isinstance(m, dict) and "content" in m for m in item):
        said = [m for m in item if m.get("role", "assistant") == "assistant"] or item
        content = said[-1]["content"]
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if isinstance(content, str):
            return content
    raise InputError(f"a {what} is a string or chat messages [{{'role': 'assistant', 'content': ...}}], not "
                     f"{type(item).__name__}")


def _per_row(statistic: str, table: np.ndarray) -> np.ndarray:
    """A statistic of sums (`stats.AGGREGATES`) of each study's own row: the board's value of a one-study set."""
    f = stats.AGGREGATES[statistic]
    return np.array([f(row) for row in np.asarray(table, dtype=np.float64)], dtype=np.float64)


class Reward:
    """A metric as a reward function (see the module's docstring); `reward(name, **options)` makes one."""

    def __init__(self, name: str, *, reference: str = "ground_truth", dataset: str | None = None,
                 device: str | None = None, batch_size: int | None = None, dtype: str = "fp32", **options):
        self.spec = made = _spec(name)
        self.settings, self.judge, self.inputs = _split(made, options)
        self.reference, self.dataset = reference, dataset
        self.negated = made.statistic == "inverse_mean"  # lower is better per study: rewarded as minus it
        self.__name__ = f"rexrank_{made.name}"  # TRL logs a reward by its function's name
        self._known: dict[str, dict[str, Any]] = {}  # scorer -> reference text -> features
        self.metric_set = None
        if made.report:
            from rexrank.scorecard import MetricSet

            options = {made.name: self.settings} if self.settings else None
            self.metric_set = MetricSet([made.name], device=device, batch_size=batch_size, progress=False,
                                        dtype=dtype, judge=self.judge or None, options=options).for_dataset(dataset)
            if self.metric_set.unavailable:
                raise InputError("; ".join(f"{k}: {v}" for k, v in self.metric_set.unavailable.items()))

    def __repr__(self) -> str:
        return f"reward({self.spec.name!r}, reference={self.reference!r})"

    def __call__(self, completions: Sequence, **kwargs) -> list[float]:
        if self.reference not in kwargs:
            raise InputError(f"{self.__name__}: no column {self.reference!r} in the batch (the reward reads each "
                             f"completion's reference from it; name another with reference=)")
        made = self.spec
        predictions = [text_of(c) for c in completions]
        references = [text_of(r, "reference") for r in kwargs[self.reference]]
        if len(predictions) != len(references):
            raise InputError(f"{len(predictions)} completions but {len(references)} references")
        values = self.values(predictions, references, {k: kwargs[k] for k in INPUTS.get(made.name, ()) if k in kwargs})
        return [float(-v if self.negated else v) for v in values]

    def values(self, predictions: list[str], references: list[str], inputs: dict | None = None) -> np.ndarray:
        """Each study's number as the board computes it (not negated)."""
        made = self.spec
        if not made.report:
            module = import_module(made.implementation)
            dataset = {"dataset": self.dataset} if self.dataset else {}
            out = module.compute(predictions, references, **{**self.inputs, **(inputs or {})}, **self.settings,
                                 **self.judge, **dataset)
            return np.asarray(out[f"{made.name}_per_sample"], dtype=np.float64)
        run = Run(predictions, references, self.dataset)  # as the scorecard runs it, on one batch
        for name, scorer in self.metric_set.scorers.items():
            candidates, refs = self._features(name, scorer, predictions, references)
            run.scores[name] = np.asarray(scorer.score(candidates, refs), dtype=np.float64)
            run.joined[name] = scorer.extras_columns(candidates, refs)
            run.signatures[name] = scorer.signature()
        table = run.scores[made.name] if made.per_text else made.table(
            self.metric_set.from_run[made.name].made_from(run).columns)
        return _per_row(made.statistic, table) if made.sufficient else table

    def _features(self, name: str, scorer, predictions: list[str], references: list[str]) -> tuple[list, list]:
        """The completions' features (computed now, each distinct text once) and the references' (kept)."""
        known = self._known.setdefault(name, {})
        missing = [t for t in dict.fromkeys(references) if t not in known]
        if missing:
            if scorer.cacheable:
                scorer.cache = scorer.cache or FeatureCache(default_path())
                made = scorer.cache.get_or_compute(scorer.cache_namespace(), missing, scorer.features)
            else:
                made = scorer.features(missing)
            known.update(zip(missing, made, strict=True))
        new = [t for t in dict.fromkeys(predictions) if t not in known]
        fresh = dict(zip(new, scorer.features(new), strict=True)) if new else {}
        return [known.get(t, fresh.get(t)) for t in predictions], [known[t] for t in references]


def reward(name: str, **options) -> Reward:
    """Metric `name` (or an alias) as a reward function `f(completions, ground_truth=..., **kwargs) -> list[float]`.
    `options`: the metric's spec's options and, for a judged one, its judge's (as `rexrank.functional`); `reference`
    (the column holding the references, default `ground_truth`), `dataset` (whose texts these are: BLEU-4 and ROUGE-L
    clean IU-Xray's as R2Gen does), `device`, `batch_size`, `dtype`."""
    return Reward(name, **options)


__all__ = ["Reward", "reward", "text_of"]
