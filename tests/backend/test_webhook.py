"""leaderboard_sync's webhook app against the fake Hub: a signed event runs the jobs it asks for, a forged or unsigned
one runs nothing, the jobs' own commits do not trigger them again, and the app refuses to start without a secret."""

import socket

import httpx
import pytest
from huggingface_hub import HfApi

from rexrank import demo
from rexrank.backend import ledger
from rexrank.backend.webhook import Job, plan, serve
from rexrank.cli import main
from rexrank.errors import InputError

REPO = "rexrank/results"
SECRET = "webhook-s3cret"


def event(scope, action="update", repo=REPO, **more):
    return {"event": {"action": action, "scope": scope},
            "repo": {"type": "dataset", "name": repo, "id": "r1", "private": False, "owner": {"id": "o1"},
                     "url": {"web": "https://x", "api": "https://x"}}, "webhook": {"id": "w1", "version": 3}, **more}


def pull_request(num, status):
    return {"id": "d1", "num": num, "author": {"id": "u1"}, "url": {"web": "https://x", "api": "https://x"},
            "title": "Submit", "isPullRequest": True, "status": status}


@pytest.mark.parametrize(("payload", "jobs"), [
    (event("discussion", "create", discussion=pull_request(3, "open")), (Job("review", 3),)),
    (event("discussion", discussion=pull_request(3, "merged")), (Job("aggregate"),)),
    (event("discussion", "create", discussion=pull_request(3, "draft")), ()),
    (event("discussion", discussion=pull_request(3, "closed")), ()),
    (event("repo.content", updatedRefs=[{"ref": "refs/pr/7", "oldSha": "a", "newSha": "b"},
                                        {"ref": "refs/heads/main", "oldSha": "c", "newSha": "d"}]),
     (Job("review", 7), Job("aggregate"))),
    (event("repo.content", updatedRefs=[{"ref": "refs/pr/7", "oldSha": "a", "newSha": None}]), ()),  # deleted
    (event("discussion.comment", "create", discussion=pull_request(3, "open")), ()),
    (event("discussion", "create", repo="someone/else", discussion=pull_request(3, "open")), ()),
])
def test_each_event_asks_for_its_jobs_only(payload, jobs):
    assert plan(payload, REPO).jobs == jobs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def app(fake_hub, tmp_path, monkeypatch):
    """The results repo with one submission pull request, and the webhook app serving it on loopback."""
    import gradio as gr

    HfApi().create_repo(REPO, repo_type="dataset", token="hf_maintainer")
    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    for task in ("findings", "findings_impression"):
        assert main(["score", "--predictions", str(demo.predictions("demo-careful", task)), "--dataset",
                     str(demo.DATASET), "--dataset-name", "mimic-cxr", "--task", task, "--metrics", "bleu2",
                     "--out", str(tmp_path / "results"), "--quiet"]) == 0
    assert main(["submit", "--results", str(tmp_path / "results"), "--name", "Careful", "--repo", REPO]) == 0
    for key, value in {"HF_TOKEN": "hf_maintainer", "REXRANK_WEBHOOK_SECRET": SECRET, "REXRANK_RESULTS_REPO": REPO,
                       "REXRANK_REVIEW_DATASETS": f"mimic-cxr={demo.DATASET}", "GRADIO_ANALYTICS_ENABLED": "False",
                       "NO_PROXY": "127.0.0.1,localhost"}.items():
        monkeypatch.setenv(key, value)
    port = free_port()
    server, worker = serve("127.0.0.1", port, block=False)
    yield f"http://127.0.0.1:{port}/webhooks/results", worker, fake_hub
    gr.close_all()


def maintainer_comments(hub):
    [pr] = hub.pull_requests(REPO, repo_type="dataset")
    return [text for author, text in pr.comments if author == "maintainer"]


def test_a_forged_or_unsigned_event_runs_nothing(app):
    url, worker, hub = app
    opened = event("discussion", "create", discussion=pull_request(1, "open"))
    assert httpx.post(url, json=opened, headers={"X-Webhook-Secret": "guess"}).status_code == 403
    assert httpx.post(url, json=opened).status_code == 401
    worker.wait()
    assert worker.log == [] and maintainer_comments(hub) == []
    assert not any(p.startswith("ledger/") for p in hub.files(REPO, repo_type="dataset"))


def test_a_signed_event_runs_the_review_and_the_jobs_own_commits_end_the_chain(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    answer = httpx.post(url, json=event("discussion", "create", discussion=pull_request(1, "open")), headers=signed)
    assert answer.status_code == 200 and answer.json()["queued"] == ["review #1"]
    worker.wait()
    assert worker.log == ["review #1: 2 numbers checked"]
    assert "re-scored from the submitted predictions" in maintainer_comments(hub)[-1]
    reviewed = ledger.read_hub(HfApi(token="hf_maintainer"), REPO).submissions["careful"]["reviewed"]
    # the review's own commit on refs/pr/1, and the ledger's on main, come back as events: nothing runs twice
    moved = [{"ref": "refs/pr/1", "oldSha": "x", "newSha": reviewed["head"]},
             {"ref": "refs/heads/main", "oldSha": "y", "newSha": "z"}]
    assert httpx.post(url, json=event("repo.content", updatedRefs=moved), headers=signed).json()["queued"] == [
        "review #1", "aggregate"]
    worker.wait()
    assert worker.log[1] == f"review #1: head {reviewed['head'][:12]} already reviewed"
    assert worker.log[2].startswith("aggregate: ") and "leaderboard.parquet" in hub.files(REPO, repo_type="dataset")
    assert len(maintainer_comments(hub)) == 1
    other = httpx.post(url, json=event("repo.content", repo="someone/else", updatedRefs=moved), headers=signed)
    assert other.json() == {"queued": [], "why": "not the results repo (dataset 'someone/else')"}


def test_the_app_refuses_to_start_without_a_secret(monkeypatch):
    for key in ("REXRANK_WEBHOOK_SECRET", "WEBHOOK_SECRET"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(InputError, match="no webhook secret: set REXRANK_WEBHOOK_SECRET"):
        serve("127.0.0.1", free_port(), block=False)


def test_the_deployable_says_in_one_line_why_it_does_not_start(monkeypatch):
    import subprocess
    import sys

    from conftest import ROOT

    env = {k: v for k, v in __import__("os").environ.items() if k not in ("REXRANK_WEBHOOK_SECRET", "WEBHOOK_SECRET")}
    done = subprocess.run([sys.executable, str(ROOT / "leaderboard_sync" / "app.py")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("rexrank webhook: error: no webhook secret")
