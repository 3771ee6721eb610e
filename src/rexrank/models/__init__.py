"""Model weights: each model named once (Hub repo, revision, files), resolved through one function.

Resolution order: an override given on the command line (`--model KEY=PATH`), the environment variable
`REXRANK_MODEL_<KEY>`, then the Hugging Face Hub through `huggingface_hub` into the normal HF cache
(which honours `HF_HUB_OFFLINE`, `HF_HOME`, `HF_ENDPOINT` and `HF_TOKEN`). An override is a folder or file
in the reference's own format. Whatever is missing raises `ModelUnavailable` naming the model, the repo and
files, and how to provide a local copy; scorers turn that into a skipped metric, never a crash.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rexrank.errors import MetricUnavailable


class ModelUnavailable(MetricUnavailable):
    """Weights that cannot be had here; the message says which and how to provide them."""


@dataclass(frozen=True)
class ModelSpec:
    key: str  # BERTSCORE -> REXRANK_MODEL_BERTSCORE
    repo_id: str
    revision: str
    files: tuple[str, ...]  # what to fetch (glob patterns relative to the repo root)
    what: str

    @property
    def env(self) -> str:
        return f"REXRANK_MODEL_{self.key}"


# Revisions are branch names until they can be pinned from a networked machine; every score records the
# commit the cache actually resolved (see `ResolvedModel.identity`), so a number always names its weights.
MODELS: dict[str, ModelSpec] = {
    spec.key: spec
    for spec in (
        ModelSpec("BERTSCORE", "distilbert/distilroberta-base", "main",
                  ("config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer.json",
                   "tokenizer_config.json"),
                  "BERTScore encoder (distilroberta-base, layer 5)"),
        ModelSpec("CHEXBERT", "StanfordAIMI/RRG_scorers", "main", ("chexbert.pth",),
                  "CheXbert checkpoint (chexbert.pth)"),
        ModelSpec("RADGRAPH", "StanfordAIMI/RRG_scorers", "main", ("radgraph.tar.gz",),
                  "RadGraph v1 model (radgraph.tar.gz: config.json, vocabulary/, weights.th)"),
        ModelSpec("BERT_BASE_UNCASED", "google-bert/bert-base-uncased", "main",
                  ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"),
                  "bert-base-uncased configuration and WordPiece vocabulary (CheXbert's tokenizer)"),
        ModelSpec("RATE_NER", "Angelakeke/RaTE-NER-Deberta", "main",
                  ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json"),
                  "RaTEScore entity tagger (RaTE-NER-Deberta)"),
        ModelSpec("BIOLORD", "FremyCompany/BioLORD-2023-C", "main",
                  ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "vocab.txt"),
                  "RaTEScore entity encoder (BioLORD-2023-C)"),
        ModelSpec("GREEN", "StanfordAIMI/GREEN-radllama2-7b", "main",
                  ("config.json", "generation_config.json", "*.safetensors", "model.safetensors.index.json",
                   "tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json"),
                  "GREEN judge model (GREEN-radllama2-7b, Llama-2 7B, about 13.5 GB)"),
    )
}

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


def _from_hub(spec: ModelSpec, local_only: bool) -> ResolvedModel:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{spec.repo_id}@{spec.revision} ({', '.join(spec.files)})"
    local_copy = f"set {spec.env}=/path/to/a/local/copy (a folder or file in the reference's own format)"
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
    if not folder.is_dir() or not any(folder.iterdir()):
        raise ModelUnavailable(f"{spec.what}: {where} has none of the files named")
    return ResolvedModel(spec, folder, "hub cache", commit=folder.name)
