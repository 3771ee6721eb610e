"""What a sandboxed run reads from the host, staged in the run's own folder first, so that the sandbox sees exactly
what it is given and no path of the host's but that folder's shows in its /proc/self/mountinfo (a bind mount shows
its source's path there): the images the split names, and the pinned snapshot of each weights repository. Hard links
where the file system allows (nothing copied, nothing written to the originals: the binds are read-only); images are
copied where it does not, and a weights cache on another file system is bound as it is (its path then shows)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rexrank.inference.inputs import image_relative


def image_tree(records: dict[str, dict], root: Path, tree: Path) -> Path:
    """A fresh folder holding exactly the image files the studies name, at their paths under the root
    (`rexrank.inference.inputs.image_relative`: ReXrank's `/p10/...` is `p10/...`). Nothing else of `root` (a file
    planted beside the images, a second split's images) reaches the sandbox, nor anything a path names past it
    (`..`). Links inside `root` are followed (the Hub cache's snapshot files link into its blobs/): the root is the
    maintainers' or the user's folder, and the sandbox gets the file, never the link."""
    _fresh(tree)
    for record in records.values():
        named = {*record.get("image_path", []), *([record["key_image_path"]] if record.get("key_image_path") else [])}
        for path in named:
            relative = image_relative(path) if isinstance(path, str) else None
            if relative is None:
                continue  # outside the image folder: the script finds it missing
            source, target = root / relative, tree / relative
            try:
                if not source.is_file() or target.exists():
                    continue  # missing, or named twice
                target.parent.mkdir(parents=True, exist_ok=True)
                if not _linked(source.resolve(), target):  # the file, not the link (a link of a link dangles)
                    shutil.copyfile(source, target)
            except OSError:  # a path whose folder is a file another path named: the script finds it missing
                continue
    return tree


def weights_tree(folders: dict[str, Path], revisions: dict[str, str], tree: Path) -> dict[str, Path]:
    """Each repo's Hub-cache folder (`models--ORG--NAME`) rebuilt in `tree` with its pinned snapshot only, its
    `refs/main` naming that commit (so `from_pretrained(repo)` loads the pinned weights offline); the original
    folder where its files cannot be linked."""
    _fresh(tree)
    staged = {}
    for repo, folder in folders.items():
        revision = revisions[repo]
        snapshot, target = folder / "snapshots" / revision, tree / folder.name
        if _staged_snapshot(folder, snapshot, target, revision):
            staged[repo] = target
        else:
            shutil.rmtree(target, ignore_errors=True)
            staged[repo] = folder
    return staged


def _staged_snapshot(folder: Path, snapshot: Path, target: Path, revision: str) -> bool:
    for path in sorted(snapshot.rglob("*")):
        copy = target / "snapshots" / revision / path.relative_to(snapshot)
        if path.is_dir() and not path.is_symlink():
            copy.mkdir(parents=True, exist_ok=True)
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        real = path.resolve()
        if path.is_symlink() and folder.resolve() in real.parents:  # the cache's link into blobs/: kept as a link
            blob = target / real.relative_to(folder.resolve())
            blob.parent.mkdir(parents=True, exist_ok=True)
            if not blob.exists() and not _linked(real, blob):
                return False
            copy.symlink_to(os.path.relpath(blob, copy.parent))
        elif real.is_file() and not _linked(real, copy):
            return False
    (target / "refs").mkdir(parents=True, exist_ok=True)
    (target / "refs" / "main").write_text(revision)
    return True


def _linked(source: Path, target: Path) -> bool:
    try:
        os.link(source, target)
    except OSError:  # another file system, or hard links not allowed there
        return False
    return True


def _fresh(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
