"""Writing files so that an interrupted run never leaves a half-written one behind, and two runs never write one
at once."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; it replaces `path` only if the block completes."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be read
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


class Locked(Exception):
    """Another process holds the lock; `pid` is its process id as it wrote it (None if not yet written)."""

    def __init__(self, path: Path, pid: int | None):
        super().__init__(f"{path} is held by pid {pid}")
        self.path, self.pid = path, pid


@contextmanager
def exclusive(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock (flock) on the file `path`, which holds this process's id, for the block; raise `Locked`
    at once when another process holds it. The lock goes with the process (a killed run leaves a file nobody holds,
    which the next run takes), the file with the block."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    path = Path(path)
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the folder went in between (the last run ending removes it when empty)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            written = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            raise Locked(path, int(written) if written.isdigit() else None) from None
        except OSError as err:  # a file system without locks (some network mounts): the block runs unlocked
            os.close(fd)
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            yield
            return
        try:  # the holder before us removes the file as it ends: locked only if it is still the file at `path`
            ours = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            ours = False
        if ours:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
