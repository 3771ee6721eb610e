"""rexrank.rewards: each metric as a reward function of TRL's convention, giving the board's per-study number
(negated where lower is better), with the references' features computed once across steps."""

import math

import pytest

from rexrank import functional
from rexrank.errors import InputError
from rexrank.rewards import reward, text_of
from rexrank.scorers import REGISTRY, spec

REFERENCES = ["Heart size is normal.", "Small left pleural effusion, unchanged.", "Mild cardiomegaly.", "No edema."]
COMPLETIONS = ["Heart size is normal.", [{"role": "assistant", "content": "Small left effusion, stable."}],
               "No pneumothorax.", [{"role": "user", "content": "x"}, {"role": "assistant", "content": ""}]]
TEXTS = [text_of(c) for c in COMPLETIONS]
# What GRPOTrainer passes beside the columns (trl's GRPOTrainer._calculate_rewards)
TRAINER = {"prompts": ["Write the findings."] * 4, "completion_ids": [[1, 2]] * 4, "trainer_state": None,
           "log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None}
PAIRED = [n for n, s in REGISTRY.items() if s.kind in ("scorer", "composite", "aggregated")]


@pytest.mark.parametrize("name", PAIRED)
def test_a_reward_is_the_boards_per_study_number(name, local_models):
    made = spec(name)
    got = reward(name, batch_size=8)(COMPLETIONS, ground_truth=REFERENCES, **TRAINER)
    if made.sufficient:  # the board's value of a set of that one study
        want = [functional.score(name, [p], [r], resamples=10).value for p, r in zip(TEXTS, REFERENCES)]
    else:
        want = list(functional.score(name, TEXTS, REFERENCES, resamples=10).per_study)
    if made.statistic == "inverse_mean":  # lower is better per study: rewarded negated
        want = [-w for w in want]
    assert all(isinstance(g, float) for g in got) and len(got) == len(COMPLETIONS)
    # the same scorer and settings; a model's floats may differ in the last bits with the batch's make-up
    tolerance = 0 if not made.models and not made.needs else 1e-6
    assert got == pytest.approx(want, abs=tolerance, nan_ok=True), name


def test_the_references_features_are_computed_once_across_steps(local_models):
    rewarding = reward("bertscore", batch_size=8)
    scorer = rewarding.metric_set.scorers["bertscore"]
    seen = []
    made = scorer.features
    scorer.features = lambda texts: seen.extend(texts) or made(texts)
    first = rewarding(["Mild edema.", "No effusion."], ground_truth=REFERENCES[:2], **TRAINER | {"prompts": [0, 0]})
    assert set(REFERENCES[:2]) <= set(seen)
    seen.clear()
    second = rewarding(["Mild edema.", "Clear lungs."], ground_truth=REFERENCES[:2])
    assert sorted(seen) == ["Clear lungs.", "Mild edema."]  # the completions only: no reference again
    assert second[0] == first[0]


def test_the_contract_refuses_in_one_line():
    rewarding = reward("bleu2")
    with pytest.raises(InputError, match="no column 'ground_truth'"):
        rewarding(["a"], solution=["a"])
    assert reward("bleu2", reference="solution")(["a b"], solution=["a b"]) == [1.0]
    with pytest.raises(InputError, match="a completion is a string or chat messages"):
        rewarding([3], ground_truth=["a"])
    with pytest.raises(InputError, match="bleu2 has no option 'layer'"):
        reward("bleu2", layer=5)
    assert rewarding.__name__ == "rexrank_bleu2" and math.isclose(rewarding(["No."], ground_truth=["No."])[0], 1.0)


def test_a_lower_is_better_metric_is_negated(local_models):
    got = reward("radcliq_v1", batch_size=8)(TEXTS, ground_truth=REFERENCES)
    raw = functional.radcliq_v1(TEXTS, REFERENCES, resamples=10).per_study
    assert got == pytest.approx([-x for x in raw], abs=1e-6)


@pytest.mark.slow
def test_two_grpo_steps_on_the_tiny_stand_ins(tmp_path, local_models):
    pytest.importorskip("trl")
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    import grpo_tiny

    history = grpo_tiny.train(tmp_path, steps=2, metrics=("bleu2", "radcliq_v1"))
    steps = [h for h in history if "reward" in h]
    assert len(steps) == 2 and all(-10 < h["rewards/rexrank_radcliq_v1/mean"] < 10 for h in steps), history
    assert all(0 <= h["rewards/rexrank_bleu2/mean"] <= 1 for h in steps)
