"""Every metric of the registry as a plain function, computed as the board computes it.

    >>> from rexrank import functional as F
    >>> out = F.bleu2(["No pleural effusion."], ["No pleural effusion or pneumothorax."])
    >>> out.value, out.ci, out.signature                  # the dataset value, its 95% CI, how it was made

`rexrank.functional.<name>(predictions, references, **options)` exists for each name of `rexrank.scorers.REGISTRY`
(and each alias): the functions are made from the registry on first use (`__getattr__`; `__all__` and `dir()` list
them). Each runs the scorecard the CLI runs (`rexrank.scorecard.score`, one `MetricSet`): the value, the per-study
numbers and the CI are the board's for the same texts. RadRScore and ReXVQA accuracy are scored by their own modules
as `rexrank radrbench` and `rexrank vqa` score them, their per-item values estimated by `rexrank.stats.estimate`.

Options are the metric's spec's (`spec(name).options`: `bleu4`'s `tokenize`, `bertscore`'s `layer`), its judge's for
a judged metric (`judge_url`, `judge_model`, `allow_endpoints`, `concurrency`), the inputs RadRScore (`reports`) and
ReXVQA accuracy (`options`, each question's) take, and how it runs (`device`, `batch_size`, `dtype`, `dataset`,
`resamples`, `seed`); any other name is refused in one line naming it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module

import numpy as np

from rexrank import stats
from rexrank.errors import InputError
from rexrank.scorers import REGISTRY, MetricUnavailable, canonical
from rexrank.scorers.spec import Spec

JUDGE = ("judge_url", "judge_model", "allow_endpoints", "concurrency")  # what `MetricSet(judge=...)` reads
INPUTS = {"radrscore": ("reports",), "rexvqa_accuracy": ("options",)}  # what a metric reads beside the pairs


@dataclass(frozen=True, eq=False)
class Score:
    """One metric over a list of pairs: what the board shows and what it was made from."""

    name: str
    value: float  # the dataset value as the board shows it (1 / the mean for RadCliQ and FineRadScore)
    ci: tuple[float, float]  # its 95% percentile bootstrap interval over studies
    per_study: np.ndarray  # (n,) each study's score, or (n, k) its sufficient statistics (`columns`)
    columns: tuple[str, ...]  # the per-study table's columns `per_study` holds
    signature: str
    mean: float  # the mean of the per-study scores (NaN for a statistic of sums: an F1, corpus BLEU)

    def __float__(self) -> float:
        return float(self.value)


def options_of(made: Spec) -> tuple[str, ...]:
    """Every option name `made`'s function accepts beside how it runs."""
    return (*made.options, *(JUDGE if made.judged else ()), *INPUTS.get(made.name, ()))


def _spec(name: str) -> Spec:
    made = REGISTRY.get(canonical(name))
    if made is None:
        raise InputError(f"unknown metric {name!r}: known metrics are {', '.join(REGISTRY)}")
    return made


def _split(made: Spec, options: dict) -> tuple[dict, dict, dict]:
    """(the spec's settings, the judge's, the extra inputs), each option name checked."""
    allowed = options_of(made)
    for key in options:
        if key not in allowed:
            raise InputError(f"{made.name} has no option {key!r} (its options: {', '.join(allowed) or 'none'})")
    settings = {k: v for k, v in options.items() if k in made.options}
    judge = {k: v for k, v in options.items() if k in JUDGE}
    extra = {k: v for k, v in options.items() if k in INPUTS.get(made.name, ())}
    return settings, judge, extra


def score(name: str, predictions: Sequence[str], references: Sequence, *, resamples: int = stats.RESAMPLES,
          seed: int = stats.SEED, dataset: str | None = None, device: str | None = None, batch_size: int | None = None,
          dtype: str = "fp32", **options) -> Score:
    """Metric `name` (or an alias) over the pairs, as the board makes it (`rexrank.scorecard.score`)."""
    made = _spec(name)
    settings, judge, extra = _split(made, options)
    if not made.report:
        return _module_score(made, predictions, references, resamples, seed, dataset, {**settings, **judge, **extra})
    import pandas as pd

    from rexrank.reports import check_pairs
    from rexrank.scorecard import MetricSet
    from rexrank.scorecard import score as scored

    check_pairs(predictions, references)
    rows = pd.DataFrame({"study_id": [str(i) for i in range(len(predictions))], "prediction": list(predictions),
                         "reference": list(references)})
    metric_set = MetricSet([made.name], device=device, batch_size=batch_size, progress=False, dtype=dtype,
                           judge=judge or None, options={made.name: settings} if settings else None)
    card = scored(rows, metric_set, resamples, seed, dataset=dataset)
    if made.name not in card.metrics:
        raise MetricUnavailable(f"{made.name}: {card.skipped.get(made.name, 'not computed')}")
    result = card.metrics[made.name]
    table = made.table(card.per_study)
    mean = float(np.mean(table)) if not made.sufficient and len(table) else math.nan
    return _made(made, _number(result.value), (_number(result.low), _number(result.high)), table,
                 str(result.signature), mean)


def _module_score(made: Spec, predictions, references, resamples: int, seed: int, dataset: str | None,
                  options: dict) -> Score:
    """RadRScore's and ReXVQA accuracy's: their module's per-item values, estimated as every mean is."""
    module = import_module(made.implementation)
    out = module.compute(predictions, references, **options, **({"dataset": dataset} if dataset else {}))
    values = np.asarray(out[f"{made.name}_per_sample"], dtype=np.float64)
    found = stats.estimate(values, made.statistic, resamples, seed)
    return _made(made, found.value, (found.low, found.high), values, str(out["signature"]), found.mean)


def _made(made: Spec, value: float, ci: tuple[float, float], table: np.ndarray, signature: str, mean: float) -> Score:
    table = np.array(table, dtype=np.float64)
    table.flags.writeable = False  # a frozen result: its numbers are not to be edited in place
    return Score(made.name, value, ci, table, tuple(made.columns), signature, mean)


def _number(x: float | None) -> float:
    return math.nan if x is None else float(x)


@functools.cache
def _function(name: str):
    made = REGISTRY[name]

    def metric(predictions: Sequence[str], references: Sequence, **options) -> Score:
        return score(name, predictions, references, **options)

    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = __name__
    accepted = ", ".join(f"{k}={made.options[k]!r}" if k in made.options else k for k in options_of(made))
    metric.__doc__ = (f"{made.title}: {made.summary}\n\nOptions: {accepted or 'none'}; and device, batch_size, "
                      f"dtype, dataset, resamples, seed. Returns a `rexrank.functional.Score`.")
    return metric


def __getattr__(attr: str):
    if attr.startswith("_") or canonical(attr) not in REGISTRY:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return _function(canonical(attr))


__all__ = ["Score", "score", *REGISTRY]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
