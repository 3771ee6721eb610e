"""The submission rules recompute CheXbert label F1 from the per-study TP/FP/FN bitmasks: a forged value, or a table
whose counts do not make the result's value, is refused."""

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from fixtures.reports import reports

from rexrank.results import ModelInfo, Result
from rexrank.rules.contents import metric_problems, per_study_problems
from rexrank.rules.parquet import check_per_study
from rexrank.scorers import AGGREGATED
from rexrank.scorers.label_f1 import MASKS

NAMES = list(AGGREGATED)


@pytest.fixture
def made(local_models, tmp_path):
    """rexrank's own result and per-study table of the four metrics, as the rules read them."""
    import pandas as pd

    from rexrank.scorecard import MetricSet, score

    texts = reports(60, seed=4)
    rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(30)], "prediction": texts[:30], "reference": texts[30:]})
    card = score(rows, MetricSet(NAMES, progress=False, batch_size=8), resamples=50)
    result = Result(ModelInfo("m"), "ds", "test", "findings", card.metrics, {"scored": 30})
    checked = check_per_study(card.write_per_study(tmp_path / "t.parquet", "ds", "test", "findings").read_bytes())
    return result, checked, tuple(rows["study_id"])


def test_rexranks_own_table_passes(made):
    result, checked, ids = made
    assert per_study_problems(result, checked.table, ids, checked.about) == []
    assert all(metric_problems(name, m, 30) == [] for name, m in result.metrics.items())


def test_a_forged_value_is_recomputed_from_the_counts_and_refused(made):
    result, checked, ids = made
    name = "chexbert_macro_f1_5"
    real = result.metrics[name]
    lift = min(0.05, 1 - real.high)  # stays inside [0, 1] and inside its own shifted CI: only the counts tell
    forged = replace(real, value=real.value + lift, mean=real.value + lift, low=real.low + lift, high=real.high + lift)
    result = replace(result, metrics={**result.metrics, name: forged})
    assert metric_problems(name, forged, 30) == []  # self-consistent on its face
    problems = per_study_problems(result, checked.table, ids, checked.about)
    assert problems == [f"{name}: its value {forged.value!r} is not the {real.value!r} its per-study counts make"]


def with_column(table: pa.Table, name: str, values) -> pa.Table:
    return table.set_column(table.column_names.index(name), name, pa.array(values, type=pa.int64()))


def test_a_condition_both_true_and_false_positive_is_refused(made):
    result, checked, ids = made
    tp, fp = (checked.table.column(c).to_numpy() for c in MASKS[:2])
    table = with_column(checked.table, MASKS[1], fp | (tp & -tp))  # a true positive's lowest bit made a false one too
    assert "counts one condition twice" in "; ".join(per_study_problems(result, table, ids, checked.about))


def test_bits_past_the_14_conditions_and_integer_masks_only(made):
    result, checked, ids = made
    fn = checked.table.column(MASKS[2]).to_numpy()
    table = with_column(checked.table, MASKS[2], np.where(np.arange(len(fn)) == 0, fn | (1 << 20), fn))
    assert "bits past the 14 CheXbert conditions" in "; ".join(per_study_problems(result, table, ids, checked.about))
    floats = checked.table.set_column(checked.table.column_names.index(MASKS[0]), MASKS[0],
                                      pa.array(checked.table.column(MASKS[0]).to_numpy().astype(float)))
    assert f"column {MASKS[0]!r} is double, expected an integer" in per_study_problems(result, floats, ids,
                                                                                        checked.about)
