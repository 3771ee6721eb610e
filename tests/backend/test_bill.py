"""The inference job's bill: the private run estimated from the smoke run, refused over the maintainers' budget,
and a job's flavor and timeout sized from it (rexrank.backend.bill, rexrank.backend.jobs.plan)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rexrank.backend import bill, jobs
from rexrank.errors import InputError


@dataclass(frozen=True)
class Run:  # the two fields of rexrank.inference.runner.Run the bill reads
    studies: int
    seconds: float


def test_two_runs_separate_the_loading_from_each_study():
    estimate = bill.fit((1, 62.0), (8, 76.0))  # 60 s to start and load, 2 s a study
    assert estimate == bill.Estimate(60.0, 2.0)
    assert estimate.seconds(10_000) == 60 + 20_000
    assert estimate.seconds(10_000, 4) == 60 + 2 * 2500  # each GPU loads the model and runs a quarter
    assert estimate.gpu_hours(10_000, 4) == pytest.approx(4 * 5060 / 3600)
    # 8 studies alone would have counted the loading in every study: 9.5 s each, 26 hours instead of 5.6
    assert 76.0 / 8 * 10_000 / 3600 > 4 * estimate.seconds(10_000) / 3600


def test_noisy_timings_fall_back_to_the_larger_run_s_mean():
    assert bill.fit((1, 30.0), (8, 24.0)) == bill.Estimate(0.0, 3.0)  # one study slower than eight: no slope
    assert bill.fit((8, 80.0), (8, 80.0)) == bill.Estimate(0.0, 10.0)
    assert bill.fit((8, 20.0), (1, 13.0)).per_study == 1.0  # either order


def test_over_the_budget_the_job_refuses_with_one_fixed_sentence():
    slow = bill.Estimate(60.0, 9.0)  # 25 GPU-hours a task
    with pytest.raises(bill.OverBudget) as refused:
        bill.check(slow, tasks=1, gpus=1, budget=24.0)
    assert str(refused.value) == bill.REFUSAL and "9.0" not in str(refused.value)
    assert isinstance(refused.value, InputError)  # the job's stage handler words it for the pull request
    # Under it: each run may take SAFETY times its estimate, never more than its share of the budget.
    fast = bill.Estimate(60.0, 0.5)
    assert bill.check(fast, tasks=2, gpus=1, budget=24.0) == jobs.SAFETY * (60 + 5000)
    assert bill.check(bill.Estimate(0, 4.0), tasks=2, gpus=1, budget=24.0) == 24 * 3600 / 2
    with pytest.raises(bill.OverBudget):  # two tasks of 40,060 s: 22.3 GPU-hours over a budget of 20
        bill.check(bill.Estimate(60.0, 4.0), tasks=2, gpus=1, budget=20.0)


def test_after_the_smoke_run_one_study_is_timed_and_the_timeout_never_grows(monkeypatch):
    timed = []

    def one():
        timed.append(1)
        return Run(1, 62.0)

    monkeypatch.setenv(bill.BUDGET_VARIABLE, "100")
    assert bill.after_smoke(Run(8, 76.0), one, tasks=1, gpus=1, timeout=24 * 3600.0) == jobs.SAFETY * 20_060
    assert timed == [1]
    assert bill.after_smoke(Run(8, 76.0), one, tasks=1, gpus=1, timeout=600.0) == 600.0
    monkeypatch.setenv(bill.BUDGET_VARIABLE, "5")
    with pytest.raises(bill.OverBudget):
        bill.after_smoke(Run(8, 76.0), one, tasks=1, gpus=1, timeout=600.0)


@pytest.mark.parametrize("text, says", [("soon", "expected GPU-hours"), ("-1", "positive")])
def test_a_bad_budget_setting_is_named(text, says):
    with pytest.raises(InputError, match=says):
        bill.budget_gpu_hours({bill.BUDGET_VARIABLE: text})
    assert bill.budget_gpu_hours({}) == bill.DEFAULT_BUDGET_GPU_HOURS


def test_the_job_takes_the_cheapest_flavor_that_finishes_within_a_day():
    # 2 s a study, 2 tasks, doubled: 80,000 s on one GPU, past a day with the setup; 4 L4s (cheaper than 2 H200s)
    flavor, gpus, timeout = jobs.plan(20, tasks=2, seconds_per_study=2.0, fixed_seconds=60.0)
    assert (flavor, gpus) == ("l4x4", 4)
    assert timeout == jobs.SETUP_SECONDS + 2 * jobs.SAFETY * (60 + 2.0 * 2500)
    assert jobs.plan(20, tasks=1, seconds_per_study=0.3)[:2] == ("l4x1", 1)  # batched: one GPU is enough
    assert jobs.plan(100, tasks=2, seconds_per_study=30.0)[:2] == ("h200x8", 8)  # never enough: the most there are
    with pytest.raises(InputError, match="no HF Jobs flavor"):
        jobs.plan(200, tasks=1, seconds_per_study=1.0)
