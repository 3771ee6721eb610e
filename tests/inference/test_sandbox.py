"""Submitted code in the sandbox, played by a hostile submitter: each `inference.py` here tries one way out (the
network, the images, the maintainers' tokens, the reference text, time, disk) and the test asserts the attempt
failed and what the maintainers' side ends up with. Real bubblewrap, real processes; no GPU, no network."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixtures.code_submissions import READ_INPUT

from rexrank.inference import runner
from rexrank.inference.runner import InferenceFailed, infer, read_save
from rexrank.inference.sandbox import Sandbox, SandboxUnavailable

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                 reason="bubblewrap not installed (apt-get install bubblewrap; .ci/run installs it)"),
              pytest.mark.subprocess, pytest.mark.slow]  # each test runs a script in the sandbox (bwrap)

REVISION = "0123456789abcdef0123456789abcdef01234567"
CANARY = "QZX-REFERENCE-CANARY-4471"
STUDIES = ("s1", "s2", "s3")


def write_submission(root: Path, script: str, **card) -> Path:
    """A code submission, its split (reports holding a canary), its images and the Hub cache holding its weights."""
    model = root / "submission" / "model"
    model.mkdir(parents=True)
    fields = {"weights": [{"repo": "lab/toy", "revision": REVISION}], "tasks": ["findings"], "images": "multi",
              "gpu_memory_gb": 8} | card
    (model / "model.yaml").write_text(json.dumps(fields))  # JSON is YAML
    (model / "requirements.txt").write_text("")
    (model / "inference.py").write_text(textwrap.dedent(script))
    for study in STUDIES:
        (root / "images" / study).mkdir(parents=True)
        (root / "images" / study / "0.png").write_bytes(b"\x89PNG synthetic " + study.encode())
    (root / "split.jsonl").write_text("".join(json.dumps({
        "study_id": s, "findings": f"Synthetic findings {CANARY}-{s}.", "impression": f"Impression {CANARY}.",
        "image_paths": [f"{s}/0.png"], "views": ["PA"], "context": "Indication: cough."}) + "\n" for s in STUDIES))
    snapshot = root / "cache" / "models--lab--toy" / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    return root


def run(root: Path, **options):
    return infer(root / "submission", root / "split.jsonl", root / "images", root / "preds.jsonl",
                 weights_cache=root / "cache", **options)


def predictions(root: Path) -> dict[str, str]:
    return {json.loads(line)["study_id"]: json.loads(line)["prediction"]
            for line in (root / "preds.jsonl").read_text().splitlines()}


ANSWER = READ_INPUT + """
def answer(text):
    for record in data.values():
        record["model_prediction"] = text
    json.dump(data, open(args.save_json_file, "w"))
"""


def test_an_honest_script_gets_the_studies_without_reference_text_and_its_predictions_are_read(tmp_path):
    root = write_submission(tmp_path, ANSWER + """
seen = {s: sorted(r) for s, r in data.items()}
images = all(os.path.exists(args.img_root_dir + p) for r in data.values() for p in r["image_path"])
answer(json.dumps({"fields": seen[sorted(seen)[0]], "images": images, "root": args.img_root_dir,
                   "cwd": os.getcwd(), "weights": os.listdir("/weights/lab/toy"), "task": os.environ["REXRANK_TASK"]}))
""")
    done = run(root)
    assert done.studies == 3 and done.task == "findings"
    said = json.loads(predictions(root)["s1"])
    assert said == {"fields": ["context", "frontal_lateral", "image_path", "key_image_path", "split"],
                    "images": True, "root": "/images/", "cwd": "/output/work", "weights": ["config.json"],
                    "task": "findings"}
    assert not (tmp_path / ".preds.jsonl.work").exists()  # its work folder goes once the predictions are written


def test_a_socket_to_a_listener_on_this_machines_loopback_is_refused(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    root = write_submission(tmp_path, ANSWER + f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    answer("connected")
except OSError as err:
    answer("blocked: " + type(err).__name__)
""")
    run(root)
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing ever reached it
    listener.close()
    assert set(predictions(root).values()) == {"blocked: ConnectionRefusedError"}


