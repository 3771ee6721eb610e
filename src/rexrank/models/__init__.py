"""Model weights: each model named once (Hub repo, revision, files), resolved through one function.

Resolution order: an override given on the command line (`--model KEY=PATH`), the environment variable
`REXRANK_MODEL_<KEY>`, then the Hugging Face Hub through `huggingface_hub` into the normal HF cache
(which honours `HF_HUB_OFFLINE`, `HF_HOME`, `HF_ENDPOINT` and `HF_TOKEN`). An override is a folder or file
in the reference's own format. Whatever is missing raises `ModelUnavailable` naming the model, the repo and
files, and how to provide a local copy; scorers turn that into a skipped metric, never a crash.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rexrank.errors import MetricUnavailable
from rexrank.models.registry import MODELS, ModelSpec

PRECISIONS = ("fp32", "bf16", "fp16")  # --dtype (rexrank.models.runtime: what each means)

__all__ = ["MODELS", "ModelSpec", "ModelUnavailable", "ResolvedModel", "clear_overrides", "fingerprint",
           "models_extra", "resolve", "set_override"]


class ModelUnavailable(MetricUnavailable):
    """Weights that cannot be had here; the message says which and how to provide them."""


_OVERRIDES: dict[str, Path] = {}


def set_override(key: str, path: str | os.PathLike) -> None:
    """A local copy for one model, as `--model KEY=PATH` gives it."""
    key = key.upper()
    if key not in MODELS:
        raise ModelUnavailable(f"unknown model {key!r}: known models are {', '.join(MODELS)}")
    _OVERRIDES[key] = Path(path).expanduser()


def clear_overrides() -> None:
    _OVERRIDES.clear()


@dataclass(frozen=True)
class ResolvedModel:
    spec: ModelSpec
    path: Path  # a folder (Hub snapshot or local copy) or a single file
    source: str  # "hub cache" or how the override was given
    commit: str | None = None  # the Hub commit the cache resolved

    def file(self, name: str) -> Path:
        """A file of this model: the path itself for a single-file override, else `folder/name`."""
        candidate = self.path if self.path.is_file() else self.path / name
        if not candidate.is_file():
            raise ModelUnavailable(f"{self.spec.what}: {candidate} is missing (from {self.source})")
        return candidate

    @cached_property
    def identity(self) -> str:
        """What a signature records: repo@commit for the Hub, a content fingerprint for a local copy."""
        if self.commit:
            return f"{self.spec.repo_id}@{self.commit[:12]}"
        return f"local:{fingerprint(self.path)}"


def models_extra(module: str, name: str):
    """`name` from a module that needs torch and transformers, or a clear message how to install them."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as err:
        raise ModelUnavailable(f"needs {err.name}: pip install 'rexrank[models]'") from None


def fingerprint(path: Path) -> str:
    """Cheap content identity of a file or folder: sizes plus the first and last MiB of each file."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path) if file != path else file.name}:{size}".encode())
        with file.open("rb") as handle:
            digest.update(handle.read(1 << 20))
            if size > 2 << 20:
                handle.seek(-(1 << 20), os.SEEK_END)
                digest.update(handle.read())
    return digest.hexdigest()[:12]


def override_for(key: str) -> tuple[Path, str] | None:
    spec = MODELS[key]
    if key in _OVERRIDES:
        return _OVERRIDES[key], f"--model {key}={_OVERRIDES[key]}"
    if os.environ.get(spec.env):
        return Path(os.environ[spec.env]).expanduser(), f"{spec.env}={os.environ[spec.env]}"
    return None


def hub_failure(err: BaseException) -> str | None:
    """An error of the Hub's in a line (the HTTP status it answered, or the connection that failed: huggingface_hub's
    errors and its HTTP client's, which are no OSErrors); None for any other error."""
    from huggingface_hub.errors import HfHubHTTPError

    if not isinstance(err, HfHubHTTPError | OSError) and type(err).__module__.split(".")[0] not in (
            "httpx2", "httpx", "httpcore2", "httpcore"):
        return None
    status = getattr(getattr(err, "response", None), "status_code", None)
    why = (getattr(err, "server_message", None) or str(err) or type(err).__name__).splitlines()[0][:200]
    return f"the Hub answered {status} ({why})" if status else \
        f"the Hub could not be reached ({type(err).__name__}: {why})"


def resolve(key: str, download: bool = True) -> ResolvedModel:
    """The weights of model `key`; with download=False only a local copy or the cache is used."""
    spec = MODELS[key]
    override = override_for(key)
    if override:
        path, source = override
        if not path.exists():
            raise ModelUnavailable(f"{spec.what}: {source} does not exist")
        return ResolvedModel(spec, path, source)
    return _from_hub(spec, local_only=not download)


