"""A code submission's environment, built behind the same door as its run (docs/security.md, rules 16 and 21).

Everything a submission supplies can run code when it is built or imported: a local package's build backend or
`setup.py`, an sdist's, a `.pth` file its wheel installs; and every string it writes can steer a package tool: pip
reads `--requirement=/proc/self/environ` as an option, follows a URL, and prepares a named local project by running
its backend. So the job's process, which holds the maintainers' token, hands nothing of the submission to pip, conda
or a shell, and parses none of its files but model.yaml: two sandboxes do it all, each started from an emptied
environment.

1. **fetch** (a sandbox with the network on, `Sandbox(network=True)`; rexrank.inference.fetch): the job's own
   interpreter runs rexrank's code, which reads requirements.txt and the local packages' pyproject.toml with the one
   validator (rexrank.inference.requirements), writes the plan (the lines the build installs) and downloads wheels
   only (`--only-binary=:all:`: nothing built, nothing run), resolved against the job's environment so a pinned
   `transformers==4.47.0` wins and what the image has is not fetched again. Only the plan's folder and /wheels are
   writable; the maintainers' index settings (INDEX_SETTINGS) are the only variables of the job's it gets.
2. **build** (the sandbox, network off): a venv at the fixed path /env, layered over the job's environment (a `.pth`
   written by the host puts the job's packages after the venv's own), then `pip install --no-index --find-links
   /wheels -r /plan/plan.txt`: wheels unpacked, local packages built from a scratch copy of `model/`. Only /env and the
   scratch are writable, together at most BUILD_BYTES.

The host never runs the built environment's Python and never reads its import-time files: the run binds it read-only
at /env again, beside the job's own environment (whose paths the host knows from its own interpreter).
`environment.yaml` follows the same two steps with conda: the fetch sandbox solves and downloads (`--download-only`,
which links nothing, so no package's link script runs), the build sandbox creates the environment `--offline`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from rexrank.inference.contract import ENVIRONMENTS, Model
from rexrank.inference.fetch import PLAN, REFUSED
from rexrank.inference.requirements import BuildFailed, Plan
from rexrank.inference.requirements import plan as plan_files
from rexrank.inference.sandbox import ENVIRONMENT, Sandbox, scratch_copy
from rexrank.text import shown

__all__ = ["BuildFailed", "Plan", "build", "plan"]

BUILD_TIMEOUT = 2 * 3600.0
FETCH_TIMEOUT = 3600.0
BUILD_BYTES = 16 * 1024 ** 3  # what the build may write: /env, its scratch and its log, together
FETCH_BYTES = 16 * 1024 ** 3  # what the fetch may write: the wheels and the plan
WHEELS = "/wheels"  # where the sandboxes see the fetched artefacts
PLANNED = "/plan"  # where the build sees the fetch's plan
# the maintainers' pip settings the fetch sandbox is given (from the job's environment, where set); a local folder
# one names is bound read-only at its own path. What they hold, the fetch (and what it runs) can read: an index URL
# with credentials in it hands those credentials to the sandbox (docs/security.md, rule 24)
INDEX_SETTINGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TRUSTED_HOST",
                  "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "SSL_CERT_FILE", "SSL_CERT_DIR")
PIP_QUIET = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_CACHE_DIR": "1",
             "PIP_CONFIG_FILE": "/dev/null"}


def build(model: Model, into: Path, log: Path, python: str | Path | None = None,
          timeout: float = BUILD_TIMEOUT) -> Path | None:
    """The environment for `model`, built in `into` (bound at /env when the model runs: give it to `infer` as
    `environment`); None when the model needs none beyond the job's (rexrank's own runner). `python`: the job's
    interpreter, the environment's base (default: this one). `log`: what the fetch and the build printed (in their
    sandboxes: nothing of the job's)."""
    python = Path(python or sys.executable)
    into = into.resolve()
    requirements, conda_file = (model.folder / name for name in ENVIRONMENTS)
    if not requirements.is_file() and not conda_file.is_file():
        return None
    tool = None
    if not requirements.is_file():
        tool = next((shutil.which(t) for t in ("micromamba", "mamba", "conda") if shutil.which(t)), None)
        if tool is None:
            raise BuildFailed("environment.yaml needs conda, mamba or micromamba in the job image, and it has none: "
                              "give a requirements.txt instead")
    for stale in (into, *(into.parent / f"{into.name}.{part}" for part in ("wheels", "fetch", "scratch"))):
        if stale.exists():
            shutil.rmtree(stale)
    log.write_text("")
    planned = _fetch(model, into, log, python, tool)
    try:
        if tool is None:
            return _venv(model, planned, into, log, python, timeout)
        return _conda(model, Path(tool), into, log, python, timeout)
    finally:
        shutil.rmtree(planned.parent, ignore_errors=True)


def plan(model: Model) -> Plan:
    """requirements.txt and its local packages' pyproject.toml, through the one validator (what the fetch sandbox
    does first; here for `rexrank submit --model --dry-run` and the tests: it runs no package tool)."""
    return plan_files(model.folder)


