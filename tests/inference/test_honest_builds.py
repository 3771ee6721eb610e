"""The honest side of the one rule (issue 44): local packages as submitters write them (setuptools with static
metadata, extras and markers; a setup.py whose dependencies are computed, listed in requirements.txt; an in-tree
backend with static metadata, as hatchling's) still plan, fetch and build: the fetch sandbox downloads their build
requirements from the maintainers' index (here a local wheel folder, given as the job gives it: PIP_FIND_LINKS), the
build sandbox builds them offline, and the environment imports them. The fetch sandbox's own walls hold, its network
aside."""

import importlib.metadata
import json
import os
import shutil
import textwrap
import zipfile
from pathlib import Path

import pytest

from rexrank.inference.contract import check_model
from rexrank.inference.environment import build
from rexrank.inference.sandbox import Sandbox

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)"),
    pytest.mark.subprocess, pytest.mark.slow,
]


def repacked(name: str, folder: Path) -> Path:
    """The installed distribution `name` as a wheel in `folder` (the index the test gives the fetch: no network)."""
    dist = importlib.metadata.distribution(name)
    wheel = folder / f"{dist.metadata['Name']}-{dist.version}-py3-none-any.whl"
    kept = [f for f in dist.files if "__pycache__" not in f.parts and ".." not in f.parts
            and f.name not in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")]
    info = next(f.parent for f in dist.files if f.name == "METADATA")
    with zipfile.ZipFile(wheel, "w") as archive:
        for f in kept:
            archive.write(dist.locate_file(f), str(f))
        archive.writestr(f"{info}/RECORD", "".join(f"{f},,\n" for f in kept) + f"{info}/RECORD,,\n")
    return wheel


def static_backend(name: str) -> str:
    """An in-tree backend that writes a wheel from static metadata, as hatchling does for a plain project."""
    return textwrap.dedent(f'''
        import os, zipfile
        def get_requires_for_build_wheel(config_settings=None):
            return []
        def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
            name = "{name}-1.0-py3-none-any.whl"
            with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
                wheel.writestr("{name}.py", "VALUE = 'static'\\n")
                wheel.writestr("{name}-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: {name}\\n"
                               "Version: 1.0\\nRequires-Dist: packaging>=20\\n")
                wheel.writestr("{name}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: t\\n"
                               "Root-Is-Purelib: true\\nTag: py3-none-any\\n")
                wheel.writestr("{name}-1.0.dist-info/RECORD", "")
            return name
    ''')


def honest_model(tmp_path) -> Path:
    model = tmp_path / "model"
    for name in ("stpkg", "legacy", "static"):
        (model / name).mkdir(parents=True)
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/toy", "revision": "0" * 40}],
                                                  "tasks": ["findings"], "gpu_memory_gb": 8}))
    (model / "inference.py").write_text("print('ok')\n")
    (model / "requirements.txt").write_text(textwrap.dedent("""\
        # honest lines: versions, extras, markers, local folders
        numpy>=1.20 ; python_version >= "3.8"
        packaging  # computed by legacy/setup.py, so listed here
        ./stpkg
        legacy
        /submission/static
    """).replace("legacy\n", "./legacy\n"))
    (model / "stpkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "stpkg"\nversion = "0.1"\ndependencies = ["numpy", "packaging>=20; sys_platform != '
        '\'win32\'"]\n[project.optional-dependencies]\ngpu = ["flash-attn>=2"]\n[tool.setuptools]\n'
        'py-modules = ["stpkg"]\n')
    (model / "stpkg" / "stpkg.py").write_text("VALUE = 'setuptools'\n")
    (model / "legacy" / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='legacy', version='0.1', py_modules=['legacy'], "
        "install_requires=['packaging' for _ in range(1)])\n")
    (model / "legacy" / "legacy.py").write_text("VALUE = 'setup.py'\n")
    (model / "static" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "static"\nversion = "1.0"\ndependencies = ["packaging>=20"]\n')
    (model / "static" / "backend.py").write_text(static_backend("static"))
    return model


def test_honest_local_packages_plan_fetch_and_build(tmp_path, monkeypatch):
    index = tmp_path / "index"
    index.mkdir()
    repacked("setuptools", index)
    with zipfile.ZipFile(index / "wheel-0.45.1-py3-none-any.whl", "w") as stand_in:  # pip asks for it beside a
        info = "wheel-0.45.1.dist-info"  # setup.py; setuptools (>= 70.1) builds wheels itself: a stand-in will do
        for name, text in (("METADATA", "Metadata-Version: 2.1\nName: wheel\nVersion: 0.45.1\n"),
                           ("WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
                           ("RECORD", "")):
            stand_in.writestr(f"{info}/{name}", text)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the maintainers' index, here a folder: nothing leaves the machine
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("HF_TOKEN", "hf_HONESTSECRET")
    model = honest_model(tmp_path)
    environment = build(check_model(model), tmp_path / "env", tmp_path / "build.log")
    log = (tmp_path / "build.log").read_text()
    assert "HONESTSECRET" not in log and str(tmp_path) not in log
    fetched = sorted(p.name for p in (tmp_path / "env.wheels").iterdir())
    assert fetched == sorted(p.name for p in index.iterdir())  # the build requirement, fetched in the sandbox
    (tmp_path / "out").mkdir()
    box = Sandbox(model, tmp_path / "out", tmp_path / "out", tmp_path / "out", environment=environment)
    ran = box.run([box.interpreter(), "-c", "import stpkg, legacy, static, numpy, packaging; "
                   "print(stpkg.VALUE, legacy.VALUE, static.VALUE)"], tmp_path / "ran.log")
    assert ran.ok, (tmp_path / "ran.log").read_text()[-2000:]
    assert (tmp_path / "ran.log").read_text().strip() == "setuptools setup.py static"


def test_the_fetch_sandbox_holds_every_wall_but_the_network(tmp_path, monkeypatch):
    """Its probe: environment, outside files, uid, writes, PID 1's command line held; the loopback reached (the
    network is its purpose). And what it may write is bounded, the wheels folder included."""
    monkeypatch.setenv("HF_TOKEN", "hf_FETCHSECRET")
    for name in ("code", "empty", "out", "wheels"):
        (tmp_path / name).mkdir()
    box = Sandbox(tmp_path / "code", tmp_path / "empty", tmp_path / "empty", tmp_path / "out", network=True,
                  writable={"/wheels": tmp_path / "wheels"}, max_output_bytes=4 * 1024 * 1024)
    box.check()
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    ran = box.run([box.interpreter(), "-c", "import os, socket; socket.create_connection(('127.0.0.1', "
                   f"{port}), timeout=3).close(); print(sorted(os.environ), os.getuid()); "
                   "open('/wheels/big', 'wb').write(os.urandom(8 * 1024 * 1024))"], tmp_path / "ran.log")
    listener.close()
    said = (tmp_path / "ran.log").read_text()
    assert "HF_TOKEN" not in said and "FETCHSECRET" not in said and "65534" in said
    assert "REXRANK_LEDGER" not in said and os.environ["REXRANK_LEDGER_KEY"] not in said  # nor the ledger's key
    assert ran.wrote_too_much  # the wheels folder counts towards the bound