def test_the_image_folder_and_the_code_cannot_be_written(tmp_path):
    root = write_submission(tmp_path, ANSWER + """
said = []
for path in ("/images/s1/0.png", "/images/new.png", "/submission/inference.py", "/usr/lib/planted"):
    try:
        open(path, "wb").write(b"planted")
        said.append(path + ": written")
    except OSError as err:
        said.append(path + ": " + type(err).__name__)
answer("; ".join(said))
""")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / "images").rglob("*") if p.is_file()}
    script = (root / "submission" / "model" / "inference.py").read_bytes()
    run(root)
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / "images").rglob("*") if p.is_file()}
    assert after == before and (root / "submission" / "model" / "inference.py").read_bytes() == script
    assert "written" not in predictions(root)["s1"] and predictions(root)["s1"].count("OSError") == 4


def test_the_maintainers_tokens_are_not_in_its_environment_or_its_files(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_text("hf_FILESECRET")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", "hf_ENVSECRET")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ENVSECRET")
    root = write_submission(tmp_path, ANSWER + f"""
found = dict(os.environ)
for path in ("{home}/.cache/huggingface/token", os.path.expanduser("~/.cache/huggingface/token"), "/proc/1/environ"):
    try:
        found[path] = open(path, "rb").read().decode("utf-8", "replace")
    except OSError as err:
        found[path] = type(err).__name__
answer(json.dumps(found))
""")
    run(root)
    said = predictions(root)["s1"]
    assert "SECRET" not in said and "HF_TOKEN" not in said and "OPENAI_API_KEY" not in said
    # the ledger's signing key, which the job holds (the conftest sets it): neither its name nor its value
    assert "REXRANK_LEDGER" not in said and os.environ["REXRANK_LEDGER_KEY"] not in said
    assert json.loads(said)["HF_HUB_OFFLINE"] == "1"


def test_no_reference_text_is_in_its_input_or_anywhere_it_can_read(tmp_path):
    """It looks through every file it can open (the canary built from two halves, so that its own source does not
    match) but the system's and the environment's large binaries."""
    root = write_submission(tmp_path, ANSWER + f"""
needle = "{CANARY[:10]}" + "{CANARY[10:]}"
hits = []
for folder, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/dev", "/usr")]
    for name in files:
        path = os.path.join(folder, name)
        try:
            if os.path.getsize(path) < 2_000_000 and needle.encode() in open(path, "rb").read():
                hits.append(path)
        except OSError:
            pass
hits += [s for s, record in data.items() if needle in json.dumps(record)]
answer(json.dumps(hits))
""")
    run(root)
    assert json.loads(predictions(root)["s1"]) == []
    assert CANARY in (root / "split.jsonl").read_text()  # it was there, outside the sandbox


