"""A code submission's environment, built behind the same door as its run (docs/security.md, rule 16).

Everything a submission supplies can run code when it is built or imported: a local package's build backend or
`setup.py`, an sdist's, a `.pth` file its wheel installs. So none of it runs on the host, and the build has no
network. In three steps:

1. **plan** (host, reads files only): `requirements.txt` line by line, each a PEP 508 requirement on a package index
   or a folder inside `model/` (a local package); anything else (an option, a URL, a path outside `model/`) is
   refused, naming the line. A local package's `pyproject.toml` gives its build requirements and its static
   dependencies (a package whose dependencies are dynamic lists them in requirements.txt).
2. **fetch** (host, the network on, runs nothing fetched): pip resolves the index requirements against the job's own
   environment with `--only-binary=:all:` (so no sdist is built to read its metadata) and downloads the wheels that
   are missing, and the build requirements' wheels in full (an isolated build starts from nothing). These are files.
3. **build** (the sandbox, network off): a venv at the fixed path /env, layered over the job's environment (a `.pth`
   written by the host puts the job's packages after the venv's own, so a pinned `transformers==4.47.0` wins and what
   the image has is not fetched again), then `pip install --no-index --find-links /wheels`: wheels unpacked, local
   packages built from a scratch copy of `model/`. Only /env and the scratch are writable; no token, no cache of the
   host's, no references, no images.

The host never runs the built environment's Python and never reads its import-time files: the run binds it read-only
at /env again, beside the job's own environment (whose paths the host knows from its own interpreter).
`environment.yaml` follows the same three steps with conda: the host solves and downloads (`--download-only`, which
links nothing, so no package's link script runs), the sandbox creates the environment `--offline`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from rexrank.errors import InputError
from rexrank.inference.contract import ENVIRONMENTS, Model
from rexrank.inference.sandbox import ENVIRONMENT, Sandbox, scratch_copy

BUILD_TIMEOUT = 2 * 3600.0
FETCH_TIMEOUT = 3600.0
BUILD_OUTPUT = 64 * 1024 * 1024  # what the build may write besides /env: its log and scratch
WHEELS = "/wheels"  # where the sandbox sees the fetched artefacts
CONDA_CHANNELS = ("conda-forge", "defaults", "nvidia", "pytorch", "bioconda")  # names only: a URL could be anywhere


class BuildFailed(InputError):
    """The environment could not be built; the message says why in rexrank's words, the log is pip's or conda's."""


@dataclass(frozen=True)
class Plan:
    """What `requirements.txt` asks for, read from files: index requirements (its own lines and its local packages'
    static dependencies), the local packages' build requirements, and the local packages (folders in model/)."""

    index: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    local: tuple[str, ...] = ()


def build(model: Model, into: Path, log: Path, python: str | Path | None = None,
          timeout: float = BUILD_TIMEOUT) -> Path | None:
    """The environment for `model`, built in `into` (bound at /env when the model runs: give it to `infer` as
    `environment`); None when the model needs none beyond the job's (rexrank's own runner). `python`: the job's
    interpreter, the environment's base (default: this one). `log`: what pip or conda printed."""
    python = Path(python or sys.executable)
    into = into.resolve()
    requirements, conda_file = (model.folder / name for name in ENVIRONMENTS)
    if requirements.is_file():
        return _venv(model, plan(model), into, log, python, timeout)
    if conda_file.is_file():
        return _conda(model, conda_file, into, log, python, timeout)
    return None


def plan(model: Model) -> Plan:
    """requirements.txt read as the module says; BuildFailed naming the first line that is not allowed."""
    from packaging.requirements import InvalidRequirement, Requirement

    index, build_requires, local = [], [], []
    path = model.folder / ENVIRONMENTS[0]
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        where = f"requirements.txt line {number}: {line[:80]!r}"
        if line.startswith("-"):
            raise BuildFailed(f"{where} is an option; only requirements (name and version) and folders inside model/ "
                              "are read (the job image brings torch and CUDA; indexes are the maintainers')")
        if line.startswith((".", "/")) or "/" in line.split(";")[0] and "@" not in line and "://" not in line:
            folder = _local(model.folder, line, where)
            local.append(folder.relative_to(model.folder.resolve()).as_posix())
            needs, deps = _static(folder, where)
            build_requires += needs
            index += deps
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            raise BuildFailed(f"{where} is not a requirement (PEP 508: name, extras, version)") from None
        if requirement.url:
            raise BuildFailed(f"{where} names a URL; give the package's name and version (it is fetched from the "
                              "maintainers' index) or a folder inside model/")
        index.append(line)
    return Plan(tuple(dict.fromkeys(index)), tuple(dict.fromkeys(build_requires)), tuple(local))


