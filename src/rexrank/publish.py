"""Publishing rexrank to the Hugging Face Hub: one Space per metric module, built datasets, the leaderboard Space.

    publish_metrics("rexrank")                        # Spaces rexrank/bleu2, rexrank/radcliq, ...
    publish_dataset("iu-xray", Path("iu"), "rexrank/iu-xray")
    publish_space("rexrank/leaderboard", results="rexrank/results")

Each call compares the local files with the repo first (git blob ids, or the LFS sha256) and commits only when
something differs, so publishing twice makes no second commit and an interrupted upload is finished by running it
again. `dry_run=True` stops after the comparison: the `Outcome` lists what would change. The uploaded copy of a
`requirements.txt` pins `rexrank==<this version>` (the repository's own file keeps its range), so a Space runs the
code that published it. A token that may not write gets a `PublishError` naming the repo and what to do.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rexrank import __version__
from rexrank.errors import InputError

ROOT = Path(__file__).resolve().parents[2]  # a checkout (src layout): metrics/ and space/ live beside src/
METRICS_DIR, SPACE_DIR = ROOT / "metrics", ROOT / "space"
RESULTS_VARIABLE = "REXRANK_RESULTS"  # the leaderboard Space reads its results repo from this variable
IGNORE = ("__pycache__", ".git", ".DS_Store", ".ipynb_checkpoints")
IGNORE_PATTERNS = ["__pycache__/*", "*/__pycache__/*", "*.pyc", ".git/*", ".DS_Store", ".ipynb_checkpoints/*"]


class PublishError(InputError):
    """The Hub refused (no write access, a missing namespace): the message names the repo and the fix."""


@dataclass
class Outcome:
    """What publishing one repo did, or (dry run) would do."""

    repo_id: str
    repo_type: str
    create: bool = False  # the repo does not exist yet
    changes: list[tuple[str, str]] = field(default_factory=list)  # ("add" | "update", path), sorted by path
    settings: list[str] = field(default_factory=list)  # e.g. "gated: manual", "variable REXRANK_RESULTS=org/results"
    commit: str | None = None  # the commit made, None when nothing was uploaded
    dry_run: bool = False

    @property
    def up_to_date(self) -> bool:
        return not (self.create or self.changes or self.settings)

    def lines(self) -> list[str]:
        head = f"{self.repo_id} ({self.repo_type})"
        if self.up_to_date:
            return [f"{head}: up to date"]
        verb = "would " if self.dry_run else ""
        out = [f"{head}: {verb}create" if self.create else f"{head}: {verb}update"]
        out += [f"  {kind} {path}" for kind, path in self.changes]
        out += [f"  set {setting}" for setting in self.settings]
        if self.commit:
            out.append(f"  commit {self.commit}")
        return out


def git_blob_id(data: bytes) -> str:
    """The id the Hub gives a regular file (its git blob sha1)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def local_files(folder: Path) -> dict[str, bytes]:
    """The files upload_folder sends, by repo path (caches and VCS folders left out)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part in IGNORE or part.endswith(".pyc") for part in p.relative_to(folder).parts)}


def pin_requirements(text: str, version: str = __version__) -> str:
    """`requirements.txt` with the rexrank line (extras kept) pinned to `version`; added when missing."""
    lines, found = [], False
    for line in text.splitlines():
        m = re.match(r"^\s*(rexrank(\[[^\]]*\])?)\s*([<>=!~].*)?$", line.split("#")[0])
        lines.append(f"{m[1]}=={version}" if m else line)
        found = found or bool(m)
    if not found:
        lines.insert(0, f"rexrank=={version}")
    return "\n".join(lines) + "\n"


def _staged(folder: Path, into: Path, made: dict[str, str] | None = None) -> Path:
    """A copy of `folder` to upload, with the files of `made` it does not hold itself; requirements.txt pinned to
    this rexrank."""
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns(*IGNORE, "*.pyc"))
    for name, text in (made or {}).items():
        if not (into / name).exists():
            (into / name).write_text(text, encoding="utf-8")
    requirements = into / "requirements.txt"
    requirements.write_text(pin_requirements(requirements.read_text(encoding="utf-8")
                                             if requirements.is_file() else ""), encoding="utf-8")
    return into


def _api(token: str | None):
    from huggingface_hub import HfApi

    return HfApi(token=token)


def _refused(err: Exception, repo_id: str, action: str) -> PublishError:
    status = getattr(getattr(err, "response", None), "status_code", None)
    namespace = repo_id.split("/")[0]
    why = getattr(err, "server_message", None) or str(err).splitlines()[0]
    if status in (401, 403):
        return PublishError(f"{repo_id}: the Hub refused to {action} ({status}: {why}). The token needs write access "
                            f"to {namespace!r}: log in with a write token (`hf auth login`) or set HF_TOKEN to one, "
                            f"and check you are a member of {namespace!r} with the write role.")
    return PublishError(f"{repo_id}: could not {action} ({status or type(err).__name__}: {why})")


def _remote(api, repo_id: str, repo_type: str) -> tuple[dict | None, dict]:
    """The repo's files {path: (blob id, lfs sha256 | None)} and info, or (None, {}) when it does not exist."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        info = api.repo_info(repo_id, repo_type=repo_type)
        entries = api.list_repo_tree(repo_id, repo_type=repo_type, recursive=True)
        files = {e.path: (e.blob_id, e.lfs.sha256 if e.lfs else None) for e in entries if hasattr(e, "blob_id")}
    except RepositoryNotFoundError:
        return None, {}
    except HfHubHTTPError as err:
        raise _refused(err, repo_id, "read the repo") from err
    return files, {"private": bool(info.private), "gated": getattr(info, "gated", None) or False,
                   "sdk": getattr(info, "sdk", None)}


