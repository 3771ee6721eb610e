"""A code submission's environment, built before any private data is on the machine.

`requirements.txt`: a venv layered over the job's own environment (a `.pth` file puts the job's packages after the
venv's own, so a pinned `transformers==4.47.0` in the requirements wins and what the image already has is not
fetched again), then `pip install -r requirements.txt`. `environment.yaml`: `conda env create` (the job image must
carry conda, mamba or micromamba). Installing runs code of the packages it names (their build scripts), so it runs
in the sandbox too, with the network on but without the maintainers' environment or any token, and with only the
environment's own folder writable.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from rexrank.inference.contract import ENVIRONMENTS, Model
from rexrank.inference.sandbox import Sandbox

BUILD_TIMEOUT = 2 * 3600.0


class BuildFailed(RuntimeError):
    """The environment could not be built; the message says why in rexrank's words, the log is the pip's."""


def build(model: Model, into: Path, log: Path, python: str | Path | None = None,
          timeout: float = BUILD_TIMEOUT) -> Path:
    """The environment for `model` in `into`; returns its Python. `log`: what pip or conda printed."""
    python = Path(python or sys.executable)
    into = into.resolve()
    requirements, conda_file = (model.folder / name for name in ENVIRONMENTS)
    if requirements.is_file():
        return _venv(model, into, requirements, log, python, timeout)
    if conda_file.is_file():
        return _conda(model, into, conda_file, log, python, timeout)
    return python  # rexrank's own runner: the job's environment as it is


def _sandbox(model: Model, into: Path, python: Path, timeout: float) -> Sandbox:
    scratch = into.parent / f"{into.name}.scratch"
    (scratch / "work").mkdir(parents=True, exist_ok=True)
    return Sandbox(model.folder.resolve(), scratch, scratch, scratch, python=python, timeout=timeout, network=True,
                   writable=(into,), max_output_bytes=64 * 1024 * 1024,
                   env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_CACHE_DIR": "/tmp/pip"})


def _venv(model: Model, into: Path, requirements: Path, log: Path, python: Path, timeout: float) -> Path:
    if into.exists():
        shutil.rmtree(into)
    made = subprocess.run([str(python), "-m", "venv", "--without-pip", str(into)], capture_output=True, text=True,
                          check=False)
    if made.returncode != 0:
        raise BuildFailed(f"making the venv failed: {made.stderr.strip()[:200]}")
    inner = into / "bin" / "python"
    site = subprocess.run([str(inner), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    outer = subprocess.run([str(python), "-c", "import sys; print('\\n'.join(p for p in sys.path if "
                            "p.endswith('-packages')))"], capture_output=True, text=True, check=True).stdout.split()
    # the job's packages after the venv's own, their own .pth files (editable installs) read too
    Path(site, "_rexrank_job_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in outer))
    outcome = _sandbox(model, into, inner, timeout).run(
        [str(inner), "-m", "pip", "install", "--no-input", "-r", "/submission/requirements.txt"], log)
    if not outcome.ok:
        raise BuildFailed(f"pip install -r requirements.txt {outcome.why(timeout, 64 * 1024 * 1024)}")
    return inner


def _conda(model: Model, into: Path, environment: Path, log: Path, python: Path, timeout: float) -> Path:
    tool = next((t for t in ("micromamba", "mamba", "conda") if shutil.which(t)), None)
    if tool is None:
        raise BuildFailed("environment.yaml needs conda, mamba or micromamba in the job image, and it has none: "
                          "give a requirements.txt instead")
    command = [shutil.which(tool), "env", "create", "-y", "-p", str(into), "-f", "/submission/environment.yaml"]
    box = _sandbox(model, into, python, timeout)
    box.readable = (Path(shutil.which(tool)).resolve().parents[1],)  # conda's own install
    box.env["CONDA_PKGS_DIRS"] = "/tmp/conda-pkgs"
    outcome = box.run(command, log)
    if not outcome.ok:
        raise BuildFailed(f"{tool} env create {outcome.why(timeout, 64 * 1024 * 1024)}")
    return into / "bin" / "python"
