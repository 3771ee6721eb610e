"""A cache file that is bad or hostile never stops a run and never changes a score: garbage, a truncated file, a
read-only one, one in a folder nobody may write, values swapped between keys (features and judge replies). Each gives
at most one warning line naming the file, never a traceback; the scores are a run without the cache's, and the file
is left as it was unless it can be repaired in place (a swapped value is replaced by the right one)."""

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank.cache import FeatureCache
from rexrank.cli import main
from rexrank.llm import Judge
from rexrank.llm.replies import ReplyCache

NAMESPACE = "hostile:1"
TEXTS = [f"Report {i}: the lungs are clear. " * (1 + i % 5) for i in range(300)]


def features(text: str) -> tuple[np.ndarray, ...]:
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return (np.random.default_rng(seed).standard_normal(200).astype(np.float32), np.array([len(text)]))


def compute(batch):
    return [features(t) for t in batch]


def same(got, texts=TEXTS) -> bool:
    return all(all(np.array_equal(a, b) for a, b in zip(g, features(t), strict=True)) for g, t in zip(got, texts))


def filled(path):
    FeatureCache(path, limit=None).get_or_compute(NAMESPACE, TEXTS, compute)
    return path


def warnings(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("rexrank: warning:")]


def swap(path, table: str) -> list[str]:
    """The attacker with the file: everything of the first two rows but their keys exchanged (whatever the columns,
    a digest beside the value included), with sqlite3 directly. Returns the two keys."""
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})") if row[1] != "key"]
        first, second = db.execute(f"SELECT key, {', '.join(columns)} FROM {table} ORDER BY key LIMIT 2").fetchall()
        assignments = ", ".join(f"{c} = ?" for c in columns)
        db.execute(f"UPDATE {table} SET {assignments} WHERE key = ?", (*second[1:], first[0]))
        db.execute(f"UPDATE {table} SET {assignments} WHERE key = ?", (*first[1:], second[0]))
    return [first[0], second[0]]


def _garbage(path):
    path.write_bytes(np.random.default_rng(0).bytes(20_000))


def _truncated_to(share):
    def truncate(path):
        filled(path)
        data = path.read_bytes()
        path.write_bytes(data[:int(len(data) * share)])
    return truncate


def _header_only(path):
    filled(path)
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize("spoil", [_garbage, _truncated_to(0.33), _truncated_to(0.9), _header_only],
                         ids=["garbage", "truncated-to-a-third", "truncated-to-90%", "header-only"])
def test_a_cache_file_that_is_not_a_database_gives_one_line_and_the_run_goes_on(tmp_path, capsys, spoil):
    path = tmp_path / "features.sqlite"
    spoil(path)
    before = path.read_bytes()
    capsys.readouterr()
    cache = FeatureCache(path)
    got = cache.get_or_compute(NAMESPACE, TEXTS, compute)
    again = FeatureCache(path).get_or_compute(NAMESPACE, TEXTS[:5], compute)  # a second scorer opening it
    assert same(got) and same(again, TEXTS[:5]) and cache.hits == 0
    [line] = warnings(capsys.readouterr().err)
    assert str(path) in line and "running without it" in line
    assert path.read_bytes() == before  # the user's file is theirs: not repaired, not removed


@pytest.mark.slow
def test_values_swapped_between_keys_are_never_used_and_are_replaced(tmp_path, capsys):
    path = filled(tmp_path / "features.sqlite")
    first, _ = swap(path, "features")
    with sqlite3.connect(path) as db:  # and a third row given the first's value alone
        db.execute("UPDATE features SET value = (SELECT value FROM features WHERE key = ?) WHERE key = "
                   "(SELECT key FROM features ORDER BY key LIMIT 1 OFFSET 2)", (first,))
    capsys.readouterr()
    recomputed = []
    cache = FeatureCache(path)
    got = cache.get_or_compute(NAMESPACE, TEXTS, lambda batch: recomputed.extend(batch) or compute(batch))
    assert same(got) and len(recomputed) == 3 and cache.rejected == 3 and cache.hits == len(TEXTS) - 3
    [line] = warnings(capsys.readouterr().err)
    assert str(path) in line and "never used" in line
    cache = FeatureCache(path)
    assert same(cache.get_or_compute(NAMESPACE, TEXTS, compute)) and cache.hits == len(TEXTS)  # replaced
    assert warnings(capsys.readouterr().err) == []


@pytest.mark.slow
def test_a_swapped_cache_gives_bertscore_a_run_without_the_cache_gives(tmp_path, monkeypatch, tiny_roberta, capsys):
    """Measured before the digest, on this tiny model: rescaled BERTScore -1.321 instead of -1.214, exit 0."""
    from fixtures.reports import reports

    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(tiny_roberta))
    from rexrank.scorers.bertscore import BertScore

    references, candidates = reports(6, seed=1), reports(6, seed=2)

    def bertscore(cache):
        scorer = BertScore(progress=False)
        scorer.cache = cache
        return scorer(candidates, references)

    plain = bertscore(FeatureCache(None))
    path = tmp_path / "features.sqlite"
    assert np.array_equal(bertscore(FeatureCache(path)), plain)
    swap(path, "features")
    assert np.array_equal(bertscore(FeatureCache(path)), plain)
    assert len(warnings(capsys.readouterr().err)) == 1


