"""dataset_scripts/ is the Hub-dataset side: a folder per dataset rexrank builds, its README.md written from
rexrank.data (never drifting from the builder) and a build.py that is `rexrank build-dataset NAME`."""

import hashlib
import json
import subprocess
import sys

import pytest
from conftest import ROOT
from fixtures.built import rexrank_json
from fixtures.scripts import load

from rexrank import demo
from rexrank.builders import BUILDERS
from rexrank.cli import main

SCRIPTS = ROOT / "dataset_scripts"


def readmes():
    return load(SCRIPTS / "readmes.py", "dataset_readmes")


def test_there_is_a_folder_per_builder_and_nothing_else():
    folders = {p.name for p in SCRIPTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders == set(BUILDERS)
    for name in BUILDERS:
        assert {"README.md", "build.py"} <= {p.name for p in (SCRIPTS / name).iterdir()}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_each_readme_is_what_the_builder_says(name):
    written = (SCRIPTS / name / "README.md").read_text(encoding="utf-8")
    assert written == readmes().readme(name), f"run python dataset_scripts/readmes.py: {name}/README.md is stale"
    entry = (SCRIPTS / name / "build.py").read_text(encoding="utf-8")
    assert entry == readmes().build_entry(name), f"run python dataset_scripts/readmes.py: {name}/build.py is stale"
    info = BUILDERS[name].info
    assert info.access in written and info.title in written and "build.py --source" in written


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_build_entry_builds_what_the_command_builds(tmp_path):
    rows = [json.loads(line) for line in demo.DATASET.read_text().splitlines()]
    source = rexrank_json(tmp_path / "ReXRank_MIMICCXR_test.json", rows)
    run = subprocess.run([sys.executable, str(SCRIPTS / "mimic-cxr" / "build.py"), "--source", str(source), "--out",
                          str(tmp_path / "by-script")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert main(["build-dataset", "mimic-cxr", "--source", str(source), "--out", str(tmp_path / "by-cli")]) == 0
    digest = lambda folder: {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
                             for p in sorted(folder.rglob("*")) if p.is_file()}
    by_script, by_cli = digest(tmp_path / "by-script"), digest(tmp_path / "by-cli")
    assert "findings/test-00000-of-00001.parquet" in by_script and by_script == by_cli


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_bad_source_through_the_build_entry_is_one_line_and_exit_2(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPTS / "iu-xray" / "build.py"), "--source",
                          str(tmp_path / "missing.json"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "no such source" in run.stderr and not (tmp_path / "out").exists()
