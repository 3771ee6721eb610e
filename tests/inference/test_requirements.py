"""One rule for every requirement a submission writes (issue 44, item 2), played by a hostile submitter: each route
into pip or conda (requirements.txt lines, a local package's dependencies, optional dependencies and build
requirements, environment.yaml) refused in one line naming the file and the entry; hostile TOML shapes a one-line
refusal, never a traceback; folders resolved before they are compared. The honest shapes pass."""

import json
import subprocess
import sys

import pytest

from rexrank.inference.requirements import MAX_FILE_BYTES, BuildFailed, conda, plan, requirement

HOST = "http://127.0.0.1:9"
ATTACKS = [  # what a package tool would have followed, read as an option, a URL or a path
    "--requirement=/proc/self/environ",
    "-r/proc/self/environ",
    f"--index-url={HOST}/simple",
    f"-r{HOST}/r.txt",
    "--report=/tmp/written-by-pip.json",
    f"x @ {HOST}/x.whl",
    "evilhost @ file:///tmp/model/pkg2",
    "/tmp/model/pkg2",
    "./pkg2",
    "numpy --hash=sha256:00",
    'numpy; python_version == "3 --index-url=http://127.0.0.1:9"',
    'numpy; python_version == "${HF_TOKEN}"',
    "numpy\n-r /proc/self/environ",
]


def package(tmp_path, pyproject: str, requirements: str = "./pkg\n"):
    model = tmp_path / "model"
    (model / "pkg").mkdir(parents=True, exist_ok=True)
    (model / "requirements.txt").write_text(requirements)
    (model / "pkg" / "pyproject.toml").write_text(pyproject)
    return model


def one_line_refusal(model) -> str:
    with pytest.raises(BuildFailed) as caught:
        plan(model)
    said = str(caught.value)
    assert "\n" not in said and len(said) < 400
    return said


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("where", ["dependencies", "optional-dependencies", "build-system.requires"])
def test_a_local_packages_lists_go_through_the_one_rule(tmp_path, attack, where):
    listed = json.dumps([attack])
    pyproject = {"dependencies": f'[project]\nname = "pkg"\nversion = "1"\ndependencies = {listed}\n',
                 "optional-dependencies": f'[project]\nname = "pkg"\nversion = "1"\n'
                                          f'[project.optional-dependencies]\ngpu = {listed}\n',
                 "build-system.requires": f'[build-system]\nrequires = {listed}\n'}[where]
    said = one_line_refusal(package(tmp_path, pyproject))
    entry = {"dependencies": "[project].dependencies[0]", "optional-dependencies":
             "[project].optional-dependencies.gpu[0]", "build-system.requires": "[build-system].requires[0]"}[where]
    assert said.startswith(f"pkg/pyproject.toml {entry}: ")


@pytest.mark.parametrize("attack", [a for a in ATTACKS if "\n" not in a and not a.startswith(("/", "./"))])
def test_a_requirements_line_goes_through_the_same_rule(tmp_path, attack):
    model = tmp_path / "model"
    model.mkdir()
    (model / "requirements.txt").write_text(f"numpy\n{attack}\n")
    assert one_line_refusal(model).startswith("requirements.txt line 2: ")


@pytest.mark.parametrize("line", ["{model}/../../..", "{model}/pkg/../..", "/submission/../etc", "./link/x",
                                  "{model}/../model2", "pkg/../../model2"])
def test_a_folder_is_resolved_before_it_is_compared_with_model(tmp_path, line):
    model = package(tmp_path, '[project]\nname = "pkg"\nversion = "1"\n')
    (tmp_path / "model2").mkdir()
    (model / "link").symlink_to(tmp_path)
    (model / "requirements.txt").write_text(line.format(model=model) + "\n")
    assert "is a folder outside model/" in one_line_refusal(model)


HOSTILE_TOML = {
    "build-system = \"x\"\n": "[build-system]: 'x' is not a table",
    "project = [1]\n": "[project]: (a list) is not a table",
    "[project]\ndynamic = 5\n": "[project].dynamic: (a int) is not a list",
    "[project]\ndependencies = \"numpy\"\n": "[project].dependencies: 'numpy' is not a list",
    "[project]\ndependencies = [1]\n": "[project].dependencies[0]: (a int) is not a string",
    "[project]\ndependencies = [[\"numpy\"]]\n": "[project].dependencies[0]: (a list) is not a string",
    "[project]\noptional-dependencies = 3\n": "[project].optional-dependencies: (a int) is not a table",
    "[project.optional-dependencies]\nx = {a = 1}\n": "[project].optional-dependencies.x: (a dict) is not a list",
    "[build-system]\nrequires = {a = 1}\n": "[build-system].requires: (a dict) is not a list",
    "[build-system]\nrequires = [{a = 1}]\n": "[build-system].requires[0]: (a dict) is not a string",
    "x = " + "[" * 100_000 + "]" * 100_000 + "\n": "nested too deep to read",
    "[project\n": "not TOML",
    "x = \"\\ud800\"\n": "not TOML",
}


