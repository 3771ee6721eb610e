"""What a code submission's private run will cost, from its smoke run, and whether the maintainers pay for it.

The maintainers pay for the GPU time of every submission's private run (10,000 studies per task). The smoke stage
times the model on SMOKE_STUDIES studies of a public split; a second run of one study (`after_smoke`) separates what
every run pays once (the sandbox, the interpreter, loading the weights) from what each study costs:
t(n) = fixed + n * per_study, fitted through the two points. A run of 8 studies alone would count the loading as
part of every study's time and make a batched 4-billion-parameter model look tens of hours longer than it is.

From that fit, the private run's GPU time (each of N GPUs loads the model once and runs its block of studies) is
compared with the maintainers' budget (REXRANK_GPU_HOURS_BUDGET, GPU-hours per submission): over it, the job stops
before the private stage with REFUSAL, one fixed sentence (the smoke run's own timings are the submitter's, but the
budget and the maintainers' arithmetic are not theirs to read). Under it, each later run gets a timeout of SAFETY
times its estimate (never past the budget), so a model slower on the private images than on the smoke studies
cannot run on the maintainers' money for the rest of a day. `rexrank.backend.jobs.plan` picks a job's flavor and timeout
from the same numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from rexrank.backend.jobs import PRIVATE_STUDIES, SAFETY
from rexrank.errors import InputError

BUDGET_VARIABLE = "REXRANK_GPU_HOURS_BUDGET"
DEFAULT_BUDGET_GPU_HOURS = 24.0
REFUSAL = ("The model's estimated running time on the private test set is more than the maintainers' budget for "
           "one submission: make it faster (batched generation, `runner: transformers` or `runner: vllm`) and "
           "push again.")


class OverBudget(InputError):
    """The private run would pass the budget: REFUSAL, nothing else."""

    def __init__(self):
        super().__init__(REFUSAL)


@dataclass(frozen=True)
class Estimate:
    """A model's running time: `fixed` seconds once per process, `per_study` seconds for each study."""

    fixed: float
    per_study: float

    def seconds(self, studies: int, processes: int = 1) -> float:
        """Wall seconds for `studies` split over `processes` (one GPU each), each loading the model once."""
        processes = max(processes, 1)
        return self.fixed + self.per_study * -(-studies // processes)

    def gpu_hours(self, studies: int, processes: int = 1) -> float:
        return max(processes, 1) * self.seconds(studies, processes) / 3600


def fit(one: tuple[int, float], many: tuple[int, float]) -> Estimate:
    """The line through (studies, seconds) of two runs. Timing noise can make the smaller run look slower per study
    than the larger allows: then the larger run's own mean (an upper bound) is the per-study time."""
    (n1, t1), (n2, t2) = sorted((one, many))
    if n2 <= n1:
        return Estimate(0.0, t2 / max(n2, 1))
    per_study = (t2 - t1) / (n2 - n1)
    if per_study <= 0:
        return Estimate(0.0, t2 / n2)
    return Estimate(max(t1 - n1 * per_study, 0.0), per_study)


def budget_gpu_hours(env: dict[str, str] | None = None) -> float:
    text = (os.environ if env is None else env).get(BUDGET_VARIABLE, "").strip()
    if not text:
        return DEFAULT_BUDGET_GPU_HOURS
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{BUDGET_VARIABLE}={text!r}: expected GPU-hours, a number") from None
    if not value > 0:
        raise InputError(f"{BUDGET_VARIABLE}={text!r}: expected a positive number of GPU-hours")
    return value


def check(estimate: Estimate, tasks: float, gpus: int, budget: float) -> float:
    """The timeout of each later run (one task on the private set's studies, split over `gpus`): SAFETY times its
    estimate, and never more than the budget allows it; OverBudget when every task together passes `budget`."""
    if tasks * estimate.gpu_hours(PRIVATE_STUDIES, gpus) > budget:
        raise OverBudget
    return min(SAFETY * estimate.seconds(PRIVATE_STUDIES, gpus), budget * 3600 / (max(gpus, 1) * tasks))


def after_smoke(smoke, time_one: Callable[[], object], tasks: float, gpus: int, timeout: float,
                budget: float | None = None) -> float:
    """The job's hook after its smoke stage (`smoke`: its rexrank.inference.runner.Run); `time_one` runs the model
    on one study the same way. The timeout for the stages after it (at most `timeout`); OverBudget to refuse."""
    one = time_one()
    estimate = fit((one.studies, one.seconds), (smoke.studies, smoke.seconds))
    return min(timeout, check(estimate, tasks, gpus, budget_gpu_hours() if budget is None else budget))
