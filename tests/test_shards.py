"""Sharded scoring: N shards merged give the unsharded result (BLEU-2 and ROUGE-L here: per-study scores are exact;
corpus BLEU-4 from its per-study counts, summed after the join), in one process and as two processes under
torchrun."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.shards import parse_shard, shard_rows

TASK = "findings_impression"
METRICS = "bleu2,bleu4,rouge_l"


def score(out, *extra):
    return main(["score", "--predictions", str(demo.predictions("demo-careful", TASK)), "--dataset",
                 str(demo.DATASET), "--dataset-name", "mimic-cxr", "--task", TASK, "--metrics", METRICS,
                 "--out", str(out), "--quiet", *extra])


def same_result(a, b):
    ra, rb = (json.loads(written(d, f"mimic-cxr.{TASK}.json").read_text()) for d in (a, b))
    assert ra["metrics"] == rb["metrics"] and ra["counts"] == rb["counts"]
    pd.testing.assert_frame_equal(*(pd.read_parquet(written(d, f"mimic-cxr.{TASK}.per_study.parquet")) for d in (a, b)))
    na, nb = (written(d, f"mimic-cxr.{TASK}.predictions.jsonl") for d in (a, b))
    assert na.read_text() == nb.read_text()


def test_three_shards_merged_equal_the_unsharded_run(tmp_path):
    assert score(tmp_path / "whole") == 0
    for i in range(3):
        assert score(tmp_path / "shards", "--shard", f"{i}/3") == 0
    shards = sorted((tmp_path / "shards").glob("*.parquet"))
    assert len(shards) == 3 and sum(len(pd.read_parquet(p)) for p in shards) == len(
        pd.read_parquet(written(tmp_path / "whole", f"mimic-cxr.{TASK}.per_study.parquet")))
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    same_result(tmp_path / "whole", tmp_path / "merged")


def test_a_missing_or_foreign_shard_is_refused(tmp_path, capsys):
    for i in range(2):
        assert score(tmp_path / "two", "--shard", f"{i}/2") == 0
    assert score(tmp_path / "three", "--shard", "0/3") == 0
    two = sorted((tmp_path / "two").glob("*.parquet"))
    assert main(["merge", str(two[0]), "--out", str(tmp_path / "m")]) == 2
    assert "shard(s) 1/2 missing; nothing merged" in capsys.readouterr().err
    assert main(["merge", *map(str, two), str(next((tmp_path / "three").glob("*.parquet"))), "--out",
                 str(tmp_path / "m")]) == 2
    assert "shards of different runs" in capsys.readouterr().err and not (tmp_path / "m").exists()


def test_shard_arguments(monkeypatch):
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "x/2", "1"):
        with pytest.raises(Exception, match="expected I/N"):
            parse_shard(bad)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert parse_shard("auto") == (2, 3)
    blocks = [shard_rows(pd.DataFrame({"x": range(10)}), i, 3)["x"].tolist() for i in range(3)]
    assert blocks == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.subprocess
@pytest.mark.slow
def test_two_processes_under_torchrun_merge_to_the_single_process_result(tmp_path):
    assert score(tmp_path / "whole") == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0",
               "-m", "rexrank.cli", "score", "--predictions", str(demo.predictions("demo-careful", TASK)),
               "--dataset", str(demo.DATASET), "--dataset-name", "mimic-cxr", "--task", TASK, "--metrics", METRICS,
               "--out", str(tmp_path / "ranks"), "--quiet", "--shard", "auto"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    shards = sorted((tmp_path / "ranks").glob("*.parquet"))
    assert [p.name for p in shards] == [f"mimic-cxr.{TASK}.demo-careful.shard-{i}-of-2.parquet" for i in range(2)]
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    same_result(tmp_path / "whole", tmp_path / "merged")