def _fetch(model: Model, into: Path, log: Path, python: Path, tool: str | None) -> Path:
    """The fetch sandbox's run (the module's step 1); the folder holding its plan. BuildFailed with its one line."""
    stage = into.parent / f"{into.name}.fetch"
    wheels = into.parent / f"{into.name}.wheels"
    for folder in (stage / "empty", stage / "output", wheels):
        folder.mkdir(parents=True)
    readable = {"/conda": Path(tool).resolve().parents[1]} if tool else {}
    settings = _index_settings(readable)
    box = Sandbox(model.folder.resolve(), stage / "empty", stage / "empty", stage / "output", python=python,
                  network=True, timeout=FETCH_TIMEOUT, max_output_bytes=FETCH_BYTES, readable=readable,
                  writable={WHEELS: wheels}, env=PIP_QUIET | settings)
    box.check()  # every wall but the network's, before any submitted string is read
    what = ["pip"] if tool is None else ["conda", f"/conda/bin/{Path(tool).name}"]
    outcome = box.run([python.name, "-I", "-m", "rexrank.inference.fetch", *what], log, timeout=FETCH_TIMEOUT,
                      append=True)
    said = stage / "output" / REFUSED
    if said.is_file() and not said.is_symlink():  # the fetch sandbox's words: secret-free, bounded, one line
        with open(said, "rb") as handle:
            first = (handle.read(2048).decode("utf-8", "replace").splitlines() or ["refused"])[0]
        raise BuildFailed(shown(first, 600))
    if not outcome.ok:
        raise BuildFailed(f"fetching the environment's packages {outcome.why(FETCH_TIMEOUT, FETCH_BYTES)} (in its "
                          "sandbox; its output is in the build log)")
    return stage / "output"


def _index_settings(readable: dict[str, Path]) -> dict[str, str]:
    """INDEX_SETTINGS as the job has them, a local folder one names bound read-only at /index/N (added to
    `readable`) and named so: the sandbox sees no host path of the maintainers'."""
    settings = {}
    for key in INDEX_SETTINGS:
        parts = []
        for part in os.environ.get(key, "").split():
            local = Path(part.removeprefix("file://"))
            if part.startswith(("/", "file:///")) and local.exists():
                inside = f"/index/{len(readable)}"
                readable[inside] = local
                part = ("file://" if part.startswith("file://") else "") + inside
            parts.append(part)
        if parts:
            settings[key] = " ".join(parts)
    return settings


def _sandbox(model: Model, into: Path, python: Path, timeout: float, readable: dict[str, Path]) -> Sandbox:
    """The build's sandbox: the network off, /env writable, the scratch copy of model/ at /output/work."""
    scratch = into.parent / f"{into.name}.scratch"
    (scratch / "empty").mkdir(parents=True)
    scratch_copy(model.folder, scratch / "output" / "work")  # local packages build here (pip writes in the tree)
    return Sandbox(model.folder.resolve(), scratch / "empty", scratch / "empty", scratch / "output", python=python,
                   environment=into, environment_writable=True, timeout=timeout, max_output_bytes=BUILD_BYTES,
                   readable=readable, env=dict(PIP_QUIET))


def _venv(model: Model, planned: Path, into: Path, log: Path, python: Path, timeout: float) -> Path:
    wheels = into.parent / f"{into.name}.wheels"
    made = subprocess.run([str(python), "-m", "venv", "--without-pip", str(into)], capture_output=True, text=True,
                          check=False)  # the job's own interpreter, host paths only: nothing of the submission
    if made.returncode != 0:
        raise BuildFailed(f"making the venv failed: {made.stderr.strip()[:200]}")
    site = Path(sysconfig.get_path("purelib", vars={"base": str(into), "platbase": str(into)}))
    # the job's packages after the venv's own, their own .pth files (editable installs) read too
    (site / "_rexrank_job_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in _site_packages(python)))
    if (planned / PLAN).stat().st_size == 0:  # a requirements.txt of comments: nothing to install
        return into
    box = _sandbox(model, into, python, timeout, {WHEELS: wheels, PLANNED: planned})
    outcome = box.run([f"{ENVIRONMENT}/bin/python", "-m", "pip", "install", "--no-index", "--find-links", WHEELS,
                       "-r", f"{PLANNED}/{PLAN}"], log, append=True)
    shutil.rmtree(box.output.parent, ignore_errors=True)
    if not outcome.ok:
        raise BuildFailed(f"pip install -r requirements.txt {outcome.why(timeout, BUILD_BYTES)} (in the sandbox, "
                          "offline; pip's output is in the build log)")
    return into


def _site_packages(python: Path) -> list[str]:
    """The job's interpreter's site-packages folders (a trusted interpreter: the job's, never a built one)."""
    if python.resolve() == Path(sys.executable).resolve():
        return [p for p in sys.path if p.endswith("-packages")]
    found = subprocess.run([str(python), "-I", "-c", "import sys; print('\\n'.join(p for p in sys.path if "
                            "p.endswith('-packages')))"], capture_output=True, text=True, check=True)
    return found.stdout.split()


def _conda(model: Model, tool: Path, into: Path, log: Path, python: Path, timeout: float) -> Path:
    """The environment created offline in the build sandbox from what the fetch sandbox downloaded."""
    packages = into.parent / f"{into.name}.wheels"
    box = _sandbox(model, into, python, timeout, {"/conda": tool.resolve().parents[1]})
    box.writable = {"/conda-pkgs": packages}
    box.env |= {"CONDA_PKGS_DIRS": "/conda-pkgs", "MAMBA_ROOT_PREFIX": "/tmp/mamba"}
    into.mkdir(parents=True)
    outcome = box.run([f"/conda/bin/{tool.name}", "create", "--yes", "--offline", "-p", str(ENVIRONMENT),
                       "-f", "/submission/environment.yaml"], log, append=True)
    shutil.rmtree(box.output.parent, ignore_errors=True)
    if not outcome.ok:
        raise BuildFailed(f"{tool.name} create {outcome.why(timeout, BUILD_BYTES)} (in the sandbox, offline; its "
                          "output is in the build log)")
    return into
