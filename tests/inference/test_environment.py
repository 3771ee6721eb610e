"""A code submission's environment, built as the inference job's build stage builds it: layered over this one, the
install itself in the sandbox (network off, no token: a package's build script is submitted code too)."""

import json
import shutil
import textwrap

import pytest

from rexrank.inference.contract import check_model
from rexrank.inference.environment import BuildFailed, build
from rexrank.inference.sandbox import Sandbox

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)"),
    pytest.mark.subprocess, pytest.mark.slow,  # each test builds or runs an environment in the sandbox (bwrap)
]


def model_folder(tmp_path, requirements: str | None = None, conda: str | None = None):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.yaml").write_text(json.dumps({
        "weights": [{"repo": "lab/toy", "revision": "0" * 40}], "tasks": ["findings"], "gpu_memory_gb": 8}))
    (folder / "inference.py").write_text("print('ok')\n")
    if requirements is not None:
        (folder / "requirements.txt").write_text(requirements)
    if conda is not None:
        (folder / "environment.yaml").write_text(conda)
    return folder


def test_a_venv_over_the_jobs_packages_takes_what_is_there_and_runs_rexrank_in_the_sandbox(tmp_path):
    folder = model_folder(tmp_path, "numpy\n")
    environment = build(check_model(folder), tmp_path / "env", tmp_path / "build.log")
    assert environment == tmp_path.resolve() / "env"
    assert "Requirement already satisfied: numpy" in (tmp_path / "build.log").read_text()
    (tmp_path / "out").mkdir()
    box = Sandbox(folder, tmp_path / "out", tmp_path / "out", tmp_path / "out", environment=environment)
    ran = box.run([box.interpreter(), "-c", "import sys, numpy, rexrank.inference.hf_runner; print(sys.prefix)"],
                  tmp_path / "ran.log")
    assert ran.ok and (tmp_path / "ran.log").read_text().strip() == "/env"  # run there, never here


def test_a_packages_build_script_runs_without_the_maintainers_token(tmp_path, monkeypatch):
    """A requirement whose build backend reports its environment, and its sandbox's PID 1's, by failing."""
    monkeypatch.setenv("HF_TOKEN", "hf_BUILDSECRET")
    folder = model_folder(tmp_path, "/submission/envdump\n")
    (folder / "envdump").mkdir()
    (folder / "envdump" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n')
    (folder / "envdump" / "backend.py").write_text(textwrap.dedent("""
        import os
        def _dump(*args, **kwargs):
            first = open("/proc/1/environ", "rb").read().replace(bytes(1), b" ").decode()
            raise RuntimeError("ENVIRONMENT " + " ".join(f"{k}={v}" for k, v in os.environ.items()) + " PID1 " + first)
        get_requires_for_build_wheel = lambda config_settings=None: []
        prepare_metadata_for_build_wheel = build_wheel = _dump
    """))
    with pytest.raises(BuildFailed, match="pip install -r requirements.txt exited with code 1"):
        build(check_model(folder), tmp_path / "env", tmp_path / "build.log")
    log = (tmp_path / "build.log").read_text()
    assert "ENVIRONMENT " in log and "PID1 PATH=/usr/bin:/bin" in log  # it ran, and said what it saw
    assert "BUILDSECRET" not in log and "HF_TOKEN" not in log


def test_an_environment_yaml_needs_conda_in_the_job_image(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no conda, mamba or micromamba here
    folder = model_folder(tmp_path, conda="name: m\ndependencies: [python=3.11]\n")
    if any(shutil.which(tool) for tool in ("conda", "mamba", "micromamba")):
        pytest.skip("this machine has conda")
    with pytest.raises(BuildFailed, match="environment.yaml needs conda, mamba or micromamba"):
        build(check_model(folder), tmp_path / "env", tmp_path / "build.log")
