"""The feature cache under concurrent writers: several processes filling one SQLite file at once, overlapping
texts, never a lost, torn or wrong entry, never a 'database is locked' error."""

import hashlib
import multiprocessing

import numpy as np

from rexrank.cache import FeatureCache

NAMESPACE = "hammer:1"


def features(text: str) -> tuple[np.ndarray, ...]:
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return (np.random.default_rng(seed).standard_normal(64).astype(np.float32), np.array([len(text)]))


def fill(path: str, worker: int, rounds: int) -> int:
    """One process: rounds of 50 texts, half shared with the other workers, half its own; returns what it read."""
    cache, seen = FeatureCache(path), 0
    for r in range(rounds):
        texts = [f"shared report {r}-{i}" for i in range(25)] + [f"worker {worker} report {r}-{i}" for i in range(25)]
        got = cache.get_or_compute(NAMESPACE, texts, lambda batch: [features(t) for t in batch])
        for text, value in zip(texts, got, strict=True):
            expected = features(text)
            assert all(np.array_equal(a, b) for a, b in zip(value, expected, strict=True)), text
        seen += len(got)
    return seen


def test_four_processes_fill_one_cache_and_every_entry_is_right(tmp_path):
    path = str(tmp_path / "features.sqlite")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        seen = pool.starmap(fill, [(path, w, 20) for w in range(4)])
    assert seen == [1000] * 4
    cache = FeatureCache(path)
    texts = [f"shared report {r}-{i}" for r in range(20) for i in range(25)]
    texts += [f"worker {w} report {r}-{i}" for w in range(4) for r in range(20) for i in range(25)]

    def never(batch):
        raise AssertionError(f"{len(batch)} entries were lost")

    got = cache.get_or_compute(NAMESPACE, texts, never)
    assert cache.hits == len(texts) == 2500
    assert all(np.array_equal(v[0], features(t)[0]) for t, v in zip(texts, got))