def test_a_script_that_never_ends_is_stopped_at_its_limit_with_all_it_started(tmp_path):
    root = write_submission(tmp_path, """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)  # rexrank-test-orphan"])
while True:
    time.sleep(0.1)
""")
    started = time.monotonic()
    with pytest.raises(InferenceFailed, match="running the model .*ran past its wall-clock limit of 3 s"):
        run(root, timeout=3)
    assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10  # the kernel kills a PID namespace's processes at once, but reaps them later
    while (left := orphans()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == ""  # its child died with it


def orphans() -> str:
    return subprocess.run(["pgrep", "-f", "rexrank-test-orphan"], capture_output=True, text=True).stdout.strip()


def test_a_script_that_writes_gigabytes_is_stopped_at_the_bound(tmp_path):
    root = write_submission(tmp_path, """
import os
chunk = bytes(16 * 1024 * 1024)
for name in ("/output/a.bin", "/output/b.bin", "/output/c.bin", "/output/d.bin"):  # one file, then many
    with open(name, "wb") as handle:
        for _ in range(640):  # 10 GB each, if nothing stopped it
            handle.write(chunk)
            handle.flush()
""")
    bound = 64 * 1024 * 1024
    started = time.monotonic()
    with pytest.raises(InferenceFailed, match=f"wrote more than {bound:,} bytes and was stopped"):
        run(root, max_output=bound)
    assert time.monotonic() - started < 60
    work = tmp_path / ".preds.jsonl.work"
    used = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
    assert used <= bound + 16 * 1024 * 1024  # each file is cut at the bound; the folder is watched


def test_a_save_file_missing_studies_or_text_is_refused_naming_them(tmp_path):
    path = tmp_path / "save.json"
    path.write_text(json.dumps({"s1": {"model_prediction": "ok"}, "s2": {"model_prediction": 3},
                                "zz": {"model_prediction": "extra"}}))
    with pytest.raises(InferenceFailed) as err:
        read_save(path, ["s1", "s2", "s3"], 1 << 20)
    assert ("1 studies without a model_prediction (first: s3); 1 predictions that are not text (first: s2); "
            "1 studies it was not given") in str(err.value)
    assert "zz" not in str(err.value)  # a key the script made up is never shown: it could carry what it saw
    path.write_text("[1, 2]")
    with pytest.raises(InferenceFailed, match="not a JSON object of studies"):
        read_save(path, ["s1"], 1 << 20)


def test_without_a_working_sandbox_nothing_submitted_runs(tmp_path, monkeypatch):
    """A `bwrap` that runs the command without any sandbox (a stand-in for a broken install): the probe finds the
    walls down and refuses, and the submitted script never ran."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done; shift; exec \"$@\"\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    root = write_submission(tmp_path, "open('/tmp/rexrank-test-ran-unsandboxed', 'w').write('ran')\n")
    Path("/tmp/rexrank-test-ran-unsandboxed").unlink(missing_ok=True)
    with pytest.raises(SandboxUnavailable, match="does not hold here|could not be made"):
        run(root)
    assert not Path("/tmp/rexrank-test-ran-unsandboxed").exists()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        Sandbox(tmp_path, tmp_path, tmp_path, tmp_path / "out").run(["true"])


def test_a_killed_run_resumes_from_its_save_file(tmp_path):
    """ReXrank's scripts skip the studies already in their save file: stopped at its limit after one study, the
    same command continues, and the first study is not predicted again."""
    root = write_submission(tmp_path, ANSWER + """
import time
saved = json.load(open(args.save_json_file)) if os.path.exists(args.save_json_file) else {}
for study, record in data.items():
    if study in saved:
        continue
    record["model_prediction"] = f"{study} predicted in run {len(saved) > 0}"
    saved[study] = record
    json.dump(saved, open(args.save_json_file, "w"))
    if study == "s1" and not os.path.exists("/output/once"):
        open("/output/once", "w").close()
        time.sleep(3600)
""")
    with pytest.raises(InferenceFailed, match="its save file is kept, and the same command continues it"):
        run(root, timeout=4)
    run(root)
    assert predictions(root) == {"s1": "s1 predicted in run False", "s2": "s2 predicted in run True",
                                 "s3": "s3 predicted in run True"}


def test_rexrank_infer_on_the_command_line(tmp_path, capsys):
    import shlex

    from rexrank.cli import main
    from rexrank.results import Result, result_files

    root = write_submission(tmp_path, ANSWER + "answer('No acute cardiopulmonary process.')\n")
    code = main(["infer", "--submission", str(root / "submission"), "--dataset", str(root / "split.jsonl"),
                 "--image-root", str(root / "images"), "--out", str(root / "preds.jsonl"), "--weights-cache",
                 str(root / "cache")])
    out = capsys.readouterr().out
    assert code == 0 and "3 studies predicted for findings" in out
    # the line it suggests runs as it is, and names the model after its submission (it was named after --out)
    suggested = shlex.split(next(line for line in out.splitlines() if line.startswith("score them: "))[12:])
    assert suggested[0] == "rexrank" and suggested[suggested.index("--model-name") + 1] == "submission"
    assert main([*suggested[1:], "--metrics", "bleu2", "--out", str(tmp_path / "scored"), "--quiet"]) == 0
    assert [Result.read(p).model.name for p in result_files(tmp_path / "scored")] == ["submission"]
    (root / "cache" / "models--lab--toy").rename(root / "cache" / "elsewhere")
    assert main(["infer", "--submission", str(root / "submission"), "--dataset", str(root / "split.jsonl"),
                 "--image-root", str(root / "images"), "--out", str(root / "again.jsonl"), "--weights-cache",
                 str(root / "cache")]) == 2
    assert "weights not in the Hugging Face cache" in capsys.readouterr().err


def test_the_sandbox_passes_one_gpu_and_no_other(tmp_path):
    """The GPU a block is given, and only it: its device node and the driver's, CUDA_VISIBLE_DEVICES naming it. No
    GPU here: the command line is what this asserts; benchmarks/sandbox_gpu.py runs it where there is one."""
    box = Sandbox(tmp_path, tmp_path, tmp_path, tmp_path / "out", gpu=1)
    argv = box.argv()
    assert ["--dev-bind-try", "/dev/nvidia1", "/dev/nvidia1"] == argv[argv.index("/dev/nvidia1") - 1:
                                                                      argv.index("/dev/nvidia1") + 2]
    assert "/dev/nvidia0" not in argv and box.variables()["CUDA_VISIBLE_DEVICES"] == "1"
    assert Sandbox(tmp_path, tmp_path, tmp_path, tmp_path / "out").variables()["CUDA_VISIBLE_DEVICES"] == ""
    assert runner.DEFAULT_TIMEOUT == 24 * 3600 and sys.executable


def test_an_official_valid_split_is_run_without_naming_its_split(tmp_path):
    """CheXpert Plus's official split is `valid`: known by its study ids (synthetic reports under them), it is run
    as such with no --split, and each study's input says so."""
    from rexrank.data.known import official_ids

    ids = official_ids("chexpert-plus", "valid")
    root = write_submission(tmp_path, ANSWER + "answer(json.dumps(sorted({r['split'] for r in data.values()})))\n",
                            tasks=["findings_impression"])
    (root / "split.jsonl").write_text("".join(json.dumps({
        "study_id": s, "findings": None, "impression": "Synthetic impression.", "image_paths": [f"{STUDIES[0]}/0.png"]})
        + "\n" for s in ids))
    done = run(root)
    assert done.studies == len(ids) == 200 and set(predictions(root).values()) == {'["valid"]'}


def test_rexrank_infer_runs_a_vqa_model_and_its_suggested_score_vqa_runs(tmp_path, capsys):
    """`rexrank infer --task vqa` on a split built by `rexrank build-dataset rexvqa` (the synthetic demo questions):
    the questions and options reach the script as the job gives them, never the answers; the `rexrank score-vqa` line
    it prints runs as printed and scores what the script answered."""
    import shlex

    from rexrank.cli import main
    from rexrank.scorers.rexvqa_accuracy import extract, options_of

    demo = Path(__file__).resolve().parents[2] / "src" / "rexrank" / "demo" / "rexvqa"
    questions = json.loads((demo / "metadata" / "test_vqa_data.json").read_text())
    assert main(["build-dataset", "rexvqa", "--source", str(demo), "--out", str(tmp_path / "vqa")]) == 0
    root = write_submission(tmp_path, READ_INPUT + """
for record in data.values():
    assert "correct_answer" not in record and "task_name" not in record
    letter = "ABCD"[sum(map(ord, record["question"])) % len(record["options"])]
    record["model_prediction"] = f"Answer: {letter}"
json.dump(data, open(args.save_json_file, "w"))
""", tasks=[], serves=["VQA"])
    for record in questions.values():
        for path in record["ImagePath"]:
            (root / "images" / path.removeprefix("../")).parent.mkdir(parents=True, exist_ok=True)
            (root / "images" / path.removeprefix("../")).write_bytes(b"synthetic image")
    capsys.readouterr()
    assert main(["infer", "--submission", str(root / "submission"), "--dataset", str(tmp_path / "vqa"), "--task",
                 "vqa", "--image-root", str(root / "images"), "--out", str(root / "answers.jsonl"),
                 "--weights-cache", str(root / "cache")]) == 0
    out = capsys.readouterr().out
    assert f"{len(questions):,} questions answered for vqa" in out
    suggested = shlex.split(next(line for line in out.splitlines() if line.startswith("score them: "))[12:])
    assert suggested[:2] == ["rexrank", "score-vqa"]
    assert main(suggested[1:]) == 0  # complete as printed: no option left to add
    written = next(Path(suggested[suggested.index("--out") + 1]).glob("*.json"))
    overall = {r["category"]: r for r in json.loads(written.read_text())["rows"]}["overall"]
    right = sum(extract(f"Answer: {'ABCD'[sum(map(ord, r['question'])) % len(r['options'])]}",
                        options_of(r["options"])).letter == r["correct_answer"] for r in questions.values())
    assert (overall["questions"], overall["correct"], overall["failed_extractions"]) == (len(questions), right, 0)
    assert json.loads(written.read_text())["model"] == "submission"