def _local(root: Path, line: str, where: str) -> Path:
    relative = line[len("/submission/"):] if line.startswith("/submission/") else line
    root = root.resolve()
    folder = (root / relative).resolve() if not relative.startswith("/") else Path(relative)
    if folder != root and root not in folder.parents:
        raise BuildFailed(f"{where} is a folder outside model/: only the submission's own packages are built")
    if not folder.is_dir():
        raise BuildFailed(f"{where}: no such folder in model/")
    return folder


def _static(folder: Path, where: str) -> tuple[list[str], list[str]]:
    """A local package's build requirements and static dependencies, from its pyproject.toml (PEP 517's default
    for a package without one: setuptools)."""
    project = folder / "pyproject.toml"
    if not project.is_file():
        return ["setuptools>=40.8.0"], []
    try:
        table = tomllib.loads(project.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise BuildFailed(f"{where}: its pyproject.toml is not TOML ({str(err)[:80]})") from None
    needs = table.get("build-system", {}).get("requires", ["setuptools>=40.8.0"])
    info = table.get("project", {})
    deps = [] if "dependencies" in info.get("dynamic", []) else info.get("dependencies", [])
    if not all(isinstance(x, str) for x in [*needs, *deps]):
        raise BuildFailed(f"{where}: its pyproject.toml's requirements are not lists of strings")
    return list(needs), list(deps)


def _fetch(planned: Plan, wheels: Path, python: Path, log: Path) -> None:
    """The wheels the build needs, as files: what the job's environment lacks of the index requirements, and the
    build requirements whole. pip with --only-binary=:all: builds nothing, so nothing fetched runs here."""
    wheels.mkdir(parents=True, exist_ok=True)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if planned.index:
        with tempfile.TemporaryDirectory(prefix="rexrank-resolve-") as tmp:
            report = Path(tmp) / "report.json"
            _host(pip + ["install", "--dry-run", "--only-binary=:all:", "--quiet", "--report", str(report),
                         *planned.index], log, "resolving requirements.txt against the job's environment")
            missing = [f"{i['metadata']['name']}=={i['metadata']['version']}"
                       for i in json.loads(report.read_text())["install"]]
        if missing:
            _host(pip + ["download", "--no-deps", "--only-binary=:all:", "--dest", str(wheels), *missing], log,
                  "fetching the wheels requirements.txt needs")
    if planned.build:
        _host(pip + ["download", "--only-binary=:all:", "--dest", str(wheels), *planned.build], log,
              "fetching the local packages' build requirements")


def _host(command: list[str], log: Path, doing: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command[1:])}\n")
        handle.flush()
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=FETCH_TIMEOUT, check=False)
    if done.returncode != 0:
        raise BuildFailed(f"{doing} failed (pip's output is in the build log); a package with no wheel for the job's "
                          "platform can be shipped as a folder in model/, built in the sandbox")


def _sandbox(model: Model, into: Path, python: Path, timeout: float, readable: dict[str, Path]) -> Sandbox:
    """The build's sandbox: the network off, /env writable, the scratch copy of model/ at /output/work."""
    scratch = into.parent / f"{into.name}.scratch"
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / "empty").mkdir(parents=True)
    scratch_copy(model.folder, scratch / "output" / "work")  # local packages build here (pip writes in the tree)
    return Sandbox(model.folder.resolve(), scratch / "empty", scratch / "empty", scratch / "output", python=python,
                   environment=into, environment_writable=True, timeout=timeout, max_output_bytes=BUILD_OUTPUT,
                   readable=readable,
                   env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_CACHE_DIR": "1",
                        "PIP_CONFIG_FILE": "/dev/null"})


