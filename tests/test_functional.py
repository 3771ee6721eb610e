"""rexrank.functional: a function per registry metric, made from the registry, computing what the scorecard (the
CLI's path) computes: the value, the per-study numbers, the CI, the signature."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rexrank import functional
from rexrank.errors import InputError
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import ALIASES, REGISTRY, spec

PREDICTIONS = ["Heart size is normal.", "Small left effusion, stable.", "No pneumothorax.", ""]
REFERENCES = ["Heart size is normal.", "Small left pleural effusion, unchanged.", "Mild cardiomegaly.", "No edema."]


def test_a_function_per_registry_metric_and_alias_listed_for_discovery():
    assert set(REGISTRY) <= set(functional.__all__) and set(REGISTRY) <= set(dir(functional))
    for name in REGISTRY:
        assert getattr(functional, name).__name__ == name and spec(name).title in getattr(functional, name).__doc__
    for alias, name in ALIASES.items():
        assert getattr(functional, alias) is getattr(functional, name)
    with pytest.raises(AttributeError):
        functional.no_such_metric  # noqa: B018


@pytest.mark.parametrize("name", [n for n, s in REGISTRY.items() if s.kind in ("scorer", "composite", "aggregated")])
def test_each_function_gives_the_scorecards_numbers(name, local_models):
    out = getattr(functional, name)(PREDICTIONS, REFERENCES, batch_size=8, resamples=200)
    rows = pd.DataFrame({"study_id": [str(i) for i in range(4)], "prediction": PREDICTIONS, "reference": REFERENCES})
    card = score(rows, MetricSet([name], batch_size=8, progress=False), resamples=200)
    result = card.metrics[name]
    assert out.value == result.value and out.ci == (result.low, result.high)
    assert out.signature == str(result.signature) and out.columns == tuple(spec(name).columns)
    np.testing.assert_array_equal(out.per_study, spec(name).table(card.per_study))
    assert out.per_study.shape[0] == len(PREDICTIONS) and not out.per_study.flags.writeable


def test_options_are_the_specs_and_a_bad_one_is_named():
    none = functional.bleu4(PREDICTIONS, REFERENCES, tokenize="none")
    assert "|tok:none|" in none.signature and none.value != functional.bleu4(PREDICTIONS, REFERENCES).value
    with pytest.raises(InputError, match=r"^bleu4 has no option 'tokenise' \(its options: tokenize\)$"):
        functional.bleu4(PREDICTIONS, REFERENCES, tokenise="none")
    with pytest.raises(InputError, match="unknown metric 'bleu5'"):
        functional.score("bleu5", PREDICTIONS, REFERENCES)


def test_rexvqa_accuracy_takes_each_questions_options():
    options = [["A. No effusion", "B. Effusion"]] * 3
    out = functional.rexvqa_accuracy(["B", "The answer is A.", "?"], ["B", "B", "A"], options=options)
    assert out.value == pytest.approx(1 / 3) and list(out.per_study) == [1.0, 0.0, 0.0] and out.ci[0] <= out.value


def test_importing_rexrank_stays_light_and_opens_functional_by_name():
    probe = ("import sys, rexrank; before = sorted(m for m in sys.modules if m.startswith('rexrank.'));"
             "value = rexrank.functional.bleu2(['a b c'], ['a b c']).value;"
             "print(before, value, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["[]", "1.0", "False"], done.stderr[-2000:]
