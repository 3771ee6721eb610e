"""What the readers of original releases share (`iu_xray`, `chexpert_plus`, `rexgradient`): compressed sources read
whole or refused by name, JSON that refuses a repeated id, checksums of files and folders, the image check, and
notes that name studies by id. Nothing here prints report text."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from rexrank.data import split
from rexrank.data.build import sha256
from rexrank.errors import InputError

DAMAGED = (EOFError, gzip.BadGzipFile, zlib.error)  # what a truncated or corrupt .gz raises while read


def some(ids: Sequence[str], limit: int = 5) -> str:
    """The first ids, for a note or an error: `a, b, c (+12 more)`."""
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" (+{len(ids) - limit:,} more)" if len(ids) > limit else "")


def note(what: str, ids: Sequence[str]) -> str:
    """`<what>: 3 (a, b, c)`."""
    return f"{what}: {len(ids):,} ({some(ids)})"


def damaged(path: Path, err: BaseException, expected: str) -> InputError:
    return InputError(f"{path}: truncated or damaged compressed file ({err}); download {expected} again")


def read_bytes(path: Path, expected: str) -> bytes:
    """The file's bytes, gunzipped when its name ends in .gz."""
    data = path.read_bytes()
    if path.suffix != ".gz":
        return data
    try:
        return gzip.decompress(data)
    except DAMAGED as err:
        raise damaged(path, err, expected) from None


def read_json(path: Path, expected: str) -> object:
    """JSON (.json or .json.gz) as the releases write it (see `split.read_json`)."""
    return split.read_json(path, expected, read_bytes(path, expected))


def digest(path: Path) -> str:
    """sha256 of a file; of a folder, sha256 of its files' `<sha256>  <relative path>` lines, sorted by path."""
    if path.is_file():
        return sha256(path)
    lines = [f"{sha256(f)}  {f.relative_to(path).as_posix()}\n" for f in sorted(path.rglob("*")) if f.is_file()]
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def checksums(paths: Iterable[Path]) -> dict[str, str]:
    """build_info's `sources`: file name (a folder's with a trailing /) -> sha256."""
    return {(f"{p.name}/" if p.is_dir() else p.name): digest(p) for p in paths}


def missing_images(studies: Iterable[tuple[str, Sequence[str]]], image_root: Path | None) -> list[str]:
    """A note naming the studies with images absent under `image_root` (none when every image is there)."""
    if image_root is None:
        return []
    if not image_root.is_dir():
        raise InputError(f"--image-root {image_root}: no such folder")
    images = missing = 0
    studies_missing: list[str] = []
    for study_id, paths in studies:
        absent = [p for p in paths if not (image_root / p).is_file()]
        images += len(paths)
        missing += len(absent)
        if absent:
            studies_missing.append(study_id)
    if not missing:
        return []
    return [f"{missing:,} of {images:,} images not found under {image_root} "
            f"({len(studies_missing):,} studies: {some(studies_missing)})"]
