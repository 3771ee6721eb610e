"""The job's Python as README's own line makes it (`python3 -m venv .venv && .venv/bin/pip install -e
".[models]"`) with a distribution's python3: Debian's puts `/usr` on its path (its base prefix, its standard
library), which the sandbox shows read-only to every script already. Such a venv runs a script in the sandbox; a
path that would show the host (the home folder, /tmp, /, a top-level folder) is still refused. Real interpreters:
Debian's /usr/bin/python3 where this machine has one."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_sandbox import ANSWER, predictions, run, write_submission

from rexrank.inference.sandbox import Sandbox, SandboxUnavailable

SYSTEM_PYTHON = Path("/usr/bin/python3")
SYSTEM = pytest.mark.skipif(not SYSTEM_PYTHON.is_file(), reason="no distribution python3 at /usr/bin/python3")
BWRAP = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                           reason="bubblewrap not installed (apt-get install bubblewrap)")


@pytest.fixture(scope="module")
def system_venv(tmp_path_factory):
    """README's `python3 -m venv .venv` with the distribution's python3 (no pip: nothing here needs it)."""
    venv = tmp_path_factory.mktemp("job") / ".venv"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def box(tmp_path: Path, python: Path) -> Sandbox:
    return Sandbox(tmp_path, tmp_path, tmp_path, tmp_path / "out", python=python)


def base_prefix(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-I", "-c", "import sys; print(sys.base_prefix)"], capture_output=True,
                               text=True, check=True).stdout.strip()).resolve()


@SYSTEM
def test_a_system_pythons_venv_shows_its_own_folder_and_leans_on_usr(tmp_path, system_venv):
    python = system_venv / "bin" / "python"
    system = base_prefix(python)
    paths = box(tmp_path, python).job_paths()
    assert system_venv.resolve() in paths
    assert not any(p == system or system in p.parents for p in paths)  # bound read-only for every script already
    argv = box(tmp_path, python).argv()
    bound = [Path(argv[i + 1]) for i, a in enumerate(argv) if a == "--ro-bind"]
    assert bound.count(Path("/usr")) == 1 and system_venv.resolve() in bound


@SYSTEM
@pytest.mark.parametrize("shown", ["home", "tmp", "root", "top"])
def test_a_path_that_would_show_the_host_is_still_refused(tmp_path_factory, shown):
    """A .pth line puts the folder on the interpreter's sys.path (what a pip-installed package may do)."""
    folder = {"home": Path.home(), "tmp": Path(tempfile.gettempdir()), "root": Path("/"),
              "top": Path("/srv")}[shown]
    if not folder.is_dir():
        pytest.skip(f"{folder} is not on this machine")
    venv = tmp_path_factory.mktemp("pth") / ".venv"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site_packages(venv) / "widen.pth").write_text(f"{folder}\n")
    with pytest.raises(SandboxUnavailable, match=f"puts {folder} on its path"):
        box(tmp_path_factory.mktemp("box"), venv / "bin" / "python").job_paths()


@SYSTEM
@BWRAP
@pytest.mark.slow
@pytest.mark.subprocess
def test_rexrank_infer_runs_a_script_with_a_system_pythons_venv(tmp_path, system_venv):
    """End to end through the runner: the sandbox's probe passes and the script runs under that venv's Python."""
    root = write_submission(tmp_path, ANSWER + """
import sys
answer(json.dumps({"prefix": sys.prefix, "base": sys.base_prefix, "version": list(sys.version_info[:2])}))
""")
    done = run(root, python=system_venv / "bin" / "python")
    said = json.loads(predictions(root)["s1"])
    assert done.studies == 3
    assert said["prefix"] == str(system_venv.resolve()) and Path(said["base"]).resolve() == \
        base_prefix(system_venv / "bin" / "python")
    assert said["version"] == json.loads(subprocess.run([str(SYSTEM_PYTHON), "-c", "import json, sys; print("
                                                         "json.dumps(sys.version_info[:2]))"], capture_output=True,
                                                        text=True, check=True).stdout)


def test_readmes_models_extra_holds_what_rexranks_transformers_runner_imports():
    """README's venv (`.[models]`) is the job's Python for `runner: transformers`: every package rexrank's runner
    imports in the sandbox is in it (Pillow was not: transformers' image processors and the runner's image loader
    need it, and only the dev extra brought it, through gradio)."""
    import ast
    import tomllib
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement

    import rexrank.inference as package

    folder = Path(package.__file__).parent
    modules = {alias.name.split(".")[0] if isinstance(node, ast.Import) else node.module.split(".")[0]
               for name in ("hf_runner.py", "hf_models.py", "batching.py")
               for node in ast.walk(ast.parse((folder / name).read_text()))
               if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
               for alias in node.names}
    third_party = sorted(m for m in modules if m not in sys.stdlib_module_names and m not in ("rexrank", "__future__"))
    project = tomllib.loads((folder.parents[2] / "pyproject.toml").read_text())["project"]
    installed = {Requirement(r).name.lower() for r in (*project["dependencies"],
                                                        *project["optional-dependencies"]["models"])}
    found = packages_distributions()
    assert "PIL" in third_party and "torch" in third_party
    assert [m for m in third_party if not {d.lower() for d in found.get(m, [m])} & installed] == []