def diff(local: dict[str, bytes], remote: dict[str, tuple[str, str | None]]) -> list[tuple[str, str]]:
    """("add" | "update", path) for each local file the repo lacks or holds with other bytes. Files only in the
    repo are kept (upload_folder deletes nothing), so they are not listed."""
    changes = []
    for path, data in sorted(local.items()):
        if path not in remote:
            changes.append(("add", path))
            continue
        blob, lfs = remote[path]
        same = hashlib.sha256(data).hexdigest() == lfs if lfs else git_blob_id(data) == blob
        if not same:
            changes.append(("update", path))
    return changes


def _upload(api, folder: Path, outcome: Outcome, message: str) -> None:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        commit = api.upload_folder(folder_path=str(folder), repo_id=outcome.repo_id, repo_type=outcome.repo_type,
                                   commit_message=message, ignore_patterns=IGNORE_PATTERNS)
    except HfHubHTTPError as err:
        raise _refused(err, outcome.repo_id, "upload") from err
    outcome.commit = getattr(commit, "oid", None)


def _create(api, outcome: Outcome, **kwargs) -> None:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_repo(outcome.repo_id, repo_type=outcome.repo_type, exist_ok=True, **kwargs)
    except HfHubHTTPError as err:
        raise _refused(err, outcome.repo_id, f"create the {outcome.repo_type} repo") from err


def _space_sdk(folder: Path, made: dict[str, str] | None = None) -> str:
    """The `sdk:` of a Space card's YAML header; a folder without one is not a Space."""
    import yaml

    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    m = re.match(r"^---\n(.*?)\n---", text, re.S)
    card = yaml.safe_load(m[1]) if m else None
    if not isinstance(card, dict) or not card.get("sdk"):
        raise InputError(f"{readme}: no Space card (a YAML header with sdk:, app_file:) — not publishable as a Space")
    app = folder / card.get("app_file", "app.py")
    if not app.is_file() and app.name not in (made or {}):  # a spec-made metric's app.py is written when it is staged
        raise InputError(f"{readme}: app_file {app.name} is not in {folder}")
    return card["sdk"]


def _publish_space_folder(api, folder: Path, repo_id: str, dry_run: bool, message: str,
                          variables: dict[str, str] | None = None, made: dict[str, str] | None = None) -> Outcome:
    from huggingface_hub.errors import HfHubHTTPError

    sdk = _space_sdk(folder, made)
    outcome = Outcome(repo_id, "space", dry_run=dry_run)
    remote, _ = _remote(api, repo_id, "space")
    with tempfile.TemporaryDirectory(prefix="rexrank-publish-") as tmp:
        staged = _staged(folder, Path(tmp) / folder.name, made)
        outcome.create = remote is None
        outcome.changes = diff(local_files(staged), remote or {})
        current = {}
        if remote is not None and variables:
            try:
                current = {k: v.value for k, v in api.get_space_variables(repo_id).items()}
            except HfHubHTTPError as err:
                raise _refused(err, repo_id, "read the Space's variables") from err
        todo = {k: v for k, v in (variables or {}).items() if current.get(k) != v}
        outcome.settings = [f"variable {k}={v}" for k, v in todo.items()]
        if dry_run or outcome.up_to_date:
            return outcome
        if outcome.create:
            _create(api, outcome, space_sdk=sdk)
        for key, value in todo.items():
            try:
                api.add_space_variable(repo_id, key, value)
            except HfHubHTTPError as err:
                raise _refused(err, repo_id, f"set the Space variable {key}") from err
        if outcome.changes:
            _upload(api, staged, outcome, message)
    return outcome


