"""A content-addressed feature cache in SQLite: the reference side of a leaderboard is computed once.

Keys are sha256(namespace, text), where the namespace is everything that changes a feature (metric,
model repo and commit or local fingerprint, settings). Values are numpy arrays, stored without pickle.
Location: `REXRANK_CACHE` (a file path, or `off`), else `$XDG_CACHE_HOME/rexrank/features.sqlite`.
SQLite's own locking makes concurrent readers and writers safe; a write is one transaction.
"""

from __future__ import annotations

import hashlib
import io
import os
import sqlite3
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
    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self.hits = self.misses = 0
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def _connect(self):
        return connect(self.path)

    def get_or_compute(self, namespace: str, texts: Sequence[str],
                       compute: Callable[[list[str]], list[Features]]) -> list[Features]:
        """Features of `texts`: cached ones read, the others computed in one call and stored."""
        if not self.path:
            self.misses += len(texts)
            return compute(list(texts))
        keys = [_key(namespace, t) for t in texts]
        found: dict[str, Features] = {}
        with self._connect() as db:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[start:start + 500]
                rows = db.execute(f"SELECT key, value FROM features WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk)
                found.update((key, _unpack(value)) for key, value in rows)
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits, self.misses = self.hits + len(keys) - len(missing), self.misses + len(missing)
        for start in range(0, len(missing), CHUNK):  # stored chunk by chunk: an interrupted run keeps what it did
            chunk = missing[start:start + CHUNK]
            computed = compute([texts[i] for i in chunk])
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO features VALUES (?, ?)",
                               [(keys[i], _pack(f)) for i, f in zip(chunk, computed, strict=True)])
            found.update((keys[i], f) for i, f in zip(chunk, computed))
        return [found[key] for key in keys]
