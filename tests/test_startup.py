"""A command imports what it needs when it needs it: `--help` loads neither pandas nor torch, and a refused file or a
BLEU-2-only run never loads torch (seconds at startup: benchmarks/startup.py times them; no timing is asserted)."""

import json
import subprocess
import sys

from rexrank import demo

# Runs the command in this interpreter and prints the heavy modules it loaded, last, on stderr.
PROBE = ("import sys; from rexrank.cli import main\ntry:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n"
         "    code = e.code\nprint('LOADED', *[m for m in ('pandas', 'pyarrow', 'torch', 'transformers') "
         "if m in sys.modules], file=sys.stderr)\nsys.exit(code)")


def loaded(*argv: str) -> tuple[int, set[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=300)
    line = done.stderr.strip().splitlines()[-1].split()
    assert line[0] == "LOADED", done.stderr
    return done.returncode, set(line[1:]), done.stderr


def test_help_loads_no_pandas_and_no_torch():
    for argv in (["--help"], ["score", "--help"], ["submit", "--help"]):
        code, modules, _ = loaded(*argv)
        assert code == 0 and modules == set(), (argv, modules)


def test_a_refused_file_is_refused_before_any_model_or_torch(tmp_path):
    bad = tmp_path / "preds.csv"
    bad.write_text("id,text\ndemo-0001,Heart size is normal.\n")
    code, modules, stderr = loaded("score", "--predictions", str(bad), "--dataset", str(demo.DATASET), "--task",
                                   "findings", "--out", str(tmp_path / "out"))  # every metric asked, none loaded
    assert code == 2 and "expected a header" in stderr
    assert "torch" not in modules and not (tmp_path / "out").exists()


def test_a_bleu2_run_never_loads_torch(tmp_path):
    code, modules, _ = loaded("score", "--predictions", str(demo.predictions("demo-careful", "findings")),
                              "--dataset", str(demo.DATASET), "--task", "findings", "--metrics", "bleu2", "--quiet",
                              "--out", str(tmp_path))
    assert code == 0 and "torch" not in modules and "transformers" not in modules
    [result] = [p for p in tmp_path.glob("*.json")]
    assert json.loads(result.read_text())["metrics"]["bleu2"]["value"] > 0
