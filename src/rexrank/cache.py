"""A content-addressed feature cache in SQLite: the reference side of a leaderboard is computed once.

Keys are sha256(namespace, text), where the namespace is everything that changes a feature (metric,
model repo and commit or local fingerprint, settings). Values are numpy arrays, stored without pickle.
Location: `REXRANK_CACHE` (a file path, or `off`), else `$XDG_CACHE_HOME/rexrank/features.sqlite`.
SQLite's own locking makes concurrent readers and writers safe; a write is one transaction.

Each value is stored with a digest binding it to its key, sha256(key, value), checked on every read: a value stored
under another key (swapped rows, a foreign cache's entry, a damaged blob) is never used but computed again and
replaced (entries of rexrank before the digest have none and are computed again once). A cache file that cannot be
used is never a reason to stop a run: a file that is not a database (garbage, truncated) or cannot be created gives
one warning line naming it and the run goes on without it; a read-only one is read and nothing new is stored. The
scores are those of a run without the cache either way.

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
import sys
import time
import zipfile
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


def digest(key: str, value: bytes) -> str:
    """What ties a stored value to its key: a value read under another key, or altered, does not match."""
    return hashlib.sha256(key.encode() + b"\x00" + value).hexdigest()


def _pack(features: Features) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *features)
    return buffer.getvalue()


def _unpack(blob: bytes) -> Features:
    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        return tuple(arrays[f"arr_{i}"] for i in range(len(arrays.files)))


def open_db(path: Path, mode: str = "rw") -> sqlite3.Connection:
    """A connection to `path`: "rw" (created if absent), "ro" (read only), or "immutable" (read only, without the
    shared-memory file a WAL database needs, which a read-only folder cannot hold; a change by another process is
    not seen, and a page torn by one fails its read or its digest, never gives a wrong value)."""
    if mode == "rw":
        return sqlite3.connect(path, timeout=60)
    query = "mode=ro" if mode == "ro" else "immutable=1"
    return sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True, timeout=60)


@contextmanager
def connect(path: Path, mode: str = "rw") -> Iterator[sqlite3.Connection]:
    """One SQLite transaction on `path`: committed on success, rolled back on error, then closed."""
    db = open_db(path, mode)
    try:
        with db:
            yield db
    finally:
        db.close()


_warned: set[str] = set()


def warn_once(message: str) -> None:
    """A warning line on stderr, once per process: every scorer opens the cache file, and says it once."""
    if message not in _warned:
        _warned.add(message)
        print(f"rexrank: warning: {message}", file=sys.stderr, flush=True)


class Store:
    """One table of the cache file, opened to write if it can be, else to read, else not at all (`mode` "rw", "ro"
    or "immutable", or None), with one warning line naming the file. A failure later (a page that does not read, a
    full disk) also gives one line: a failed read leaves the cache out for the rest of the run, a failed write stops
    the storing. What uses a store catches nothing else: what the cache holds never changes a score."""

    table: str

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self.mode: str | None = None
        if self.path:
            self._open()

    def _setup(self, db: sqlite3.Connection) -> None:
        """Create or upgrade the table (in one immediate transaction: concurrent openers do it once)."""
        raise NotImplementedError

    def _connect(self):
        return connect(self.path, self.mode or "rw")

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = open_db(self.path)
            try:
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect on a new file: freed pages go back
                db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    self._setup(db)
            finally:
                db.close()
            self.mode = "rw"
            return
        except (sqlite3.Error, OSError) as err:
            failed = err
        if self.path.is_file() and _denied(failed):
            for mode in ("ro", "immutable"):
                try:
                    with connect(self.path, mode) as db:
                        held = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                          (self.table,)).fetchone()
                    self.mode = mode if held else None  # without the table there is nothing to read
                    warn_once(f"cache {self.path} is read-only here ({_reason(failed)}): reading it, storing "
                              "nothing new")
                    return
                except sqlite3.Error:
                    continue
        exists = self.path.exists()
        reason = "a folder, not a file" if self.path.is_dir() else _reason(failed)
        warn_once(f"cache {self.path}: {'cannot be read' if exists else 'cannot be created'} ({reason}); "
                  "running without it" + (" (move the file away to start a new one, or set REXRANK_CACHE=off)"
                                          if exists and not _denied(failed) else
                                          " (set REXRANK_CACHE to a file you can write, or off)"))

    def read_failed(self, err: Exception) -> None:
        warn_once(f"cache {self.path}: {_reason(err)} while reading; running without it from here (move the file "
                  "away to start a new one)")
        self.mode = None

    def write_failed(self, err: Exception) -> None:
        warn_once(f"cache {self.path}: {_reason(err)} while storing; storing nothing more in this run")
        if self.mode == "rw":
            self.mode = "ro"

    def columns(self, db: sqlite3.Connection) -> set[str]:
        return {row[1] for row in db.execute(f"PRAGMA table_info({self.table})")}


def _denied(err: Exception) -> bool:
    """Whether opening to write failed for want of permission (the file or its folder read-only)."""
    return isinstance(err, PermissionError) or isinstance(err, sqlite3.OperationalError) and any(
        words in str(err) for words in ("readonly", "read-only", "unable to open"))


def _reason(err: Exception) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


CHUNK = 1024  # texts computed and stored at once (the batches inside a chunk are still sorted by length)


class FeatureCache(Store):
    table = "features"

    def __init__(self, path: str | os.PathLike | None, limit: int | None | str = "env"):
        self.limit = size_limit() if limit == "env" else size_limit(limit) if isinstance(limit, str) else limit
        self.hits = self.misses = self.evicted = self.rejected = 0
        super().__init__(path)

    def _setup(self, db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        columns = self.columns(db)
        if "used" not in columns:  # a cache written before disk use was bounded
            db.execute("ALTER TABLE features ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
            db.execute("ALTER TABLE features ADD COLUMN used INTEGER NOT NULL DEFAULT 0")
            db.execute("UPDATE features SET size = length(value)")
        if "digest" not in columns:  # a cache written before values were tied to their keys
            db.execute("ALTER TABLE features ADD COLUMN digest TEXT")
        db.execute("CREATE INDEX IF NOT EXISTS features_used ON features (used)")

    def stored_bytes(self) -> int:
        """The size of every stored feature (the file is this plus SQLite's pages and free space)."""
        if not self.mode:
            return 0
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
                       compute: Callable[[list[str]], list[Features]], counted: bool = True) -> list[Features]:
        """Features of `texts`: cached ones read, the others computed in one call and stored. `counted` False: not
        in `hits` and `misses`, which count a metric's features per text (a by-product is stored beside them)."""
        if not self.mode:
            self.misses += len(texts) * counted
            return compute(list(texts))
        keys = [_key(namespace, t) for t in texts]
        found = self._read(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits += (len(keys) - len(missing)) * counted
        self.misses += len(missing) * counted
        for start in range(0, len(missing), CHUNK):  # stored chunk by chunk: an interrupted run keeps what it did
            chunk = missing[start:start + CHUNK]
            computed = compute([texts[i] for i in chunk])
            found.update((keys[i], f) for i, f in zip(chunk, computed))
            if self.mode == "rw":
                self._store([(keys[i], _pack(f)) for i, f in zip(chunk, computed, strict=True)])
        return [found[key] for key in keys]

    def _read(self, keys: list[str]) -> dict[str, Features]:
        """The stored features of `keys` whose digest is their key's (marked used now, when the file is writable)."""
        found: dict[str, Features] = {}
        rejected = 0
        now = time.time_ns()
        try:
            with self._connect() as db:
                checked = "digest" in self.columns(db)  # a read-only cache of rexrank before the digest: none is
                for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                    chunk = keys[start:start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(f"SELECT key, value, {'digest' if checked else 'NULL'} FROM features "
                                      f"WHERE key IN ({marks})", chunk)
                    for key, value, stored in rows:
                        features = _checked(key, value, stored)
                        if features is None:
                            rejected += stored is not None  # an entry from before the digest is no one's fault
                        else:
                            found[key] = features
                    if self.mode == "rw":
                        db.execute(f"UPDATE features SET used = ? WHERE key IN ({marks})", [now, *chunk])
        except sqlite3.Error as err:
            self.read_failed(err)
            return {}
        if rejected:
            self.rejected += rejected
            warn_once(f"cache {self.path}: stored features that are not their key's (swapped, foreign or damaged "
                      "entries) are never used: computed again" + (" and replaced" if self.mode == "rw" else ""))
        return found

    def _store(self, packed: list[tuple[str, bytes]]) -> None:
        try:
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO features (key, value, size, used, digest) "
                               "VALUES (?, ?, ?, ?, ?)",
                               [(key, blob, len(blob), time.time_ns(), digest(key, blob)) for key, blob in packed])
            self._evict()
        except sqlite3.Error as err:
            self.write_failed(err)


def _checked(key: str, value: bytes, stored: str | None) -> Features | None:
    """The features in `value` when `stored` is its digest under `key` and it unpacks, else None."""
    if stored is None or not isinstance(value, bytes) or digest(key, value) != stored:
        return None
    try:
        return _unpack(value)
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile):  # a digest made for a value that is no npz
        return None
