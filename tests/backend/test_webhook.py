"""leaderboard_sync's webhook app, served for real on loopback against the fake Hub: a signed event runs the jobs it
asks for; a forged or unsigned one runs nothing and is answered before its body is read; a body is bounded in bytes
and time; replays, duplicates, outdated heads and floods of refs queue nothing more than one job each; the jobs' own
commits do not trigger them again; and the app refuses to start without a secret."""

import hashlib
import socket
import time
from contextlib import contextmanager

import httpx
import pytest
from huggingface_hub import HfApi

from rexrank import demo
from rexrank.backend import webhook, webhook_server
from rexrank.backend.webhook import Job, plan
from rexrank.backend.webhook_server import serve
from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.rules import ledger

REPO = "rexrank/results"
SECRET = "webhook-s3cret"


def event(scope, action="update", repo=REPO, **more):
    return {"event": {"action": action, "scope": scope},
            "repo": {"type": "dataset", "name": repo, "id": "r1", "private": False, "owner": {"id": "o1"},
                     "url": {"web": "https://x", "api": "https://x"}}, "webhook": {"id": "w1", "version": 3}, **more}


def pull_request(num, status):
    return {"id": "d1", "num": num, "author": {"id": "u1"}, "url": {"web": "https://x", "api": "https://x"},
            "title": "Submit", "isPullRequest": True, "status": status}


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


A, B, C = sha("a"), sha("b"), sha("c")


