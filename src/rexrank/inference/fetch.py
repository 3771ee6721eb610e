"""The fetch stage of a submission's environment, run inside its own sandbox (rexrank.inference.environment).

`python -I -m rexrank.inference.fetch pip` (or `conda TOOL`), as the job's own interpreter, in a sandbox whose network
is on and whose every other wall holds: no token or other variable of the job's, no host cache, the submission
read-only at /submission, nothing writable but /output (the plan) and /wheels (what is fetched). It reads the
submission's files with the one validator (rexrank.inference.requirements), writes the plan (the lines the build
installs) to /output/plan.txt, and downloads wheels only (`--only-binary=:all:`: pip builds nothing, so no backend,
`setup.py` or sdist runs here); a conda environment is solved and downloaded (`--download-only` links nothing, so no
link script runs). A refusal, or a tool that failed, is one line in /output/refused.txt: the only words of this stage
the host passes on, bounded, beside the log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rexrank.inference.requirements import BuildFailed, conda, plan

SUBMISSION, WHEELS, OUTPUT = Path("/submission"), Path("/wheels"), Path("/output")
PLAN, REFUSED = "plan.txt", "refused.txt"
LOCAL = "/output/work"  # where the build sandbox's scratch copy of model/ is: local packages build from there
NO_WHEEL = ("; a package with no wheel for the job's platform can be shipped as a folder in model/, built in the "
            "sandbox")


def fetch_pip(submission: Path, wheels: Path, output: Path) -> None:
    planned = plan(submission)
    lines = [*planned.index, *(f"{LOCAL}/{folder}" for folder in planned.local)]
    (output / PLAN).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if planned.index:  # resolved against the job's environment: what it has is not fetched again
        report = output / "report.json"
        _run([*pip, "install", "--dry-run", "--only-binary=:all:", "--quiet", "--report", str(report), "--",
              *planned.index], "resolving requirements.txt against the job's environment")
        missing = [f"{i['metadata']['name']}=={i['metadata']['version']}"
                   for i in json.loads(report.read_text())["install"]]
        report.unlink()
        if missing:
            _run([*pip, "download", "--no-deps", "--only-binary=:all:", "--dest", str(wheels), "--", *missing],
                 "fetching the wheels requirements.txt needs")
    if planned.build:  # an isolated build starts from nothing: its requirements whole
        _run([*pip, "download", "--only-binary=:all:", "--dest", str(wheels), "--", *planned.build],
             "fetching the local packages' build requirements")


def fetch_conda(tool: str, submission: Path, packages: Path) -> None:
    conda(submission / "environment.yaml")
    env = os.environ | {"CONDA_PKGS_DIRS": str(packages), "MAMBA_ROOT_PREFIX": "/tmp/mamba"}
    _run([tool, "create", "--yes", "--download-only", "-p", "/tmp/env", "-f", str(submission / "environment.yaml")],
         "solving and downloading environment.yaml", env)


def _run(command: list[str], doing: str, env: dict | None = None) -> None:
    print(f"$ {' '.join(Path(command[0]).name if i == 0 else a for i, a in enumerate(command))}", flush=True)
    done = subprocess.run(command, stdin=subprocess.DEVNULL, env=env, check=False)
    if done.returncode != 0:
        raise BuildFailed(f"{doing} failed (its output is in the build log){NO_WHEEL}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["pip"]:
            fetch_pip(SUBMISSION, WHEELS, OUTPUT)
        elif argv[:1] == ["conda"] and len(argv) == 2:
            fetch_conda(argv[1], SUBMISSION, WHEELS)
        else:
            raise BuildFailed(f"rexrank.inference.fetch: expected pip or conda TOOL, not {argv!r}")
    except BuildFailed as err:
        said = " ".join(str(err).split())
        (OUTPUT / REFUSED).write_text(said + "\n", encoding="utf-8")
        print(f"rexrank: {said}", flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