def _venv(model: Model, planned: Plan, into: Path, log: Path, python: Path, timeout: float) -> Path:
    for stale in (into, into.parent / f"{into.name}.wheels"):
        if stale.exists():
            shutil.rmtree(stale)
    log.write_text("")
    wheels = into.parent / f"{into.name}.wheels"
    _fetch(planned, wheels, python, log)
    made = subprocess.run([str(python), "-m", "venv", "--without-pip", str(into)], capture_output=True, text=True,
                          check=False)  # the job's own interpreter: nothing of the submission is in it yet
    if made.returncode != 0:
        raise BuildFailed(f"making the venv failed: {made.stderr.strip()[:200]}")
    site = Path(sysconfig.get_path("purelib", vars={"base": str(into), "platbase": str(into)}))
    # the job's packages after the venv's own, their own .pth files (editable installs) read too
    (site / "_rexrank_job_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in _site_packages(python)))
    lines = [*planned.index, *(f"/output/work/{folder}" for folder in planned.local)]
    box = _sandbox(model, into, python, timeout, {WHEELS: wheels} if wheels.is_dir() else {})
    (box.output / "requirements.rexrank.txt").write_text("".join(f"{line}\n" for line in lines))
    command = [f"{ENVIRONMENT}/bin/python", "-m", "pip", "install", "--no-index", "--find-links",
               WHEELS if wheels.is_dir() else "/output/empty", "-r", "/output/requirements.rexrank.txt"]
    outcome = box.run(command, log, append=True)
    shutil.rmtree(box.output.parent, ignore_errors=True)
    if not outcome.ok:
        raise BuildFailed(f"pip install -r requirements.txt {outcome.why(timeout, BUILD_OUTPUT)} (in the sandbox, "
                          f"offline; pip's output: {log})")
    return into


def _site_packages(python: Path) -> list[str]:
    """The job's interpreter's site-packages folders (a trusted interpreter: the job's, never a built one)."""
    if python.resolve() == Path(sys.executable).resolve():
        return [p for p in sys.path if p.endswith("-packages")]
    found = subprocess.run([str(python), "-I", "-c", "import sys; print('\\n'.join(p for p in sys.path if "
                            "p.endswith('-packages')))"], capture_output=True, text=True, check=True)
    return found.stdout.split()


def _conda(model: Model, environment: Path, into: Path, log: Path, python: Path, timeout: float) -> Path:
    tool = next((t for t in ("micromamba", "mamba", "conda") if shutil.which(t)), None)
    if tool is None:
        raise BuildFailed("environment.yaml needs conda, mamba or micromamba in the job image, and it has none: "
                          "give a requirements.txt instead")
    _conda_file_allowed(environment)
    for stale in (into, into.parent / f"{into.name}.pkgs"):
        if stale.exists():
            shutil.rmtree(stale)
    packages = into.parent / f"{into.name}.pkgs"
    packages.mkdir(parents=True)
    log.write_text("")
    executable = shutil.which(tool)
    with tempfile.TemporaryDirectory(prefix="rexrank-conda-") as tmp:  # solve and download: links nothing
        _conda_host([executable, "create", "--yes", "--download-only", "-p", f"{tmp}/env", "-f", str(environment)],
                    packages, log)
    box = _sandbox(model, into, python, timeout, {"/conda": Path(executable).resolve().parents[1]})
    box.writable = {"/conda-pkgs": packages}
    box.env |= {"CONDA_PKGS_DIRS": "/conda-pkgs", "MAMBA_ROOT_PREFIX": "/tmp/mamba"}
    into.mkdir(parents=True)
    outcome = box.run([f"/conda/bin/{Path(executable).name}", "create", "--yes", "--offline", "-p", str(ENVIRONMENT),
                       "-f", "/submission/environment.yaml"], log, append=True)
    shutil.rmtree(box.output.parent, ignore_errors=True)
    if not outcome.ok:
        raise BuildFailed(f"{tool} create {outcome.why(timeout, BUILD_OUTPUT)} (in the sandbox, offline; its "
                          f"output: {log})")
    return into


def _conda_file_allowed(path: Path) -> None:
    """environment.yaml may name packages and channels by name only: a channel URL or a pip section would make the
    host's download reach wherever the submitter chose, or run pip online."""
    from rexrank.inference.contract import safe_yaml

    spec = safe_yaml(path.read_bytes(), "environment.yaml")
    if not isinstance(spec, dict):
        raise BuildFailed("environment.yaml: expected a mapping (channels, dependencies)")
    for channel in spec.get("channels") or []:
        if channel not in CONDA_CHANNELS:
            raise BuildFailed(f"environment.yaml: channel {str(channel)[:60]!r}: only {', '.join(CONDA_CHANNELS)}")
    for entry in spec.get("dependencies") or []:
        if not isinstance(entry, str):
            raise BuildFailed("environment.yaml: a pip section (or other mapping) in dependencies; put pip packages "
                              "in requirements.txt-style lines of a conda package, or use requirements.txt alone")
    if set(spec) - {"name", "channels", "dependencies"}:
        raise BuildFailed("environment.yaml: only name, channels and dependencies are read")


def _conda_host(command: list[str], packages: Path, log: Path) -> None:
    import os

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(packages), "CONDA_PKGS_DIRS": str(packages),
           "MAMBA_ROOT_PREFIX": str(packages / ".root")}
    with open(log, "a", encoding="utf-8") as handle:
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL,
                              timeout=FETCH_TIMEOUT, check=False)
    if done.returncode != 0:
        raise BuildFailed("solving and downloading environment.yaml failed (conda's output is in the build log)")
