"""A code submission's whole way on the fake Hub: `rexrank submit --model`, the review, the webhook's worker
starting the inference job through `HfApi.run_job` (a fake that records its arguments and runs its command here),
and the job's stages (read, build, smoke, private) in the sandbox. The private references hold a canary, which must
appear nowhere: no file of any branch, no comment, no output, no log."""

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from fixtures.code_submissions import READ_INPUT
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.backend.webhook import Job, Settings, Worker
from rexrank.catalog import TEST_SETS
from rexrank.cli import main
from rexrank.data.build import Build, push_dataset, write_dataset
from rexrank.results import Result
from rexrank.rules import ledger, signing

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)"),
    pytest.mark.subprocess, pytest.mark.slow,  # each test runs the job's command (python -m rexrank.backend infer)
]
REPO = "rexrank/results"
CANARY = "ZQX-INFER-CANARY-5512"
REVISION = "a" * 40
PRIVATE = [f"g{i}" for i in range(20)]
PUBLIC = [f"iu{i}" for i in range(10)]
SUBMISSION = "gradient-lab-coded-model"

SCRIPT = READ_INPUT + """
private = any(study.startswith("g") for study in data)
print("smoke run: studies", sorted(data) if not private else len(data))
for study, record in data.items():
    size = sum(os.path.getsize(args.img_root_dir + p) for p in record["image_path"])
    record["model_prediction"] = f"The lungs are clear; {size} bytes of image for study {study}."
    if not private and open("/submission/fail.txt").read().strip() == "smoke":
        print("SMOKE-" + "OUTPUT: a public study failed")
        sys.exit(1)
    if private and open("/submission/fail.txt").read().strip() == "fail":
        print("LEAK" + "ED:", open(args.img_root_dir + record["image_path"][0], "rb").read()[:40])
        sys.exit(137)  # a number it chose after seeing a private image
if private and open("/submission/fail.txt").read().strip() == "byte":
    open(args.save_json_file, "wb").write(b"{" + b" " * 136 + bytes([255]) + b"}")  # a position it chose
    sys.exit(0)
json.dump(data, open(args.save_json_file, "w"))
"""


def images(folder, studies):
    for study in studies:
        (folder / study).mkdir(parents=True)
        (folder / study / "0.png").write_bytes(f"synthetic image of {study} ".encode() * (1 + len(study)))
    return folder


@pytest.fixture
def hub(fake_hub, tmp_path, monkeypatch):
    """A results repo, the private references (with image paths, holding the canary) on the Hub, their images and a
    public split for the smoke test on this machine, the weights repo the model pins."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    studies = pd.DataFrame({"study_id": PRIVATE, "findings": [f"Synthetic finding {i} {CANARY}." for i in range(20)],
                            "impression": ["Synthetic impression."] * 20,
                            "image_paths": [[f"{s}/0.png"] for s in PRIVATE]})
    built = write_dataset(Build(TEST_SETS["rexgradient"].info, "test", studies), tmp_path / "refs")
    push_dataset(built, "gated/rexgradient")
    HfApi().create_repo(REPO, repo_type="dataset")
    fake_hub.add_repo("lab/coded-model", {"config.json": b"{}"}, sha=REVISION)
    images(tmp_path / "private-images", PRIVATE)
    images(tmp_path / "public-images", PUBLIC)
    (tmp_path / "iu.jsonl").write_text("".join(json.dumps({"study_id": s, "findings": "Synthetic public finding.",
                                                           "impression": "None.", "image_paths": [f"{s}/0.png"]})
                                               + "\n" for s in PUBLIC))
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/coded-model", "revision": REVISION}],
                                                  "tasks": ["findings"], "images": "multi", "gpu_memory_gb": 20}))
    (model / "requirements.txt").write_text("numpy\n")
    (model / "inference.py").write_text(textwrap.dedent(SCRIPT))
    (model / "fail.txt").write_text("never\n")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    assert main(["submit", "--model", str(model), "--name", "Coded Model", "--institution", "Gradient Lab",
                 "--repo", REPO]) == 0
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    return fake_hub


class FakeJobs:
    """`HfApi.run_job` as a recorder that runs the job's command here, with its env and secrets."""

    def __init__(self, monkeypatch, replace: dict[str, str]):
        self.calls, self.replace = [], replace
        monkeypatch.setattr(HfApi, "run_job", lambda api, **kwargs: self.run(**kwargs))

    def run(self, **kwargs):
        self.calls.append(kwargs)
        command = [self.replace.get(a, a) for a in kwargs["command"]]
        command[:3] = [sys.executable, "-m", "rexrank.backend"]  # `python -m rexrank.backend`, here
        command[command.index("--gpus") + 1] = "0"  # no GPU here
        # the job holds the ledger's key only as the secret it was given, as on HF Jobs
        env = {**{k: v for k, v in os.environ.items() if k != "REXRANK_LEDGER_KEY"}, **(kwargs.get("env") or {}),
               **kwargs["secrets"]}
        self.done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        return type("JobInfo", (), {"id": "job-1"})()