def test_a_judge_reply_stored_under_another_prompts_key_is_asked_again(fake_openai, tmp_path, capsys):
    fake_openai.replies = lambda prompt: f"answer to {prompt}"
    path = tmp_path / "cache.sqlite"

    def judge():
        return Judge(base_url=fake_openai.url, model=fake_openai.model, cache=path, progress=False)

    prompts = ["first pair", "second pair", "third pair"]
    assert [r.text for r in judge().complete(prompts, "v1", dataset=None)] == [f"answer to {p}" for p in prompts]
    swap(path, "judge_replies")
    capsys.readouterr()
    again = judge().complete(prompts, "v1", dataset=None)
    assert [r.text for r in again] == [f"answer to {p}" for p in prompts]
    assert fake_openai.calls == 5 and sum(r.cached for r in again) == 1  # the two swapped asked again, once each
    [line] = warnings(capsys.readouterr().err)
    assert str(path) in line and "asked again" in line
    assert [r.cached for r in judge().complete(prompts, "v1", dataset=None)] == [True] * 3  # replaced


# Permissions bind root only without CAP_DAC_OVERRIDE: as root (a container), the child runs with it dropped.
UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[3])
from test_cache_hostile import NAMESPACE, TEXTS, compute, same
from rexrank.cache import FeatureCache
from rexrank.llm.replies import ReplyCache

path, writable_probe = sys.argv[1], sys.argv[2]
try:  # the test's premise, checked: this process may not write there
    open(writable_probe, "ab").close()
    denied = False
except PermissionError:
    denied = True
cache = FeatureCache(path)
got = cache.get_or_compute(NAMESPACE, TEXTS, compute)
replies = ReplyCache(path)
with replies.writer() as put:
    put("k", "text", "stop", "model", "v1")
print(json.dumps({"denied": denied, "same": same(got), "hits": cache.hits, "mode": cache.mode,
                  "replies": len(replies.get(["k"]))}))
"""


def unprivileged(path, probe):
    if UNPRIVILEGED and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: file permissions cannot bind this test")
    done = subprocess.run([*UNPRIVILEGED, sys.executable, "-c", CHILD, str(path), str(probe),
                           os.path.dirname(__file__)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), warnings(done.stderr)


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_read_only_cache_is_read_and_nothing_is_stored(tmp_path):
    path = filled(tmp_path / "features.sqlite")
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        seen, lines = unprivileged(path, path)
    finally:
        path.chmod(0o644)
    assert seen["denied"] and seen["same"] and seen["hits"] == len(TEXTS) and seen["mode"] == "ro"
    assert seen["replies"] == 0  # the reply cache in the same file: read only as well
    [line] = lines  # one line, though both tables said it
    assert str(path) in line and "read-only" in line and "storing nothing new" in line
    assert path.read_bytes() == before


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("where", ["features.sqlite", "sub/features.sqlite"])
def test_a_cache_in_a_folder_nobody_may_write_gives_one_line_and_the_run_goes_on(tmp_path, where):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        seen, lines = unprivileged(folder / where, folder / "probe")
    finally:
        folder.chmod(0o755)
    assert seen["denied"] and seen["same"] and seen["hits"] == 0 and seen["mode"] is None
    [line] = lines
    assert str(folder / where) in line and "cannot be created" in line and "running without it" in line
    assert list(folder.iterdir()) == []


@pytest.mark.slow
def test_rexrank_score_with_a_garbage_cache_is_one_line_exit_0_and_the_scores_of_no_cache(tmp_path, monkeypatch,
                                                                                         capsys, tiny_roberta):
    from rexrank import demo

    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(tiny_roberta))
    args = ["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
            str(demo.DATASET), "--task", "findings", "--metrics", "bertscore", "--quiet", "--resamples", "10"]
    monkeypatch.setenv("REXRANK_CACHE", "off")
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    _garbage(tmp_path / "features.sqlite")
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "features.sqlite"))
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "garbage")]) == 0
    [line] = warnings(capsys.readouterr().err)
    assert str(tmp_path / "features.sqlite") in line
    table = "dataset.findings.per_study.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(written(tmp_path / "garbage", table)),
                                  pd.read_parquet(written(tmp_path / "plain", table)), check_exact=True)


def test_reply_cache_on_a_garbage_file_asks_the_judge_and_says_so_once(fake_openai, tmp_path, capsys):
    path = tmp_path / "cache.sqlite"
    _garbage(path)
    before = path.read_bytes()
    cache = ReplyCache(path)
    assert cache.mode is None and cache.get(["k"]) == {}
    judge = Judge(base_url=fake_openai.url, model=fake_openai.model, cache=path, progress=False)
    assert [r.text for r in judge.complete(["p"], "v1", dataset=None)] == ["ok"]
    [line] = warnings(capsys.readouterr().err)
    assert str(path) in line and path.read_bytes() == before
