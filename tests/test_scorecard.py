"""The scorecard at scale: the per-text scorers run chunk by chunk (features of one chunk of one metric in memory),
the columns and extras assembled are those of one pass over everything, and a run killed between chunks (Ctrl-C,
SIGKILL) continues from the last finished chunk to the result an uninterrupted run writes."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank import demo
from rexrank.cli import main
from rexrank.results import Result, result_paths
from rexrank.scorecard import MetricSet, score
from rexrank.scorers.bleu import Bleu2

DATASET = str(demo.DATASET)
PREDICTIONS = str(demo.predictions("demo-careful", "findings_impression"))  # 48 studies


def rows(n: int = 48) -> pd.DataFrame:
    studies = [json.loads(line) for line in demo.DATASET.read_text().splitlines()][:n]
    return pd.DataFrame({"study_id": [s["study_id"] for s in studies],
                         "reference": [f"{s['findings'] or ''} {s['impression'] or ''}".strip() for s in studies],
                         "prediction": [f"{s['impression'] or 'No acute process.'}" for s in studies]})


def feature_calls(monkeypatch, *classes) -> list[int]:
    """How many texts each call of `features` got, for each scorer class given."""
    calls: list[int] = []
    for cls in classes:
        original = cls.features

        def counted(self, texts, original=original):
            calls.append(len(texts))
            return original(self, texts)

        monkeypatch.setattr(cls, "features", counted)
    return calls


@pytest.mark.slow
def test_features_are_made_a_chunk_at_a_time_and_the_card_is_one_pass(local_models, monkeypatch):
    from rexrank.scorers.radgraph import RadGraphF1
    from rexrank.scorers.semb import SembScore

    metrics = ["bleu2", "semb_score", "radgraph"]
    table = rows()
    bleu, models = feature_calls(monkeypatch, Bleu2), feature_calls(monkeypatch, SembScore, RadGraphF1)
    chunked = score(table, MetricSet(metrics, progress=False, chunk=5), resamples=100)
    assert len(bleu) == 10 and max(bleu + models) <= 2 * 5  # 48 studies in 10 chunks: a chunk's texts, never more
    assert len(models) >= 2 * 5  # the model metrics too (a chunk whose texts are all cached asks for none)
    bleu.clear(), models.clear()
    whole = score(table, MetricSet(metrics, progress=False, chunk=1000), resamples=100)
    assert len(bleu) == 1 and models == []  # one pass; the model metrics' features all come from the cache
    pd.testing.assert_frame_equal(chunked.per_study, whole.per_study, check_exact=True)
    assert chunked.metrics == whole.metrics and chunked.extras == whole.extras
    assert set(chunked.extras) == {"chexbert_label_f1", "f1radgraph_rewards"}  # joined from every chunk's pairs


def test_ctrl_c_between_chunks_resumes_from_the_last_finished_one(tmp_path, monkeypatch):
    table, folder = rows(), tmp_path / "partial"
    whole = score(table, MetricSet(["bleu2"], progress=False, chunk=8), resamples=100)
    calls = feature_calls(monkeypatch, Bleu2)
    original = Bleu2.score

    def interrupted(self, candidates, references):
        if len(calls) == 4:  # the fourth chunk's features are made, then the user presses Ctrl-C
            raise KeyboardInterrupt
        return original(self, candidates, references)

    monkeypatch.setattr(Bleu2, "score", interrupted)
    with pytest.raises(KeyboardInterrupt):
        score(table, MetricSet(["bleu2"], progress=False, chunk=8), resamples=100, checkpoint=folder)
    assert sorted(p.name for p in folder.glob("chunk-*")) == [f"chunk-0000{i}.npz" for i in range(3)]
    monkeypatch.setattr(Bleu2, "score", original)
    calls.clear()
    resumed = score(table, MetricSet(["bleu2"], progress=False, chunk=8), resamples=100, checkpoint=folder)
    assert len(calls) == 3  # chunks 3, 4 and 5 of 6
    pd.testing.assert_frame_equal(resumed.per_study, whole.per_study, check_exact=True)
    assert resumed.metrics == whole.metrics


def test_a_checkpoint_of_another_run_is_not_used(tmp_path, monkeypatch):
    folder = tmp_path / "partial"
    score(rows(), MetricSet(["bleu2"], progress=False, chunk=8), resamples=10, checkpoint=folder)
    other = rows().assign(prediction=lambda f: f["prediction"] + " Stable.")
    calls = feature_calls(monkeypatch, Bleu2)
    card = score(other, MetricSet(["bleu2"], progress=False, chunk=8), resamples=10, checkpoint=folder)
    assert len(calls) == 6  # other predictions: every chunk scored again, none taken from the old run
    fresh = score(other, MetricSet(["bleu2"], progress=False, chunk=8), resamples=10)
    pd.testing.assert_frame_equal(card.per_study, fresh.per_study, check_exact=True)
    calls.clear()
    score(other, MetricSet(["bleu2"], progress=False, chunk=6), resamples=10, checkpoint=folder)
    assert len(calls) == 8  # another chunk size: another run


KILLED = """
import os, signal, sys
from rexrank.cli import main
from rexrank.scorers.bleu import Bleu2