def seen(markdown: str) -> str:
    """A comment as its reader sees it (rendered, tags dropped)."""
    import html
    import re

    from rendered import html as rendered

    return html.unescape(re.sub(r"<[^>]+>", "", rendered(markdown)))


def everything(fake_hub) -> str:
    refs = ["main"] + [f"refs/pr/{pr.num}" for pr in fake_hub.pull_requests(REPO, repo_type="dataset")]
    files = [d for r in refs for d in fake_hub.files(REPO, repo_type="dataset", revision=r).values()]
    comments = [t for pr in fake_hub.pull_requests(REPO, repo_type="dataset") for _, t in pr.comments]
    return b"".join(files).decode("utf-8", "replace") + "".join(comments)


def start(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("REXRANK_JOB_IMAGE", "hf.co/spaces/rexrank/job")
    monkeypatch.setenv("REXRANK_PRIVATE_REFERENCES", "gated/rexgradient")
    monkeypatch.setenv("REXRANK_PRIVATE_IMAGES", str(tmp_path / "private-images"))
    monkeypatch.setenv("REXRANK_SMOKE", f"iu-xray={tmp_path / 'iu.jsonl'},{tmp_path / 'public-images'}")
    monkeypatch.setenv("REXRANK_JOB_GPUS", "1")
    jobs = FakeJobs(monkeypatch, {"/tmp/rexrank-job": str(tmp_path / "job")})
    worker = Worker.__new__(Worker)  # the worker's job, run on this thread
    worker.settings = Settings(REPO, {}, None, "hf_maintainer")
    worker._lock, worker._pending, worker._done = __import__("threading").Lock(), {}, {}
    said, _ = Worker.run(worker, Job("review", 1))
    return jobs, said


def test_the_webhook_starts_the_inference_job_which_publishes_generated_aggregates_only(hub, tmp_path, monkeypatch,
                                                                                         capsys, caplog):
    caplog.set_level(logging.DEBUG)
    jobs, said = start(hub, tmp_path, monkeypatch)
    assert "review #1" in said and "inference job job-1 started" in said
    [call] = jobs.calls
    assert call["flavor"] == "l4x1" and call["image"] == "hf.co/spaces/rexrank/job"  # 20 GB: the smallest that holds
    assert call["secrets"] == {"HF_TOKEN": "hf_maintainer", "REXRANK_LEDGER_KEY": os.environ["REXRANK_LEDGER_KEY"]}
    assert call["env"] == {"REXRANK_LEDGER_KEYS": os.environ["REXRANK_LEDGER_KEYS"]} and call["timeout"] >= 10_000 * 8
    assert call["command"][:8] == ["python", "-m", "rexrank.backend", "infer", "--hub", REPO, "--pr", "1"]
    assert jobs.done.returncode == 0, jobs.done.stderr[-2000:]
    assert "stages read" not in jobs.done.stdout and f"{SUBMISSION}: read" in jobs.done.stdout
    files = hub.files(REPO, repo_type="dataset", revision="refs/pr/1")
    result = Result.from_dict(json.loads(files[f"submissions/{SUBMISSION}/results/rexgradient.findings.json"]))
    assert result.provenance == "generated" and result.checks["generated_by"] == "rexrank inference job"
    assert result.metrics["bleu2"].n == 20 and round(result.metrics["bleu2"].value, 3) == result.metrics["bleu2"].value
    assert not [p for p in files if "rexgradient" in p and ("predictions" in p or "per_study" in p)]
    comments = [t for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"]
    smoke = seen(next(t for t in comments if t.startswith("**rexrank inference**")))
    assert "ran in the sandbox on 8 iu-xray studies" in smoke and "smoke run: studies" in smoke  # its own log
    assert "Requirement already satisfied: numpy" in smoke  # the build's
    record = json.loads(hub.files(REPO, repo_type="dataset")[f"{ledger.SUBMISSIONS}/{SUBMISSION}.json"])
    assert record["results"]["rexgradient.findings"]["job"] == "private"
    assert signing.problem(f"{ledger.SUBMISSIONS}/{SUBMISSION}.json", record, signing.public_keys(own=False)) is None
    assert os.environ["REXRANK_LEDGER_KEY"] not in everything(hub)  # the job's secret, signed with, shown nowhere
    assert CANARY not in everything(hub) and CANARY not in jobs.done.stdout + jobs.done.stderr + caplog.text
    left = [p for p in (tmp_path / "job").rglob("*") if p.is_file() and "private" in p.as_posix()]
    assert left == []  # the private predictions and chunks are gone


@pytest.mark.parametrize("fail", ["fail", "byte"])
def test_a_failure_in_the_private_stage_says_one_fixed_sentence_and_nothing_the_model_chose(hub, tmp_path,
                                                                                            monkeypatch, fail):
    """The model exits with code 137, or writes a save file whose byte 137 is not UTF-8: either number is the
    model's choice after seeing private images, so neither reaches the submitter; the maintainers' log has it."""
    from rexrank.backend.inference import MAINTAINERS_LOG, PRIVATE_FAILED

    HfApi().upload_file(path_or_fileobj=fail.encode() + b"\n", path_in_repo=f"submissions/{SUBMISSION}/model/fail.txt",
                        repo_id=REPO, repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    jobs, _ = start(hub, tmp_path, monkeypatch)
    assert jobs.done.returncode == 2
    comments = [t for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"]
    stopped = seen(comments[-1])
    assert stopped == seen(f"**rexrank inference**: stopped at the private stage: {PRIVATE_FAILED}")
    for said in ("".join(comments), jobs.done.stdout + jobs.done.stderr):  # (its own files hold its source)
        assert not re.search(r"\b13[67]\b", said) and "LEAKED:" not in said
        assert "synthetic image of g" not in said
    details = (tmp_path / "job" / MAINTAINERS_LOG).read_text()
    assert ("exited with code 137" if fail == "fail" else "its save file is refused: it is not JSON") in details
    assert "LEAKED:" not in everything(hub)
    kept = [p for p in (tmp_path / "job").rglob("*") if p.is_file() and b"LEAKED:" in p.read_bytes()]
    assert kept == []  # nor on the maintainers' machine: the private run's output was kept nowhere
    files = hub.files(REPO, repo_type="dataset", revision="refs/pr/1")
    assert f"submissions/{SUBMISSION}/results/rexgradient.findings.json" not in files


def test_a_failed_smoke_test_gives_the_submitter_its_own_output(hub, tmp_path, monkeypatch):
    HfApi().upload_file(path_or_fileobj=b"smoke\n", path_in_repo=f"submissions/{SUBMISSION}/model/fail.txt",
                        repo_id=REPO, repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    jobs, _ = start(hub, tmp_path, monkeypatch)
    assert jobs.done.returncode == 2
    said = seen([t for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"][-1])
    assert "stopped at the smoke stage" in said and "exited with code 1" in said
    assert "SMOKE-OUTPUT: a public study failed" in said  # its own output, on public data, back to it
    files = hub.files(REPO, repo_type="dataset", revision="refs/pr/1")
    assert f"submissions/{SUBMISSION}/results/rexgradient.findings.json" not in files  # the private run never began


def test_the_job_reads_only_the_head_the_review_left(hub, tmp_path, monkeypatch, capsys):
    assert backend(["review", "--hub", REPO, "--pr", "1"]) == 0
    HfApi().upload_file(path_or_fileobj=b"print('pushed after the review')\n",
                        path_in_repo=f"submissions/{SUBMISSION}/model/inference.py", repo_id=REPO,
                        repo_type="dataset", revision="refs/pr/1", token="hf_researcher")
    capsys.readouterr()
    assert backend(["infer", "--hub", REPO, "--pr", "1", "--work", str(tmp_path / "job"),
                    "--references", "gated/rexgradient", "--private-images", str(tmp_path / "private-images")]) == 2
    assert "changed after its review" in capsys.readouterr().err
    assert not (tmp_path / "job" / "env").exists()  # nothing was built, nothing ran


def test_a_public_set_run_by_the_job_is_a_generated_row_on_the_board(hub, tmp_path, monkeypatch):
    """The same run on a public test set the maintainers hold: scored as the review scores, committed as a
    generated result with its per-study table and predictions, ranked once merged, and shown as generated."""
    monkeypatch.setenv("REXRANK_PUBLIC_RUNS", f"iu-xray={tmp_path / 'iu.jsonl'},{tmp_path / 'public-images'}")
    jobs, _ = start(hub, tmp_path, monkeypatch)
    assert jobs.done.returncode == 0, jobs.done.stderr[-2000:]
    assert "--public" in jobs.calls[0]["command"]
    files = hub.files(REPO, repo_type="dataset", revision="refs/pr/1")
    result = Result.from_dict(json.loads(files[f"submissions/{SUBMISSION}/results/iu-xray.findings.json"]))
    assert result.provenance == "generated" and result.metrics["bleu2"].n == len(PUBLIC)
    assert f"submissions/{SUBMISSION}/predictions/iu-xray.findings.jsonl" in files
    assert backend(["merge", "--hub", REPO, "--pr", "1"]) == 0
    assert backend(["aggregate", "--hub", REPO]) == 0
    import datasets

    rows = datasets.load_dataset(REPO, split="leaderboard").to_pandas().set_index(["model", "dataset", "task"])
    row = rows.loc[("Coded Model", "iu-xray", "findings")]
    # as a job left it (the model metrics have no weights here, hence no 1/RadCliQ-v1 to rank it by)
    assert row["provenance"] == "generated" and row["unranked"] == "no 1/RadCliQ-v1"


def test_any_exception_in_the_private_stage_is_the_fixed_sentence_and_its_time_is_reported_nowhere(
        hub, tmp_path, monkeypatch, capsys):
    """Not only InputError: an error of any kind in the private stage (here the scorer's, carrying a number the
    model could have chosen) becomes PRIVATE_FAILED, its words in the maintainers' log only; and a run that succeeds
    reports no time of its private stage."""
    import rexrank.backend.private as private
    from rexrank.backend.inference import MAINTAINERS_LOG, PRIVATE_FAILED

    assert backend(["review", "--hub", REPO, "--pr", "1"]) == 0

    def broken(*args, **kwargs):
        raise RuntimeError("the scorer broke at study 4242")

    scorer = private.score_pull_request
    monkeypatch.setattr(private, "score_pull_request", broken)
    work = tmp_path / "job"
    command = ["infer", "--hub", REPO, "--pr", "1", "--work", str(work), "--references", "gated/rexgradient",
               "--private-images", str(tmp_path / "private-images"), "--gpus", "0"]
    capsys.readouterr()
    assert backend(command) == 2
    said = seen([t for a, t in hub.pull_requests(REPO, repo_type="dataset")[0].comments if a == "maintainer"][-1])
    assert said == seen(f"**rexrank inference**: stopped at the private stage: {PRIVATE_FAILED}")
    assert "4242" not in capsys.readouterr().err and "4242" not in everything(hub)
    assert "RuntimeError: the scorer broke at study 4242" in (work / MAINTAINERS_LOG).read_text()
    monkeypatch.setattr(private, "score_pull_request", scorer)
    code = backend(command)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    printed = printed.out
    assert f"{SUBMISSION}: read" in printed and "private" not in printed.split(";")[0]
