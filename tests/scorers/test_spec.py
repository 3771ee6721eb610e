"""One metric shape: every metric of the registry is a `Spec` whose parts agree with each other and with what reads
them (the statistics, the per-study table, the options a scorer takes, the record of the published figures)."""

import inspect

import numpy as np
import pandas as pd
import pytest

from rexrank import stats
from rexrank.scorers import ALIASES, METRICS, REGISTRY, SCORERS, spec
from rexrank.scorers.spec import RUNTIME, Kind


@pytest.mark.parametrize("name", list(REGISTRY))
def test_a_spec_is_whole_and_its_statistic_reads_its_columns(name):
    made = spec(name)
    assert made.name == name and made.kind in Kind and made.version and made.title and made.summary
    assert made.section.startswith("§") and made.empty_prediction
    assert made.statistic in stats.KNOWN
    assert set(made.columns.values()) <= {"score", "count", "mask"}
    # a value made from column sums has sufficient statistics; a value made from a mean has its one score column
    assert made.sufficient == (made.statistic in stats.AGGREGATES)
    assert made.sufficient or list(made.columns) == [name]
    assert all(need in REGISTRY for need in made.needs)
    rows = 5
    table = made.table({column: np.ones(rows, dtype=np.int64) for column in made.columns})
    assert table.shape[0] == rows and table.ndim == (2 if made.sufficient else 1)


def test_report_metrics_are_the_registry_but_radrbenchs_and_rexvqas():
    assert METRICS == tuple(n for n, s in REGISTRY.items() if s.kind not in ("reasoning", "vqa"))
    assert {"radrscore", "rexvqa_accuracy"} <= set(REGISTRY) and not {"radrscore", "rexvqa_accuracy"} & set(METRICS)
    assert all(spec(alias) is spec(name) for alias, name in ALIASES.items())
    with pytest.raises(KeyError):
        spec("bleu5")


@pytest.mark.parametrize("name", list(SCORERS))
def test_a_scorers_options_are_its_constructors_settings_with_their_defaults(name):
    """Every keyword that changes the number is an option, with the default the constructor has: what `compute`
    passes on and the signature records. How it runs (device, batch size, precision, progress) is not an option."""
    made = spec(name)
    parameters = inspect.signature(made.implementation.__init__).parameters
    for key, default in made.options.items():
        assert parameters[key].default == default and key not in RUNTIME
    assert {p for p in parameters if p not in ("self", "runtime") and p not in RUNTIME} == set(made.options)


def test_bertscores_layer_is_an_option_the_published_layer_its_default_apart_from_the_record():
    from rexrank.scorers.bertscore import BASELINES, LAYER, MODEL, PUBLISHED

    made = spec("bertscore")
    assert made.options["layer"] == LAYER and PUBLISHED["layer"] == str(LAYER) and made.published == PUBLISHED
    assert made.options["baseline"] == BASELINES[(MODEL, LAYER)]["F"]


def test_bertscores_layer_changes_the_signature_and_the_baseline_follows_it(local_models):
    from rexrank.official import departures
    from rexrank.scorers.bertscore import BASELINES, MODEL

    signature = SCORERS["bertscore"](layer=4, progress=False).signature()
    assert signature.settings["layer"] == "4" and signature.settings["rescale"] == f"F:{BASELINES[(MODEL, 4)]['F']}"
    assert any("layer 4" in d for d in departures(signature))
    with pytest.raises(ValueError, match="layer must be one of"):
        SCORERS["bertscore"](layer=9)


def test_the_estimate_of_each_kind_is_its_statistic_of_its_table():
    """The scorecard's estimates read the spec alone: a mean of scores, 1/mean, an F1 of summed masks, a corpus BLEU of
    summed counts."""
    from rexrank.scorecard import estimates
    from rexrank.signature import Signature

    rng = np.random.default_rng(0)
    n = 40
    per_study = pd.DataFrame({"study_id": [str(i) for i in range(n)], "bleu2": rng.random(n),
                              "radcliq_v1": rng.random(n) + 0.5,
                              "chexbert.tp": rng.integers(1, 1 << 14, n), "chexbert.fp": np.zeros(n, dtype=np.int64),
                              "chexbert.fn": np.zeros(n, dtype=np.int64)})
    match = rng.integers(0, 5, (n, 4)) * np.array([4, 3, 2, 1])
    for k in range(4):
        per_study[f"bleu4.match{k + 1}"] = match[:, k]
        per_study[f"bleu4.total{k + 1}"] = np.maximum(0, 20 - k)
    per_study["bleu4.length"], per_study["bleu4.reference"] = 20, 24
    names = ("bleu2", "radcliq_v1", "chexbert_micro_f1_14", "bleu4")
    made = estimates(per_study, {m: Signature(m, "1") for m in names}, resamples=50)
    assert made["bleu2"].value == per_study["bleu2"].mean()
    assert made["radcliq_v1"].value == 1 / per_study["radcliq_v1"].mean()
    assert made["chexbert_micro_f1_14"].value == 1.0  # only true positives
    sums = spec("bleu4").table(per_study).sum(axis=0)
    assert made["bleu4"].value == float(stats.corpus_bleu(sums)) and 0 < made["bleu4"].value < 1
