"""The Arena's votes: one record a line of JSONL, kept on the Hub in a dataset repo.

A record is `{"voter", "study_id", "dataset", "task", "model_a", "model_b", "winner", "time"}`: `model_a` is the model
whose report was shown as A (sides are drawn at random per vote, so the share of wins for A measures position bias),
`winner` one of "a", "b", "tie", "both_bad", `time` UTC as `YYYY-MM-DDTHH:MM:SSZ`. The voter is an HMAC-SHA256 of the
account's id under the maintainers' key (a Space secret): the same account always gets the same voter, and nobody
without the key can tell who voted or test a guessed name. The official ReXrank Arena kept the user id and name
in its sheet beside each choice; we keep neither.

The Space appends each vote to its own file (`votes-<uuid>.jsonl`, one per process, so two processes never write one
file), flushed to disk before the voter is told it counted, and a `huggingface_hub.CommitScheduler` pushes the folder
to the dataset repo's `data/` every few minutes and once more on exit. A file already on the Hub is only ever
appended to, so the next push of a restarted process on the same disk carries whatever the last one had not pushed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import threading
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from rexrank.errors import InputError

WINNERS = ("a", "b", "tie", "both_bad")
FIELDS = ("voter", "study_id", "dataset", "task", "model_a", "model_b", "winner", "time")
TIME = "%Y-%m-%dT%H:%M:%SZ"
MAX_LINE = 4096  # bytes: a record is a few hundred; a longer line is not one of ours
IN_REPO = "data"  # the votes' folder in the dataset repo


@dataclass(frozen=True)
class Vote:
    voter: str
    study_id: str
    dataset: str
    task: str
    model_a: str
    model_b: str
    winner: str
    time: str

    @property
    def pair(self) -> tuple[str, str]:
        """The two models, in name order: the same pair whichever side each was shown on."""
        return tuple(sorted((self.model_a, self.model_b)))  # type: ignore[return-value]

    @property
    def day(self) -> str:
        return self.time[:10]

    @property
    def chosen(self) -> str | None:
        """The model the reader chose; None for a tie or both bad."""
        return {"a": self.model_a, "b": self.model_b}.get(self.winner)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


def voter_id(account: str, key: bytes) -> str:
    """The voter an account is recorded as: HMAC-SHA256(key, account id), hex. Give the account's immutable id (the
    OAuth profile's `sub`), not its user name, which its owner can change (and with it start afresh)."""
    if len(key) < 16:
        raise InputError("the Arena's voter key must be at least 16 bytes (set ARENA_VOTER_KEY as a Space secret)")
    return hmac.new(key, account.encode("utf-8"), hashlib.sha256).hexdigest()


def now() -> str:
    return datetime.now(UTC).strftime(TIME)