def metric_folders(metrics_dir: Path = METRICS_DIR, only: Iterable[str] | None = None) -> list[Path]:
    """The metric Space folders (`<name>/README.md`, the card, beside the module, app and requirements
    `rexrank.spaces` writes), all or those named in `only`."""
    if not metrics_dir.is_dir():
        raise InputError(f"{metrics_dir}: no metrics folder (run from a rexrank checkout or pass --metrics-dir)")
    found = {p.name: p for p in sorted(metrics_dir.iterdir()) if (p / "README.md").is_file()}
    if only is None:
        return list(found.values())
    wanted = [n.strip() for n in only if n.strip()]
    unknown = [n for n in wanted if n not in found]
    if unknown:
        raise InputError(f"no metric module {', '.join(unknown)} in {metrics_dir}: there are {', '.join(found)}")
    return [found[n] for n in wanted]


def metric_space(folder: Path, into: Path) -> Path:
    """A metric's Space as it is uploaded (its folder, requirements pinned), in `into`: what `evaluate.load` reads."""
    return _staged(folder, into)


def publish_metrics(org: str, only: Iterable[str] | None = None, dry_run: bool = False, token: str | None = None,
                    metrics_dir: Path = METRICS_DIR) -> list[Outcome]:
    """One Gradio Space per metric module, `ORG/<name>`, loadable with `evaluate.load("ORG/<name>")`."""
    api = _api(token)
    return [_publish_space_folder(api, folder, f"{org}/{folder.name}", dry_run,
                                  f"rexrank {__version__}: the {folder.name} metric module")
            for folder in metric_folders(metrics_dir, only)]


def publish_space(repo_id: str, results: str, dry_run: bool = False, token: str | None = None,
                  folder: Path = SPACE_DIR) -> Outcome:
    """The leaderboard Space from `space/`, reading its board from the results repo `results` (a Space variable)."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no Space folder (run from a rexrank checkout or pass --from)")
    return _publish_space_folder(_api(token), folder, repo_id, dry_run, f"rexrank {__version__}: the leaderboard",
                                 {RESULTS_VARIABLE: results})


def publish_dataset(name: str, folder: Path, repo_id: str, private: bool = False, gated: bool = False,
                    dry_run: bool = False, token: str | None = None) -> Outcome:
    """A folder made by `rexrank build-dataset NAME` to the dataset repo `repo_id`. Credentialed data goes only to a
    private or gated repo (ReXGradient only to a private one); the repo is made private / gated before any file is
    uploaded, so the data is never public for a moment."""
    from huggingface_hub.errors import HfHubHTTPError

    from rexrank.builders import builder
    from rexrank.data.build import push_dataset

    chosen = builder(name)
    build_info = folder / "build_info.json"
    if not build_info.is_file():
        raise InputError(f"{folder}: not a built dataset (no build_info.json); make it with rexrank build-dataset")
    built = json.loads(build_info.read_text(encoding="utf-8")).get("dataset")
    if built != name:
        raise InputError(f"{folder} holds {built!r}, not {name!r}")
    terms = chosen.info.access.split(".")[0]
    if chosen.always_private and not private:
        raise InputError(f"{name} is credentialed data ({terms}): it may only be pushed to a private repo; "
                         "add --private")
    if chosen.info.credentialed and not (private or gated):
        raise InputError(f"{name} is credentialed data ({terms}): it may only be pushed to a private or gated repo; "
                         "add --private or --gated")
    api = _api(token)
    outcome = Outcome(repo_id, "dataset", dry_run=dry_run)
    remote, info = _remote(api, repo_id, "dataset")
    outcome.create = remote is None
    outcome.changes = diff(local_files(folder), remote or {})
    settings = {}
    if gated and info.get("gated") in (None, False):
        settings["gated"] = "manual"
    if private and remote is not None and not info.get("private"):
        settings["private"] = True
    outcome.settings = [f"{k}: {v}" for k, v in settings.items()]
    if dry_run or outcome.up_to_date:
        return outcome
    _create(api, outcome, private=private)
    if settings:
        try:
            api.update_repo_settings(repo_id, repo_type="dataset", **settings)
        except HfHubHTTPError as err:
            raise _refused(err, repo_id, f"change the settings ({', '.join(outcome.settings)})") from err
    if outcome.changes:
        try:
            outcome.commit = push_dataset(folder, repo_id, private=private, token=token).rstrip("/").split("/")[-1]
        except HfHubHTTPError as err:
            raise _refused(err, repo_id, "upload") from err
    return outcome
