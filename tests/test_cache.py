"""The feature cache under concurrent writers: several processes filling one SQLite file at once, overlapping
texts, never a lost, torn or wrong entry, never a 'database is locked' error."""

import hashlib
import multiprocessing

import numpy as np
import pytest

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


@pytest.mark.subprocess
@pytest.mark.slow
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


def big(text: str) -> tuple[np.ndarray, ...]:
    """A 40 KB feature, as a few dozen tokens' hidden states would be."""
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return (np.random.default_rng(seed).standard_normal(10_000).astype(np.float32),)


@pytest.mark.slow
def test_disk_use_stays_under_the_limit_and_the_entries_used_last_stay(tmp_path):
    path, limit = tmp_path / "features.sqlite", 1_000_000  # 1 MB: about 24 features of 40 KB
    cache, computed = FeatureCache(path, limit="1000000"), []

    def compute(batch):
        computed.extend(batch)
        return [big(t) for t in batch]

    references = [f"reference {i}" for i in range(10)]
    for system in range(8):  # each system against the same references: the references are used every time
        cache.get_or_compute(NAMESPACE, references + [f"system {system} report {i}" for i in range(10)], compute)
        assert cache.stored_bytes() <= limit
    assert computed.count("reference 0") == 1  # never evicted: used last by every system
    assert cache.evicted > 0 and path.stat().st_size < 3 * limit  # freed pages are reused or returned
    computed.clear()
    again = cache.get_or_compute(NAMESPACE, ["system 0 report 0", "reference 3"], compute)
    assert computed == ["system 0 report 0"]  # dropped long ago: computed again, and exactly the same
    assert all(np.array_equal(a[0], big(t)[0]) for a, t in zip(again, ["system 0 report 0", "reference 3"]))


def test_a_cache_written_before_the_bound_is_upgraded_and_bounded(tmp_path):
    import sqlite3

    path = tmp_path / "features.sqlite"
    with sqlite3.connect(path) as db:  # the layout of earlier rexrank versions: key and value only
        db.execute("CREATE TABLE features (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
    FeatureCache(path, limit=None).get_or_compute(NAMESPACE, ["old"], lambda b: [big(t) for t in b])
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX features_used")
        db.execute("CREATE TABLE old AS SELECT key, value FROM features")
        db.execute("DROP TABLE features")
        db.execute("ALTER TABLE old RENAME TO features")
    cache = FeatureCache(path, limit="100K")
    assert cache.stored_bytes() > 40_000  # its size was measured on opening
    got = cache.get_or_compute(NAMESPACE, ["old"], lambda b: [big(t) for t in b])
    # An entry from before the digest cannot be checked against its key: computed again once, then read.
    assert (cache.hits, cache.misses, cache.rejected) == (0, 1, 0) and np.array_equal(got[0][0], big("old")[0])
    got = cache.get_or_compute(NAMESPACE, ["old"], lambda b: [big(t) for t in b])
    assert cache.hits == 1 and np.array_equal(got[0][0], big("old")[0])
    cache.get_or_compute(NAMESPACE, ["new 1", "new 2"], lambda b: [big(t) for t in b])
    assert cache.stored_bytes() <= 100 * 1024


def test_the_limit_is_a_size_or_none():
    import pytest

    from rexrank.cache import size_limit
    from rexrank.errors import InputError

    assert size_limit("500M") == 500 * 2**20 and size_limit("1.5G") == int(1.5 * 2**30) and size_limit("none") is None
    assert size_limit("2048") == 2048 and size_limit("20GiB") == 20 * 2**30
    with pytest.raises(InputError, match="REXRANK_CACHE_LIMIT='lots'"):
        size_limit("lots")