original, seen = Bleu2.score, []
def score(self, candidates, references):
    seen.append(1)
    if len(seen) == 3:  # two chunks kept, the third being scored: killed as the OOM killer kills, no cleanup
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, candidates, references)
Bleu2.score = score
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_run_killed_by_sigkill_ends_with_the_result_an_uninterrupted_run_writes(tmp_path):
    args = ["score", "--predictions", PREDICTIONS, "--dataset", DATASET, "--task", "findings_impression",
            "--metrics", "bleu2", "--quiet", "--chunk", "10"]
    killed = subprocess.run([sys.executable, "-c", KILLED, *args, "--out", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=300, env=os.environ | {"PYTHONHASHSEED": "0"})
    assert killed.returncode == -signal.SIGKILL
    files = result_paths(tmp_path / "run", "dataset", "findings_impression", "demo-careful")
    partial = tmp_path / "run" / ".partial" / files[0].stem  # the model's own checkpoint
    assert sorted(p.name for p in partial.glob("chunk-*")) == ["chunk-00000.npz", "chunk-00001.npz"]
    assert not files[0].exists()
    assert main([*args, "--out", str(tmp_path / "run")]) == 0  # the same command again
    assert main([*args, "--out", str(tmp_path / "once")]) == 0
    assert not (tmp_path / "run" / ".partial").exists()  # kept only until the result is written
    for path in files[1:]:
        assert path.read_bytes() == (tmp_path / "once" / path.name).read_bytes()
    again, once = (Result.read(tmp_path / d / files[0].name).to_dict() for d in ("run", "once"))
    assert {**again, "created": None} == {**once, "created": None}


HELD = """
import os, sys, time
from pathlib import Path
from rexrank.cli import main
from rexrank.scorers.bleu import Bleu2

original, seen, release = Bleu2.score, [], Path(os.environ["RELEASE"])
def score(self, candidates, references):
    seen.append(1)
    while len(seen) == 2 and not release.exists():  # the first chunk is kept; the run waits in its second
        time.sleep(0.05)
    return original(self, candidates, references)
Bleu2.score = score
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.subprocess
@pytest.mark.slow
def test_two_runs_into_one_out_never_mix_their_scores(tmp_path):
    """Two systems scored into one --out at once: before the lock the second cleared the first's checkpoint, and
    the first read the second's chunks as its own (a result named for one system held 20 of 48 per-study scores of
    the other, its companion hashes matching). Now each model's files and checkpoint are its own: another model runs
    beside the first, and the same model again stops at once with one line naming the first's pid."""
    out, release = tmp_path / "out", tmp_path / "release"
    task = ["--task", "findings_impression"]
    common = ["score", "--dataset", DATASET, "--metrics", "bleu2", "--quiet", "--chunk", "8", "--resamples", "10"]
    careful, template = (str(demo.predictions(key, "findings_impression")) for key in ("demo-careful", "demo-template"))
    first = subprocess.Popen([sys.executable, "-c", HELD, *common, *task, "--predictions", careful, "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=os.environ | {"RELEASE": str(release)})
    mine, theirs = (result_paths(out, "dataset", "findings_impression", m) for m in ("demo-careful", "demo-template"))
    try:
        kept = out / ".partial" / mine[0].stem / "chunk-00000.npz"
        for _ in range(1200):
            if kept.exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert kept.exists(), first.communicate()
        cli = [sys.executable, "-m", "rexrank.cli", *common]
        again = subprocess.run([*cli, *task, "--predictions", careful, "--out", str(out)], capture_output=True,
                               text=True, timeout=300)
        other = subprocess.run([*cli, *task, "--predictions", template, "--out", str(out)], capture_output=True,
                               text=True, timeout=300)
        release.touch()
        _, first_err = first.communicate(timeout=300)
    finally:
        release.touch()
        first.kill() if first.poll() is None else None
    assert first.returncode == 0, first_err
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert again.stderr.strip() == (f"rexrank: error: another rexrank score is writing {out / mine[0].stem} (pid "
                                    f"{first.pid}): wait for it to end, or give this run its own --out")
    assert other.returncode == 0, other.stderr  # another model: its own files, not locked out
    assert not (out / ".partial").exists()

    def alone(predictions: str, folder: str) -> pd.DataFrame:
        assert main([*common, *task, "--predictions", predictions, "--out", str(tmp_path / folder)]) == 0
        return pd.read_parquet(written(tmp_path / folder, "dataset.findings_impression.per_study.parquet"))

    careful_alone, template_alone = alone(careful, "careful"), alone(template, "template")
    assert (careful_alone["bleu2"] != template_alone["bleu2"]).all()  # every study tells the two systems apart
    assert Result.read(mine[0]).model.name == "demo-careful"  # the file's name less its task
    pd.testing.assert_frame_equal(pd.read_parquet(mine[1]), careful_alone, check_exact=True)
    pd.testing.assert_frame_equal(pd.read_parquet(theirs[1]), template_alone, check_exact=True)


def test_a_chunk_of_another_run_is_not_read_even_under_this_runs_name(tmp_path, monkeypatch):
    """Where a lock does not hold (a file system without locks, a folder copied in), each chunk's own run key keeps
    it out: another run's chunks put under this run's run.json, and a chunk file of garbage, are scored again."""
    from rexrank.scorecard import Checkpoint, _plan, _run_key

    other, ours = tmp_path / "other", tmp_path / "ours"
    table = rows()
    changed = table.assign(prediction=lambda f: f["prediction"] + " Stable.")
    score(changed, MetricSet(["bleu2"], progress=False, chunk=8), resamples=10, checkpoint=other)
    metric_set = MetricSet(["bleu2"], progress=False, chunk=8)
    key = _run_key(table, metric_set, [n for n in _plan(["bleu2"]) if n in metric_set.scorers], 8)
    ours.mkdir()
    (ours / "run.json").write_text(json.dumps({"run": key}) + "\n")  # this run's name over the other's chunks
    for chunk in other.glob("chunk-*.npz"):
        chunk.rename(ours / chunk.name)
    (ours / "chunk-00005.npz").write_bytes(b"PK\x03\x04 not a zip at all")
    assert len(Checkpoint(ours, key).resumed) == 6
    calls = feature_calls(monkeypatch, Bleu2)
    card = score(table, metric_set, resamples=10, checkpoint=ours)
    assert len(calls) == 6  # none of the other run's chunks, nor the torn one, was taken
    fresh = score(table, MetricSet(["bleu2"], progress=False, chunk=8), resamples=10)
    pd.testing.assert_frame_equal(card.per_study, fresh.per_study, check_exact=True)