@functools.cache
def unreachable_hub() -> str | None:
    """The Hub's host when its name does not resolve here (no network: each download would otherwise retry for
    about 20 s before failing), else None. Asked once per process."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return None  # huggingface_hub answers from the cache alone, at once
    host = urlsplit(constants.ENDPOINT).hostname or ""
    try:
        socket.getaddrinfo(host, None)
    except OSError:
        return host
    return None


def _from_hub(spec: ModelSpec, local_only: bool) -> ResolvedModel:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{spec.pinned} ({', '.join(spec.files)})"
    local_copy = f"set {spec.env}=/path/to/a/local/copy (a folder or file in the reference's own format)"
    if not local_only:  # a pinned commit never changes: when the cache has all its files, ask the Hub nothing
        with contextlib.suppress(ModelUnavailable):
            return _from_hub(spec, local_only=True)
        if (host := unreachable_hub()) is not None:
            raise ModelUnavailable(f"{spec.what}: {where} is not in the Hugging Face cache, and the Hub ({host}) "
                                   f"cannot be reached from here (its name does not resolve). Run `rexrank models "
                                   f"download {spec.key.lower()}` where there is network, or {local_copy}")
    try:
        folder = Path(snapshot_download(spec.repo_id, revision=spec.revision, allow_patterns=list(spec.files),
                                        local_files_only=local_only))
    except GatedRepoError:
        raise ModelUnavailable(f"{spec.what}: {spec.repo_id} is gated: accept its terms on the Hub and set "
                               f"HF_TOKEN, or {local_copy}") from None
    except RevisionNotFoundError:
        raise ModelUnavailable(f"{spec.what}: revision {spec.revision} of {spec.repo_id} does not exist") from None
    except RepositoryNotFoundError:
        raise ModelUnavailable(f"{spec.what}: {spec.repo_id} not found on the Hub (or private: set HF_TOKEN), "
                               f"or {local_copy}") from None
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as err:
        offline = os.environ.get("HF_HUB_OFFLINE", "0").upper() in ("1", "ON", "YES", "TRUE")
        why = ("HF_HUB_OFFLINE=1" if offline else "not downloaded yet" if local_only
               else f"and the Hub is unreachable: {type(err).__name__}")
        raise ModelUnavailable(f"{spec.what}: {where} is not in the Hugging Face cache ({why}). Run "
                               f"`rexrank models download {spec.key.lower()}` where there is network, "
                               f"or {local_copy}") from None
    # allow_patterns skips a file the repository lacks without a word: every file must be here, or none is used.
    missing = [name for name in spec.files if not (folder / name).is_file()]
    if missing:
        raise ModelUnavailable(f"{spec.what}: {spec.pinned} has no {', '.join(missing)} "
                               f"(the download brought {len(spec.files) - len(missing)} of its {len(spec.files)} "
                               f"files), or {local_copy}")
    return ResolvedModel(spec, folder, "hub cache", commit=folder.name)


@dataclass(frozen=True)
class ModelStatus:
    """Where a model resolves here, without downloading anything: `missing` lists the files it still needs."""

    spec: ModelSpec
    where: str  # "hub cache", "REXRANK_MODEL_X=...", "--model X=...", or "not here"
    missing: tuple[str, ...]
    fix: str  # what to run when something is missing ("" when nothing is)


def status(key: str) -> ModelStatus:
    spec = MODELS[key]
    local = f"or set {spec.env}=/path/to/a/local/copy"
    override = override_for(key)
    if override:
        path, source = override
        if len(spec.files) == 1 and path.exists():  # a file or a folder in the reference's own format (an archive
            missing = ()  # unpacked: RadGraph's), as `resolve` takes it; the format is checked when it loads
        elif path.is_file():
            missing = tuple(spec.files)
        else:
            missing = tuple(name for name in spec.files if not (path / name).is_file())
        return ModelStatus(spec, source, missing, f"put {', '.join(missing)} in {path}" if missing else "")
    from huggingface_hub import try_to_load_from_cache

    cached = [try_to_load_from_cache(spec.repo_id, name, revision=spec.revision) for name in spec.files]
    missing = tuple(name for name, found in zip(spec.files, cached) if not isinstance(found, str))
    fix = f"rexrank models download {key.lower()} ({local})" if missing else ""
    return ModelStatus(spec, "hub cache" if not missing else "not here", missing, fix)
