"""Judge replies in SQLite, one row per prompt, written as each reply arrives: a rerun or a resumed run asks only
what is missing. Failures are never stored. Keys come from `Judge.key` (model, prompt version, messages, decoding).
The table lives beside the feature cache, in the same file and under the same `REXRANK_CACHE` rules, and as the
features are, each reply is stored with a digest binding it to its key: a reply stored under another prompt's key
(swapped rows, a foreign cache's) is never used but asked again. A file that cannot be opened or written gives one
warning line and the judge runs without it (`rexrank.cache.Store`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rexrank.cache import Store, digest, open_db, warn_once


def reply_digest(key: str, text: str, finish_reason: str | None) -> str:
    return digest(key, json.dumps([text, finish_reason], ensure_ascii=False).encode())


class ReplyCache(Store):
    table = "judge_replies"

    def __init__(self, path: str | os.PathLike):
        self.rejected = 0
        super().__init__(path)

    def _setup(self, db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS judge_replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                   "finish_reason TEXT, model TEXT, prompt_version TEXT)")
        if "digest" not in self.columns(db):  # replies stored before they were tied to their keys: asked again
            db.execute("ALTER TABLE judge_replies ADD COLUMN digest TEXT")

    def get(self, keys: list[str]) -> dict[str, tuple[str, str | None]]:
        """(text, finish_reason) of the keys that are stored, each under its own key."""
        found = {}
        if not self.mode:
            return found
        rejected = 0
        try:
            with self._connect() as db:
                checked = "digest" if "digest" in self.columns(db) else "NULL"
                for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                    chunk = keys[start:start + 500]
                    rows = db.execute(f"SELECT key, text, finish_reason, {checked} FROM judge_replies WHERE key IN "
                                      f"({','.join('?' * len(chunk))})", chunk)
                    for key, text, finish, stored in rows:
                        if stored is not None and isinstance(text, str) and (finish is None or isinstance(
                                finish, str)) and reply_digest(key, text, finish) == stored:
                            found[key] = (text, finish)
                        else:
                            rejected += stored is not None  # a reply from before the digest is no one's fault
        except sqlite3.Error as err:
            self.read_failed(err)
            return {}
        if rejected:
            self.rejected += rejected
            warn_once(f"cache {self.path}: stored judge replies that are not their prompt's (swapped, foreign or "
                      "damaged entries) are never used: asked again")
        return found

    @contextmanager
    def writer(self) -> Iterator[Callable[[str, str, str | None, str, str], None]]:
        """`put(key, text, finish_reason, model, prompt_version)`, each reply committed at once. One connection for
        the whole batch: closing the last connection to a WAL database checkpoints it, which costs an fsync. A
        cache that cannot be written takes nothing (one warning line); the replies are still returned."""
        if self.mode != "rw":
            yield lambda *reply: None
            return
        try:
            db = open_db(self.path)
            db.execute("PRAGMA synchronous=NORMAL")  # no fsync per reply: a killed run keeps them, an OS crash may not
        except sqlite3.Error as err:
            self.write_failed(err)
            yield lambda *reply: None
            return

        def put(key: str, text: str, finish_reason: str | None, model: str, prompt_version: str) -> None:
            if self.mode != "rw":
                return
            try:
                with db:
                    db.execute("INSERT OR REPLACE INTO judge_replies (key, text, finish_reason, model, prompt_version, "
                               "digest) VALUES (?, ?, ?, ?, ?, ?)",
                               (key, text, finish_reason, model, prompt_version,
                                reply_digest(key, text, finish_reason)))
            except sqlite3.Error as err:
                self.write_failed(err)

        try:
            yield put
        finally:
            db.close()
