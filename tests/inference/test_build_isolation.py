"""Everything a submission brings is built and run behind one door (issue 35, item 1), played by a hostile submitter:
a package of its own whose in-tree PEP 517 backend runs at build time, installs a `.pth` file with an import line (run
as whoever starts that environment's Python) and a path line (a host folder it wants bound into the next sandbox),
reaches for the network and reads the job's environment. The host never runs that Python; the build runs offline;
nothing of the `.pth` reaches the host or widens the sandbox."""

import json
import shutil
import socket
import textwrap

import pytest
from fixtures.code_submissions import READ_INPUT

from rexrank.inference.contract import check_model
from rexrank.inference.environment import BuildFailed, build, plan
from rexrank.inference.runner import infer

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)")

REVISION = "0123456789abcdef0123456789abcdef01234567"

# An in-tree build backend that needs no download: build_wheel writes a wheel by hand, holding `evil.pth`.
BACKEND = '''
import base64, hashlib, os, socket, zipfile

def _reach(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return "reached"
    except OSError as err:
        return type(err).__name__

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    saw = f"token: {'HF_TOKEN' in os.environ}, loopback: {_reach(PORT)}"
    name = "evil-0.1-py3-none-any.whl"
    files = {"evil.pth": PTH, "evil_saw.txt": saw,
             "evil-0.1.dist-info/METADATA": "Metadata-Version: 2.1\\nName: evil\\nVersion: 0.1\\n",
             "evil-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: evil\\nRoot-Is-Purelib: true\\n"
                                         "Tag: py3-none-any\\n"}
    record = ""
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record += f"{path},sha256={digest},{len(text.encode())}\\n"
        wheel.writestr("evil-0.1.dist-info/RECORD", record + "evil-0.1.dist-info/RECORD,,\\n")
    return name
'''


def hostile_submission(tmp_path, port: int):
    """model/ with requirements naming its own folder `evil/`, whose wheel installs evil.pth: an import line that
    writes the token it sees to a host file, and a path line naming a host folder holding a secret."""
    outside = tmp_path / "host-folder"
    outside.mkdir()
    (outside / "hostsecret.py").write_text("SECRET = 'read from a host folder'\n")
    marker = tmp_path / "pth-ran-on-host"
    pth = (f"import os; exec('try: open({str(marker)!r}, \"w\").write(os.environ.get(\"HF_TOKEN\", \"no token\"))"
           f"\\nexcept OSError: pass')\n{outside}\n")
    model = tmp_path / "model"
    (model / "evil").mkdir(parents=True)
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/toy", "revision": REVISION}],
                                                  "tasks": ["findings"], "gpu_memory_gb": 8}))
    (model / "requirements.txt").write_text("numpy\n./evil\n")
    (model / "evil" / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "evil"\nversion = "0.1"\n')
    (model / "evil" / "backend.py").write_text(f"PORT = {port}\nPTH = {pth!r}\n" + BACKEND)
    (model / "inference.py").write_text(READ_INPUT + textwrap.dedent("""
        try:
            import hostsecret
            said = hostsecret.SECRET
        except ImportError:
            said = "no host folder"
        for record in data.values():
            record["model_prediction"] = said
        json.dump(data, open(args.save_json_file, "w"))
    """))
    return model, marker


def split_and_images(tmp_path):
    (tmp_path / "images" / "s1").mkdir(parents=True)
    (tmp_path / "images" / "s1" / "0.png").write_bytes(b"synthetic")
    (tmp_path / "split.jsonl").write_text(json.dumps({"study_id": "s1", "findings": "Synthetic finding.",
                                                      "impression": "None.", "image_paths": ["s1/0.png"]}) + "\n")
    snapshot = tmp_path / "cache" / "models--lab--toy" / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_pth_the_build_installs_never_runs_on_the_host_and_binds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_HOSTSECRET")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    model, marker = hostile_submission(tmp_path, listener.getsockname()[1])
    split_and_images(tmp_path)

    environment = build(check_model(model), tmp_path / "env", tmp_path / "build.log")
    assert environment == (tmp_path / "env").resolve() and list(environment.glob("lib/python3*/site-packages/evil.pth"))
    [saw] = environment.glob("lib/python3*/site-packages/evil_saw.txt")
    assert saw.read_text() == "token: False, loopback: ConnectionRefusedError"  # it ran, offline, without the token
    assert not marker.exists()
    infer(model, tmp_path / "split.jsonl", tmp_path / "images", tmp_path / "preds.jsonl", environment=environment,
          weights_cache=tmp_path / "cache")
    [line] = (tmp_path / "preds.jsonl").read_text().splitlines()
    assert json.loads(line)["prediction"] == "no host folder"  # the path line bound nothing
    assert not marker.exists()  # the import line ran in the sandbox only, where the host's files are not
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


@pytest.mark.parametrize("line, why", [
    ("--index-url http://127.0.0.1:8080/simple", "an option"),
    ("-r /etc/passwd", "an option"),
    ("evil @ http://127.0.0.1:8080/evil.whl", "a URL"),
    ("../outside", "outside model/"),
    ("/etc", "outside model/"),
    ("./missing", "no such folder"),
])
def test_requirement_lines_that_would_reach_the_host_are_refused_before_anything_runs(tmp_path, line, why):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/toy", "revision": REVISION}],
                                                  "tasks": ["findings"], "gpu_memory_gb": 8}))
    (model / "inference.py").write_text("print('ok')\n")
    (model / "requirements.txt").write_text(f"numpy\n{line}\n")
    with pytest.raises(BuildFailed, match=f"requirements.txt line 2: .*{why}"):
        plan(check_model(model))
    with pytest.raises(BuildFailed, match="requirements.txt line 2"):
        build(check_model(model), tmp_path / "env", tmp_path / "build.log")
    assert not (tmp_path / "env").exists()


def test_a_local_packages_static_requirements_are_what_the_host_fetches(tmp_path):
    """What the host asks the index for is read from files (requirements lines, pyproject.toml's tables), never by
    running the package's code; a package whose dependencies are dynamic must list them in requirements.txt."""
    model = tmp_path / "model"
    (model / "pkg").mkdir(parents=True)
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/toy", "revision": REVISION}],
                                                  "tasks": ["findings"], "gpu_memory_gb": 8}))
    (model / "inference.py").write_text("print('ok')\n")
    (model / "requirements.txt").write_text("# a comment\ntimm==1.0.9  # trailing\n\n/submission/pkg\n")
    (model / "pkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.20"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "pkg"\nversion = "1"\ndependencies = ["einops>=0.8"]\n')
    planned = plan(check_model(model))
    assert planned.index == ("timm==1.0.9", "einops>=0.8") and planned.build == ("hatchling>=1.20",)
    assert planned.local == ("pkg",)
    (model / "pkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "pkg"\nversion = "1"\ndynamic = ["dependencies"]\n')
    assert plan(check_model(model)).index == ("timm==1.0.9",)  # its own dependencies: listed, or not installed