@pytest.mark.parametrize("text", list(HOSTILE_TOML), ids=range(len(HOSTILE_TOML)))
def test_hostile_toml_is_one_line(tmp_path, text):
    assert HOSTILE_TOML[text] in one_line_refusal(package(tmp_path, text))


def test_hostile_bytes_and_a_huge_file_are_one_line(tmp_path):
    model = tmp_path / "model"
    (model / "pkg").mkdir(parents=True)
    (model / "requirements.txt").write_text("./pkg\n")
    (model / "pkg" / "pyproject.toml").write_bytes(b"[project]\nname = \"\xff\"\n")
    assert "not TOML" in one_line_refusal(model)
    (model / "pkg" / "pyproject.toml").write_text("[project]\n" + "x = 1\n" * (MAX_FILE_BYTES // 6 + 1))
    assert f"more than {MAX_FILE_BYTES // 1024} KiB" in one_line_refusal(model)
    (model / "requirements.txt").write_text("numpy\n" * (MAX_FILE_BYTES // 6 + 1))
    assert one_line_refusal(model).startswith("requirements.txt: ")


@pytest.mark.subprocess
def test_deep_nesting_is_one_line_through_the_fetch_module(tmp_path):
    """The fetch stage's own entry point, as the sandbox runs it: exit 2, one line, no traceback."""
    model = package(tmp_path, "x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "out").mkdir()
    code = ("import sys; from pathlib import Path; import rexrank.inference.fetch as f; "
            f"f.SUBMISSION, f.OUTPUT = Path({str(model)!r}), Path({str(tmp_path / 'out')!r}); "
            "sys.exit(f.main(['pip']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    assert (tmp_path / "out" / "refused.txt").read_text() == "pkg/pyproject.toml: nested too deep to read\n"


HONEST = ["numpy", "numpy>=1.24,<3", "transformers==4.47.0", "open_clip_torch>=2.24; python_version >= \"3.10\"",
          "accelerate[testing]>=0.30", "torch ; sys_platform == 'linux'", "Pillow~=10.0", "einops", "timm==1.0.*",
          "scikit-image!=0.22.0", "protobuf<5 ; platform_machine == \"x86_64\" and python_version < \"3.13\""]


@pytest.mark.parametrize("line", HONEST)
def test_honest_requirements_pass_as_written(line):
    from packaging.requirements import Requirement

    assert Requirement(requirement(line, "requirements.txt", "line 1")) == Requirement(line)


def test_honest_local_packages_plan(tmp_path):
    model = package(tmp_path, '[build-system]\nrequires = ["hatchling>=1.20"]\nbuild-backend = "hatchling.build"\n'
                              '[project]\nname = "pkg"\nversion = "1"\ndependencies = ["einops>=0.8"]\n'
                              '[project.optional-dependencies]\ngpu = ["flash-attn>=2; sys_platform == \'linux\'"]\n',
                    "numpy  # trailing\n./pkg\n/submission/setup_only\n")
    (model / "setup_only").mkdir()
    (model / "setup_only" / "setup.py").write_text("from setuptools import setup\nsetup(name='s')\n")
    planned = plan(model)
    assert planned.index == ("numpy", "einops>=0.8") and planned.local == ("pkg", "setup_only")
    assert planned.build == ("hatchling>=1.20", "setuptools>=40.8.0", "wheel")


@pytest.mark.parametrize("entry, refused", [
    ("python=3.11", False), ("numpy>=1.24,<3", False), ("pytorch::pytorch=2.1", False), ("cuda-version 12.1.*", False),
    ("pip", False), ({"pip": ["x"]}, True), ("https://evil/x.tar.bz2", True), ("/tmp/x.tar.bz2", True),
    ("evil::x", True), ("numpy[url=https://evil/x]", True), ("x; --index-url y", True)])
def test_environment_yaml_dependencies_are_names_and_versions(tmp_path, entry, refused):
    (tmp_path / "environment.yaml").write_text(json.dumps({"channels": ["conda-forge"], "dependencies": [entry]}))
    if not refused:
        conda(tmp_path / "environment.yaml")
        return
    with pytest.raises(BuildFailed, match=r"^environment.yaml dependencies\[0\]: "):
        conda(tmp_path / "environment.yaml")


def test_environment_yaml_channels_by_name_only(tmp_path):
    (tmp_path / "environment.yaml").write_text("channels: [https://evil.example/conda]\ndependencies: [numpy]\n")
    with pytest.raises(BuildFailed, match=r"environment.yaml channels\[0\]: 'https://evil.example/conda' is not"):
        conda(tmp_path / "environment.yaml")
