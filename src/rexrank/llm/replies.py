"""Judge replies in SQLite, one row per prompt, written as each reply arrives: a rerun or a resumed run asks only
what is missing. Failures are never stored. Keys come from `Judge.key` (model, prompt version, messages, decoding).
The table lives beside the feature cache, in the same file and under the same `REXRANK_CACHE` rules.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rexrank.cache import connect


class ReplyCache:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            db.execute("CREATE TABLE IF NOT EXISTS judge_replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                       "finish_reason TEXT, model TEXT, prompt_version TEXT)")

    def _connect(self):
        return connect(self.path)

    def get(self, keys: list[str]) -> dict[str, tuple[str, str | None]]:
        """(text, finish_reason) of the keys that are stored."""
        found = {}
        with self._connect() as db:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[start:start + 500]
                rows = db.execute("SELECT key, text, finish_reason FROM judge_replies WHERE key IN "
                                  f"({','.join('?' * len(chunk))})", chunk)
                found.update((key, (text, finish)) for key, text, finish in rows)
        return found

    @contextmanager
    def writer(self) -> Iterator[Callable[[str, str, str | None, str, str], None]]:
        """`put(key, text, finish_reason, model, prompt_version)`, each reply committed at once. One connection for
        the whole batch: closing the last connection to a WAL database checkpoints it, which costs an fsync."""
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("PRAGMA synchronous=NORMAL")  # no fsync per reply: a killed run keeps them, an OS crash may not

        def put(key: str, text: str, finish_reason: str | None, model: str, prompt_version: str) -> None:
            with db:
                db.execute("INSERT OR REPLACE INTO judge_replies VALUES (?, ?, ?, ?, ?)",
                           (key, text, finish_reason, model, prompt_version))

        try:
            yield put
        finally:
            db.close()
