"""How long the `rexrank` command takes to start: `rexrank --help`, a refused predictions file, and a BLEU-2-only
run of both tasks on a synthetic split of MIMIC-CXR's test size (2,347 studies), each in a fresh process.

    python benchmarks/startup.py [--src DIR] [--repeats 5]

`--src` times another checkout's `src/` (e.g. the code before a change: `git archive BASE src | tar -x -C /tmp/b`,
then `--src /tmp/b/src`). Prints the median and best wall time of each, and whether torch was imported (it is not
needed by any of the three). Timings are never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import pairs

HERE = Path(__file__).resolve().parent
STUDIES = 2347  # ReXrank's MIMIC-CXR test split

# Runs the command in-process and reports whether torch got imported: a refused file or BLEU-2 need no torch.
PROBE = ("import sys; from rexrank.cli import main; code = main(sys.argv[1:]); "
         "print('TORCH' if 'torch' in sys.modules else 'NOTORCH', file=sys.stderr); sys.exit(code)")


def files(folder: Path) -> dict[str, Path]:
    """A synthetic split and predictions of STUDIES studies, and a refused file (a CSV with a wrong header)."""
    candidates, references = pairs(STUDIES, seed=1)
    split = folder / "split.jsonl"
    split.write_text("".join(json.dumps({"study_id": f"s{i:05d}", "findings": r, "impression": r.split(". ")[0]})
                             + "\n" for i, r in enumerate(references)))
    predictions = folder / "model.jsonl"
    predictions.write_text("".join(json.dumps({"study_id": f"s{i:05d}", "prediction": c}) + "\n"
                                   for i, c in enumerate(candidates)))
    refused = folder / "refused.csv"
    refused.write_text("id,text\ns00000,Heart size is normal.\n")
    return {"split": split, "predictions": predictions, "refused": refused}


def commands(paths: dict[str, Path], out: Path) -> dict[str, list[list[str]]]:
    score = ["score", "--dataset", str(paths["split"]), "--quiet", "--metrics", "bleu2", "--out", str(out)]
    return {
        "rexrank --help": [["--help"]],
        "a refused file (exit 2)": [score + ["--predictions", str(paths["refused"]), "--task", "findings"]],
        "BLEU-2, both tasks": [score + ["--predictions", str(paths["predictions"]), "--task", task]
                               for task in ("findings", "findings_impression")],
    }


def once(runs: list[list[str]], env: dict[str, str]) -> tuple[float, bool]:
    start, torch = time.perf_counter(), False
    for argv in runs:
        done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True)
        torch |= "TORCH" in done.stderr.split()
        if done.returncode not in (0, 2):
            raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start, torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", default=str(HERE.parent / "src"), help="the src/ folder whose rexrank to time")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": args.src, "HF_HUB_OFFLINE": "1", "REXRANK_CACHE": "off"}
    with tempfile.TemporaryDirectory(prefix="rexrank-startup-") as tmp:
        paths = files(Path(tmp))
        print(f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores; rexrank from "
              f"{args.src}; best and median of {args.repeats}")
        print("| command | best s | median s | imports torch |\n|---|---:|---:|---|")
        for name, runs in commands(paths, Path(tmp) / "out").items():
            times, torch = [], False
            for _ in range(args.repeats):
                seconds, used = once(runs, env)
                times.append(seconds)
                torch |= used
            print(f"| {name} | {min(times):.2f} | {statistics.median(times):.2f} | {'yes' if torch else 'no'} |")


if __name__ == "__main__":
    main()