def parse(line: str, where: str) -> Vote:
    """One record, checked; InputError naming `where` (file and line)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: a vote is a JSON object, not {type(data).__name__}")
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    bad = [f for f in FIELDS if not isinstance(data[f], str) or not data[f]]
    if bad:
        raise InputError(f"{where}: {', '.join(bad)} must be non-empty text")
    if not re.fullmatch(r"[0-9a-f]{64}", data["voter"]):
        raise InputError(f"{where}: voter is not a keyed hash (64 hex digits): a vote never names its account")
    if data["winner"] not in WINNERS:
        raise InputError(f"{where}: winner {data['winner']!r:.40}, expected one of {', '.join(WINNERS)}")
    if data["model_a"] == data["model_b"]:
        raise InputError(f"{where}: model_a and model_b are both {data['model_a']!r:.60}")
    try:
        datetime.strptime(data["time"], TIME)
    except ValueError:
        raise InputError(f"{where}: time {data['time']!r:.40} is not UTC YYYY-MM-DDTHH:MM:SSZ") from None
    return Vote(**{f: data[f] for f in FIELDS})


def vote_files(where: str | Path) -> list[Path]:
    """A votes file, or the *.jsonl files of a folder (a download of the votes repo: its `data/` too)."""
    where = Path(where)
    if where.is_file():
        return [where]
    if not where.is_dir():
        raise InputError(f"{where}: no such votes file or folder")
    files = sorted(p for p in where.rglob("*.jsonl") if p.is_file())
    if not files:
        raise InputError(f"{where}: a folder with no *.jsonl votes file")
    return files


def read_votes(where: str | Path) -> list[Vote]:
    """Every vote of a file or folder, in file and line order; blank lines skipped, a bad one named (file:line)."""
    votes = []
    for path in vote_files(where):
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                if len(raw) > MAX_LINE:
                    raise InputError(f"{path}:{number}: a line of {len(raw):,} bytes, more than a vote's {MAX_LINE:,}")
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"{path}:{number}: not UTF-8") from None
                if line.strip():
                    votes.append(parse(line, f"{path}:{number}"))
    return votes


class VoteLog:
    """The Space's side: `add` appends a vote to this process's file and syncs it; the scheduler pushes the folder to
    `repo_id` (a dataset) under `data/` every `every` minutes and at exit. `scheduler=False` keeps it local (tests,
    or a Space without a token)."""

    def __init__(self, folder: str | Path, repo_id: str | None = None, token: str | None = None,
                 every: float = 5, scheduler: bool = True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / f"votes-{uuid.uuid4().hex}.jsonl"
        self.scheduler = None
        self._lock = threading.Lock()
        if scheduler and repo_id:
            from huggingface_hub import CommitScheduler

            self.scheduler = CommitScheduler(repo_id=repo_id, repo_type="dataset", folder_path=self.folder,
                                             path_in_repo=IN_REPO, every=every, token=token, private=True,
                                             allow_patterns=["*.jsonl"])

    def add(self, vote: Vote) -> None:
        """Appended whole and on disk before this returns; the scheduler's lock keeps a push from reading half."""
        parse(vote.to_json(), "vote")  # what is written is what read_votes accepts
        lock = self.scheduler.lock if self.scheduler else self._lock
        with lock, self.path.open("a", encoding="utf-8") as f:
            f.write(vote.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())

    def push(self):
        """Push now (the scheduler's own queue, so never two commits at once); None without a scheduler."""
        return self.scheduler.trigger().result() if self.scheduler else None

    def close(self) -> None:
        """The app is closed: push what is on disk once more, then stop the scheduler (a stopped one skips its exit
        push, and a running one would push for the rest of the process: a test's app, a host's restart). A push
        that fails leaves the votes on disk, as a failed scheduled push does."""
        if self.scheduler is None:
            return
        try:
            self.push()
        except Exception as err:  # noqa: BLE001  (the Hub's: the votes stay on disk for the next process)
            logging.getLogger(__name__).warning("the votes' last push failed: %s", err)
        finally:
            self.scheduler.stop()

    def votes(self) -> list[Vote]:
        """The votes on this disk, every process's file."""
        return read_votes(self.folder) if any(self.folder.glob("*.jsonl")) else []


def hub_votes(repo_id: str, token: str | None = None, local: Path | None = None) -> list[Vote]:
    """The votes the repo holds, with the files of `local` (a VoteLog's folder) over their pushed copies: a file is
    only ever appended, so the longer copy holds the other. What a restarted Space reads to know who voted what."""
    from huggingface_hub import snapshot_download

    folder = Path(snapshot_download(repo_id, repo_type="dataset", token=token, allow_patterns=[f"{IN_REPO}/*.jsonl"]))
    files = {p.name: p for p in (folder / IN_REPO).glob("*.jsonl")}
    for p in (local.glob("*.jsonl") if local else []):
        if p.name not in files or p.stat().st_size >= files[p.name].stat().st_size:
            files[p.name] = p
    return [v for name in sorted(files) for v in read_votes(files[name])]