@pytest.mark.parametrize(("payload", "jobs"), [
    (event("discussion", "create", discussion=pull_request(3, "open")), (Job("review", 3),)),
    (event("discussion", discussion=pull_request(3, "merged")), (Job("aggregate"),)),
    (event("discussion", discussion=pull_request(3, "merged") | {"changes": {"base": "refs/heads/main",
                                                                            "mergeCommitId": C}}),
     (Job("aggregate", None, C),)),
    (event("discussion", "create", discussion=pull_request(3, "draft")), ()),
    (event("discussion", discussion=pull_request(3, "closed")), ()),
    (event("repo.content", updatedRefs=[{"ref": "refs/pr/7", "oldSha": A, "newSha": B},
                                        {"ref": "refs/heads/main", "oldSha": A, "newSha": C}]),
     (Job("review", 7, B), Job("aggregate", None, C))),
    (event("repo.content", updatedRefs=[{"ref": "refs/pr/7", "oldSha": A, "newSha": None}]), ()),  # deleted
    (event("repo.content", updatedRefs=[{"ref": "refs/pr/7", "oldSha": A, "newSha": "not a commit"}]), ()),
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
    served, worker = serve("127.0.0.1", free_port(), block=False)
    yield f"{served.url}/webhooks/results", worker, fake_hub
    served.close()


def maintainer_comments(hub):
    [pr] = hub.pull_requests(REPO, repo_type="dataset")
    return [text for author, text in pr.comments if author == "maintainer"]


@pytest.mark.slow
def test_a_forged_or_unsigned_event_runs_nothing(app):
    url, worker, hub = app
    opened = event("discussion", "create", discussion=pull_request(1, "open"))
    assert httpx.post(url, json=opened, headers={"X-Webhook-Secret": "guess"}).status_code == 403
    assert httpx.post(url, json=opened).status_code == 401
    worker.wait()
    assert worker.log == [] and maintainer_comments(hub) == []
    assert not any(p.startswith("ledger/") for p in hub.files(REPO, repo_type="dataset"))


@pytest.mark.slow
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
    moved = [{"ref": "refs/pr/1", "oldSha": A, "newSha": reviewed["head"]},
             {"ref": "refs/heads/main", "oldSha": B, "newSha": C}]
    assert httpx.post(url, json=event("repo.content", updatedRefs=moved), headers=signed).json()["queued"] == [
        f"review #1 at {reviewed['head'][:12]}", f"aggregate at {C[:12]}"]
    worker.wait()
    assert worker.log[1] == f"review #1: head {reviewed['head'][:12]} already reviewed"  # the live head, re-read
    assert worker.log[2].startswith("aggregate: ") and "leaderboard.parquet" in hub.files(REPO, repo_type="dataset")
    assert len(maintainer_comments(hub)) == 1
    page = httpx.get(url.removesuffix("/webhooks/results") + "/")  # the Space's page, beside the endpoint
    assert page.status_code == 200 and "POST /webhooks/results" in page.text
    other = httpx.post(url, json=event("repo.content", repo="someone/else", updatedRefs=moved), headers=signed)
    assert other.json() == {"queued": [], "not_queued": [], "why": "not the results repo (dataset 'someone/else')"}


def test_the_app_refuses_to_start_without_a_secret(monkeypatch):
    for key in ("REXRANK_WEBHOOK_SECRET", "WEBHOOK_SECRET"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(InputError, match="no webhook secret: set REXRANK_WEBHOOK_SECRET"):
        serve("127.0.0.1", free_port(), block=False)


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_deployable_says_in_one_line_why_it_does_not_start(monkeypatch):
    import subprocess
    import sys

    from conftest import ROOT

    env = {k: v for k, v in __import__("os").environ.items() if k not in ("REXRANK_WEBHOOK_SECRET", "WEBHOOK_SECRET")}
    done = subprocess.run([sys.executable, str(ROOT / "leaderboard_sync" / "app.py")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("rexrank webhook: error: no webhook secret")


# --- the attacker's tests: what reaches the server before the secret, how much body, how many jobs -------------------


def raw(url: str, head: bytes, body: bytes = b"", wait: float = 8.0) -> tuple[bytes, bool]:
    """Send a request's head and the start of its body over a plain socket, never finishing the body: the answer, and
    whether the server hung up, within `wait` seconds (the server would otherwise wait for the rest)."""
    where = httpx.URL(url)
    with socket.create_connection((where.host, where.port), timeout=wait) as s:
        s.sendall(head + body)
        answer, deadline = b"", time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                return answer, True
            answer += chunk
        return answer, False


def head(url: str, *lines: bytes) -> bytes:
    return b"\r\n".join([f"POST {httpx.URL(url).path} HTTP/1.1".encode(), b"Host: 127.0.0.1", *lines, b"", b""])


SIGNED = f"X-Webhook-Secret: {SECRET}".encode()


@contextmanager
def hub_held(hub):
    """While held, the fake Hub answers nothing: the worker's first Hub call waits, so the jobs the test queues
    meanwhile stay queued (the webhook app itself never calls the Hub while answering)."""
    hub._lock.acquire()
    try:
        yield
    finally:
        hub._lock.release()


@pytest.mark.slow
def test_the_secret_is_checked_before_a_byte_of_the_body_is_read(app):
    url, worker, hub = app
    announced = b"Content-Length: 100000"  # and not one byte of it sent: an answer proves the body was not awaited
    for secret, status in [(None, 401), (b"X-Webhook-Secret: guess", 403),
                           (b"X-Webhook-Secret: " + f"{SECRET}\xe9".encode("latin-1"), 403),  # not ASCII: no 500
                           (b"X-Webhook-Secret: " + SECRET[:-1].encode(), 403)]:
        answer, hung_up = raw(url, head(url, announced, *([secret] if secret else [])))
        assert answer.startswith(f"HTTP/1.1 {status} ".encode()) and hung_up, (secret, answer)
    worker.wait()
    assert worker.log == [] and maintainer_comments(hub) == []


@pytest.mark.slow
def test_a_malformed_unsigned_body_gets_401_not_422(app):
    url, worker, hub = app
    opened = event("discussion", "create", discussion=pull_request(1, "open"))
    assert httpx.post(url, content=b"{not json").status_code == 401
    assert httpx.post(url, content=b"{not json", headers={"X-Webhook-Secret": "guess"}).status_code == 403
    assert httpx.post(url, json=opened).status_code == 401
    signed = {"X-Webhook-Secret": SECRET}
    for body, said in [(b"{not json", "not a Hub webhook event: not valid JSON"),
                       (b"[]", "not a Hub webhook event: the event: Input should be"),
                       (b"[" * 5000 + b"]" * 5000, "not a Hub webhook event: JSON nested deeper than 6 levels"),
                       (b'{"a": 1, "a": 2}', "not a Hub webhook event: key 'a' appears more than once"),
                       (httpx.Request("POST", url, json={**opened, "webhook": {"id": "w1"}}).read(),
                        "not a Hub webhook event: webhook.version: Field required")]:
        answer = httpx.post(url, content=body, headers=signed)
        assert answer.status_code == 400 and answer.json()["error"].startswith(said), answer.text
    worker.wait()
    assert worker.log == [] and maintainer_comments(hub) == []


@pytest.mark.slow
def test_a_body_is_bounded_in_bytes_and_time(app, monkeypatch):
    url, worker, hub = app
    answer, hung_up = raw(url, head(url, SIGNED, b"Content-Length: 1000000000"))
    assert answer.startswith(b"HTTP/1.1 413 ") and b"a Hub event is at most 65536" in answer and hung_up
    assert httpx.post(url, content=b" " * (webhook_server.MAX_BODY + 1), headers={"X-Webhook-Secret": SECRET}
                      ).status_code == 413
    # Chunked, one chunk announcing 100 MiB: refused once the limit is passed, the rest never awaited nor held.
    answer, hung_up = raw(url, head(url, SIGNED, b"Transfer-Encoding: chunked"),
                          b"6400000\r\n" + b" " * (webhook_server.MAX_BODY + 1024))
    assert answer.startswith(b"HTTP/1.1 413 ") and hung_up
    # A real event under the limit is served: a comment of 50,000 characters (the only long text an event carries).
    commented = event("discussion.comment", "create", discussion=pull_request(1, "open"),
                      comment={"id": "c1", "author": {"id": "u1"}, "hidden": False, "content": "x" * 50_000,
                               "url": {"web": "https://x"}})
    answer = httpx.post(url, json=commented, headers={"X-Webhook-Secret": SECRET})
    assert answer.status_code == 200 and answer.json()["queued"] == []
    monkeypatch.setattr(webhook_server, "BODY_SECONDS", 0.5)  # a body trickling in past the deadline
    answer, hung_up = raw(url, head(url, SIGNED, b"Content-Length: 100"), b'{"event": ')
    assert answer.startswith(b"HTTP/1.1 408 ") and hung_up
    worker.wait()
    assert worker.log == [] and maintainer_comments(hub) == []


def queued(answers) -> list[str]:
    return [job for a in answers for job in a.json()["queued"]]


@pytest.mark.slow
def test_200_replays_of_an_event_queue_one_job(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    opened = event("discussion", "create", discussion=pull_request(1, "open"))
    assert queued(httpx.post(url, json=opened, headers=signed) for _ in range(200)) == ["review #1"]
    worker.wait()
    assert worker.log == ["review #1: 2 numbers checked"] and len(maintainer_comments(hub)) == 1
    # The review's own commit, as the Hub reports it, delivered 100 times: one job, which finds the head reviewed.
    own = ledger.read_hub(HfApi(token="hf_maintainer"), REPO).submissions["careful"]["reviewed"]["head"]
    moved = event("repo.content", updatedRefs=[{"ref": "refs/pr/1", "oldSha": A, "newSha": own}])
    assert queued(httpx.post(url, json=moved, headers=signed) for _ in range(100)) == [f"review #1 at {own[:12]}"]
    worker.wait()
    again = httpx.post(url, json=opened, headers=signed).json()
    assert again["queued"] == [] and again["not_queued"] == ["review #1: already done"]
    worker.wait()
    assert worker.log[1:] == [f"review #1: head {own[:12]} already reviewed"] and len(maintainer_comments(hub)) == 1


@pytest.mark.slow
def test_a_queued_head_that_moved_on_is_skipped(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    submitted = HfApi(token="hf_maintainer").list_repo_commits(REPO, repo_type="dataset",
                                                               revision="refs/pr/1")[0].commit_id
    pushed = hub.push_raw("hf_researcher", REPO, "refs/pr/1", {}, title="Same files again")  # the submitter pushes on
    with hub_held(hub):  # both events queued before either runs, the older one first
        for at in (submitted, pushed):
            moved = event("repo.content", updatedRefs=[{"ref": "refs/pr/1", "oldSha": None, "newSha": at}])
            assert httpx.post(url, json=moved, headers=signed).json()["queued"] == [f"review #1 at {at[:12]}"]
    worker.wait()
    assert worker.log == [f"review #1 at {submitted[:12]}: outdated, the pull request is at {pushed[:12]} (its own "
                          "event queues it)", "review #1: 2 numbers checked"]
    reviewed = ledger.read_hub(HfApi(token="hf_maintainer"), REPO).submissions["careful"]["reviewed"]
    assert HfApi(token="hf_maintainer").list_repo_commits(REPO, repo_type="dataset", revision=reviewed["head"]
                                                          )[1].commit_id == pushed  # the review's commit is on it
    assert len(maintainer_comments(hub)) == 1


@pytest.mark.slow
def test_an_event_listing_300_pull_requests_queues_a_bounded_number(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    flood = event("repo.content", updatedRefs=[{"ref": f"refs/pr/{n}", "oldSha": None, "newSha": sha(f"pr{n}")}
                                               for n in range(1, 301)])
    answer = httpx.post(url, json=flood, headers=signed).json()
    assert answer["queued"] == [f"review #{n} at {sha(f'pr{n}')[:12]}" for n in range(1, webhook.MAX_PULL_REQUESTS + 1)]
    assert answer["why"] == ("new commits; 284 more pull requests left to the daily sweep (one event queues at most "
                             "16)")
    worker.wait()
    assert len(worker.log) == 16 and worker.log[0].startswith(f"review #1 at {sha('pr1')[:12]}: outdated")
    assert all(line.startswith(f"review #{n} at ") and ": error: 404" in line
               for n, line in enumerate(worker.log[1:], 2))
    assert httpx.post(url, json=flood, headers=signed).json()["queued"] == []  # a pull request that is not there
    mains = event("repo.content", updatedRefs=[{"ref": "refs/heads/main", "oldSha": None, "newSha": sha(f"m{n}")}
                                               for n in range(300)])
    assert httpx.post(url, json=mains, headers=signed).json()["queued"] == [f"aggregate at {sha('m299')[:12]}"]
    worker.wait()
    assert len(worker.log) == 17 and worker.log[-1].startswith("aggregate: ") and maintainer_comments(hub) == []


@pytest.mark.slow
def test_aggregates_coalesce_while_one_is_queued(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    mains = [event("repo.content", updatedRefs=[{"ref": "refs/heads/main", "oldSha": None, "newSha": sha(f"m{n}")}])
             for n in range(50)]
    with hub_held(hub):  # the review waits on the Hub, so the first aggregate waits in the queue
        opened = event("discussion", "create", discussion=pull_request(1, "open"))
        assert httpx.post(url, json=opened, headers=signed).json()["queued"] == ["review #1"]
        answers = [httpx.post(url, json=m, headers=signed).json() for m in mains]
    assert [a["queued"] for a in answers] == [[f"aggregate at {sha('m0')[:12]}"]] + [
        []] * 49
    assert answers[1]["not_queued"] == [f"aggregate at {sha('m1')[:12]}: an aggregate is already queued (it reads "
                                        "main when it runs)"]
    worker.wait()
    assert worker.log[0] == "review #1: 2 numbers checked" and len(worker.log) == 2
    assert worker.log[1].startswith("aggregate: ")
    assert httpx.post(url, json=mains[7], headers=signed).json()["not_queued"] == [
        f"aggregate at {sha('m7')[:12]}: already done"]


@pytest.mark.slow
def test_a_job_the_hub_failed_is_retried_by_a_replay(app):
    url, worker, hub = app
    signed = {"X-Webhook-Secret": SECRET}
    opened = event("discussion", "create", discussion=pull_request(1, "open"))
    hub.commits_fail = True  # the Hub answers 503 to the review's commit
    assert httpx.post(url, json=opened, headers=signed).json()["queued"] == ["review #1"]
    worker.wait()
    assert worker.log[0].startswith("review #1: error: ") and "503" in worker.log[0]
    hub.commits_fail = False
    assert httpx.post(url, json=opened, headers=signed).json()["queued"] == ["review #1"]  # the Hub's Replay button
    worker.wait()
    assert worker.log[1:] == ["review #1: 2 numbers checked"] and len(maintainer_comments(hub)) == 1
