"""A content-addressed feature cache in SQLite: the reference side of a leaderboard is computed once.

Keys are sha256(namespace, text), where the namespace is everything that changes a feature (metric,
model repo and commit or local fingerprint, settings). Values are numpy arrays, stored without pickle.
Location: `REXRANK_CACHE` (a file path, or `off`), else `$XDG_CACHE_HOME/rexrank/features.sqlite`.
SQLite's own locking makes concurrent readers and writers safe; a write is one transaction.

Disk use is bounded: past `REXRANK_CACHE_LIMIT` (default 20G; `none`: no bound) the entries used longest ago are
dropped until the cache is back under 90% of it. Eviction, not a lossy format, keeps every feature exact: a dropped
one is computed again when asked for. BERTScore's token states dominate (a hidden state per token, about 180 KB per
report), so the default holds the references of the private ReXGradient set (about 3.6 GB) several times over.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

Features = tuple[np.ndarray, ...]


def default_path() -> Path | None:
    setting = os.environ.get("REXRANK_CACHE")
    if setting and setting.lower() in ("off", "0", "none", "false"):
        return None
    if setting:
        return Path(setting).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rexrank" / "features.sqlite"


DEFAULT_LIMIT = "20G"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size_limit(text: str | None = None) -> int | None:
    """`REXRANK_CACHE_LIMIT` in bytes: `500M`, `20G`, `1.5T`, a plain number of bytes, or `none` (unbounded)."""
    text = (text if text is not None else os.environ.get("REXRANK_CACHE_LIMIT") or DEFAULT_LIMIT).strip()
    if text.lower() in ("none", "off", "unlimited"):
        return None
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
    if not found:
        from rexrank.errors import InputError

        raise InputError(f"REXRANK_CACHE_LIMIT={text!r}: give a size such as 500M or 20G, or none")
    return int(float(found[1]) * _UNITS[found[2].upper()])


def _key(namespace: str, text: str) -> str:
    return hashlib.sha256(f"{namespace}\x00{text}".encode()).hexdigest()


def _pack(features: Features) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *features)
    return buffer.getvalue()


def _unpack(blob: bytes) -> Features:
    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        return tuple(arrays[f"arr_{i}"] for i in range(len(arrays.files)))


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """One SQLite transaction on `path`: committed on success, rolled back on error, then closed."""
    db = sqlite3.connect(path, timeout=60)
    try:
        with db:
            yield db
    finally:
        db.close()


CHUNK = 1024  # texts computed and stored at once (the batches inside a chunk are still sorted by length)


class FeatureCache:
    def __init__(self, path: str | os.PathLike | None, limit: int | None | str = "env"):
        self.path = Path(path) if path else None
        self.limit = size_limit() if limit == "env" else size_limit(limit) if isinstance(limit, str) else limit
        self.hits = self.misses = self.evicted = 0
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect on a new file: freed pages go back
                db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
                columns = {row[1] for row in db.execute("PRAGMA table_info(features)")}
                if "used" not in columns:  # a cache written before disk use was bounded
                    db.execute("ALTER TABLE features ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
                    db.execute("ALTER TABLE features ADD COLUMN used INTEGER NOT NULL DEFAULT 0")
                    db.execute("UPDATE features SET size = length(value)")
                db.execute("CREATE INDEX IF NOT EXISTS features_used ON features (used)")

    def _connect(self):
        return connect(self.path)

    def stored_bytes(self) -> int:
        """The size of every stored feature (the file is this plus SQLite's pages and free space)."""
        with self._connect() as db:
            return int(db.execute("SELECT COALESCE(SUM(size), 0) FROM features").fetchone()[0])

    def _evict(self) -> None:
        """Drop the entries used longest ago until the cache holds at most 90% of its limit."""
        with self._connect() as db:
            total = int(db.execute("SELECT COALESCE(SUM(size), 0) FROM features").fetchone()[0])
            if self.limit is None or total <= self.limit:
                return
            excess, dropped = total - int(0.9 * self.limit), []
            for key, size in db.execute("SELECT key, size FROM features ORDER BY used"):
                if excess <= 0:
                    break
                dropped.append(key)
                excess -= size
            for start in range(0, len(dropped), 500):
                chunk = dropped[start:start + 500]
                db.execute(f"DELETE FROM features WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            self.evicted += len(dropped)
        with self._connect() as db:
            db.execute("PRAGMA incremental_vacuum")

    def get_or_compute(self, namespace: str, texts: Sequence[str],
                       compute: Callable[[list[str]], list[Features]]) -> list[Features]:
        """Features of `texts`: cached ones read, the others computed in one call and stored."""
        if not self.path:
            self.misses += len(texts)
            return compute(list(texts))
        keys = [_key(namespace, t) for t in texts]
        found: dict[str, Features] = {}
        now = time.time_ns()
        with self._connect() as db:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(f"SELECT key, value FROM features WHERE key IN ({marks})", chunk)
                found.update((key, _unpack(value)) for key, value in rows)
                db.execute(f"UPDATE features SET used = ? WHERE key IN ({marks})", [now, *chunk])
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits, self.misses = self.hits + len(keys) - len(missing), self.misses + len(missing)
        for start in range(0, len(missing), CHUNK):  # stored chunk by chunk: an interrupted run keeps what it did
            chunk = missing[start:start + CHUNK]
            computed = compute([texts[i] for i in chunk])
            packed = [(keys[i], _pack(f)) for i, f in zip(chunk, computed, strict=True)]
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO features VALUES (?, ?, ?, ?)",
                               [(key, blob, len(blob), time.time_ns()) for key, blob in packed])
            found.update((keys[i], f) for i, f in zip(chunk, computed))
            self._evict()
        return [found[key] for key in keys]
