"""CheXbert label F1 after a sharded run's merge and in a paired comparison: recomputed from the per-study TP/FP/FN
bitmasks, so a merged result equals the unsharded one exactly and A - B is the difference of the two values."""

import json

import numpy as np
import pandas as pd
import pytest
from fixtures.outputs import written
from fixtures.reports import reports

from rexrank import demo, stats
from rexrank.cli import main
from rexrank.scorers import AGGREGATED
from rexrank.scorers.label_f1 import MASKS
from rexrank.significance import paired

TASK = "findings_impression"
NAMES = list(AGGREGATED)


def score(out, *extra):
    return main(["score", "--predictions", str(demo.predictions("demo-careful", TASK)), "--dataset",
                 str(demo.DATASET), "--dataset-name", "mimic-cxr", "--task", TASK, "--metrics", ",".join(NAMES),
                 "--batch-size", "8", "--out", str(out), "--quiet", *extra])


@pytest.mark.slow
def test_three_shards_merged_give_the_unsharded_label_f1_exactly(local_models, tmp_path):
    assert score(tmp_path / "whole") == 0
    for i in range(3):
        assert score(tmp_path / "shards", "--shard", f"{i}/3") == 0
    shards = sorted((tmp_path / "shards").glob("*.parquet"))
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    whole, merged = (json.loads(written(tmp_path / d, f"mimic-cxr.{TASK}.json").read_text())
                     for d in ("whole", "merged"))
    for name in NAMES:
        assert merged["metrics"][name] == whole["metrics"][name], name  # value, CI, n and signature
        assert whole["metrics"][name]["value"] == whole["extras"]["chexbert_label_f1"][name.removeprefix("chexbert_")]
    tables = [pd.read_parquet(written(tmp_path / d, f"mimic-cxr.{TASK}.per_study.parquet"))
              for d in ("whole", "merged")]
    pd.testing.assert_frame_equal(tables[0][["study_id", *MASKS]], tables[1][["study_id", *MASKS]])


@pytest.mark.slow
def test_a_paired_comparison_of_label_f1_is_the_difference_of_the_two_values(local_models):
    from rexrank.scorecard import MetricSet
    from rexrank.scorecard import score as score_rows

    texts = reports(90, seed=12)
    metric_set = MetricSet(NAMES, progress=False, batch_size=8)
    cards = [score_rows(pd.DataFrame({"study_id": [f"s{i}" for i in range(30)], "prediction": texts[k:k + 30],
                                      "reference": texts[60:]}), metric_set, resamples=50) for k in (0, 30)]
    a, b = cards[0].per_study, cards[1].per_study.iloc[::-1]  # another order: paired by study id
    found = {c.metric: c for c in paired(a, b, trials=200)}
    assert set(NAMES) <= set(found)
    for name in NAMES:
        test = found[name].bootstrap
        assert test.delta == cards[0].metrics[name].value - cards[1].metrics[name].value
        assert found[name].statistic == AGGREGATED[name].statistic and found[name].studies == 30
        table_a = AGGREGATED[name].table(a)
        expected = stats.paired_bootstrap(table_a, AGGREGATED[name].table(cards[1].per_study), test.statistic, 200)
        assert test == expected and found[name].randomisation.p_value > 0
    assert not np.array_equal(AGGREGATED[NAMES[0]].table(a), AGGREGATED[NAMES[0]].table(cards[1].per_study))
