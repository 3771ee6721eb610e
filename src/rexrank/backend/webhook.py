"""The maintainers' jobs behind a Hub webhook: what each event of the results repo asks for, and a worker that runs
it, one job at a time.

The Hub calls the webhook on events of the repos it watches (docs: huggingface.co/docs/hub/webhooks). For the
results repo:

- new commits on `refs/pr/N` (scope `repo.content`), or a pull request opened or published (scope `discussion`,
  status open): the review job, then, when the pull request carries ReXGradient predictions and the private
  references are configured, the private job. A head the ledger already records as reviewed is skipped: the jobs'
  own commits trigger the webhook too, and must not trigger themselves again.
- new commits on `main`, or a pull request merged: the aggregate job (it commits nothing when the board is unchanged,
  so its own commit ends the chain).
- anything else (another repository, a draft, a comment, a closed pull request): nothing, with the reason.

The webhook app (`leaderboard_sync/app.py`, huggingface_hub's `WebhooksServer`) refuses to start without a secret;
the server checks the `X-Webhook-Secret` header of every request (401 without it, 403 when wrong) before this module
sees the event.
"""

from __future__ import annotations

import os
import queue
import re
import sys
import threading
from dataclasses import dataclass, field

from rexrank.errors import InputError

_PR_REF = re.compile(r"^refs/pr/(\d+)$")


@dataclass(frozen=True)
class Job:
    name: str  # "review" (review, then private when it applies) or "aggregate"
    pr: int | None = None


@dataclass(frozen=True)
class Plan:
    jobs: tuple[Job, ...]
    why: str  # what the event was, or why it asks for nothing


def plan(event: dict, results_repo: str) -> Plan:
    """The jobs an event of the Hub's webhook asks for (see the module's rules)."""
    repo = event.get("repo") or {}
    if repo.get("type") != "dataset" or repo.get("name") != results_repo:
        return Plan((), f"not the results repo ({repo.get('type')} {repo.get('name')!r})")
    scope = (event.get("event") or {}).get("scope", "")
    if scope == "repo.content":
        jobs = []
        for ref in event.get("updatedRefs") or []:
            if not ref.get("newSha"):
                continue  # a deleted ref
            if ref.get("ref") == "refs/heads/main":
                jobs.append(Job("aggregate"))
            elif match := _PR_REF.match(ref.get("ref") or ""):
                jobs.append(Job("review", int(match[1])))
        return Plan(tuple(dict.fromkeys(jobs)), "new commits" if jobs else "no branch or pull request moved")
    discussion = event.get("discussion") or {}
    if scope == "discussion" and discussion.get("isPullRequest"):
        status, num = discussion.get("status"), discussion.get("num")
        if status == "open":
            return Plan((Job("review", num),), f"pull request #{num} open")
        if status == "merged":
            return Plan((Job("aggregate"),), f"pull request #{num} merged")
        return Plan((), f"pull request #{num} is {status}")
    return Plan((), f"a {scope or 'unknown'} event: nothing to run")


@dataclass
class Settings:
    """What the jobs need, from the environment of the app (a Space's secrets and variables)."""

    results_repo: str
    datasets: dict[str, str]  # dataset name -> the maintainers' copy, for the review job
    references: str | None  # the private ReXGradient set, for the private job
    token: str | None = None

    @classmethod
    def from_environment(cls) -> Settings:
        repo = os.environ.get("REXRANK_RESULTS_REPO")
        if not repo:
            raise InputError("REXRANK_RESULTS_REPO is not set: the results repo the webhook serves (ORG/NAME)")
        specs = [s for s in os.environ.get("REXRANK_REVIEW_DATASETS", "").split(",") if s.strip()]
        if any("=" not in s for s in specs):
            raise InputError("REXRANK_REVIEW_DATASETS: expected NAME=SOURCE[,NAME=SOURCE...], e.g. "
                             "mimic-cxr=org/mimic-cxr-test")
        return cls(repo, dict(s.strip().split("=", 1) for s in specs),
                   os.environ.get("REXRANK_PRIVATE_REFERENCES") or None, os.environ.get("HF_TOKEN"))


@dataclass
class Worker:
    """Runs queued jobs one at a time on a thread of its own; `log` keeps one line per job run or skipped."""

    settings: Settings
    log: list[str] = field(default_factory=list)
    _queue: queue.Queue = field(default_factory=queue.Queue, init=False)

    def __post_init__(self):
        threading.Thread(target=self._run, name="rexrank-webhook", daemon=True).start()

    def submit(self, jobs: tuple[Job, ...]) -> None:
        for job in jobs:
            self._queue.put(job)

    def wait(self) -> None:
        """Until every queued job has run (tests; a server never waits)."""
        self._queue.join()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                self._say(self.run(job))
            except (InputError, OSError) as err:  # a refused or failed job says why in one line and the next runs
                self._say(f"{job.name} #{job.pr}: error: {str(err).splitlines()[0]}" if job.pr else
                          f"{job.name}: error: {str(err).splitlines()[0]}")
            except Exception as err:  # noqa: BLE001 - one job's bug must not stop the worker
                self._say(f"{job.name}: failed ({type(err).__name__})")
            finally:
                self._queue.task_done()

    def _say(self, line: str) -> None:
        self.log.append(line)
        print(f"rexrank webhook: {line}", file=sys.stderr, flush=True)

    def run(self, job: Job) -> str:
        from huggingface_hub import HfApi

        from rexrank.backend import ledger

        settings, api = self.settings, HfApi(token=self.settings.token)
        if job.name == "aggregate":
            from rexrank.board.aggregate import aggregate_hub

            board, _ = aggregate_hub(settings.results_repo, token=settings.token)
            return f"aggregate: {int(board['rank'].notna().sum())} ranked rows of {len(board)}"
        head = api.list_repo_commits(settings.results_repo, repo_type="dataset", revision=f"refs/pr/{job.pr}")[0]
        reviewed = [record.get("reviewed", {}) for record in ledger.read_hub(api, settings.results_repo)
                    .submissions.values()]
        if any(r.get("pr") == job.pr and r.get("head") == head.commit_id for r in reviewed):
            return f"review #{job.pr}: head {head.commit_id[:12]} already reviewed"
        from rexrank.backend.review import review

        checks = review(settings.results_repo, job.pr, settings.datasets, token=settings.token)
        said = f"review #{job.pr}: {len(checks)} numbers checked"
        if settings.references and self._carries_private(api, job.pr):
            from rexrank.backend.private import score_pull_request
            from rexrank.scorers import AVAILABLE

            results = score_pull_request(settings.results_repo, job.pr, settings.references, list(AVAILABLE),
                                         token=settings.token)
            said += f"; private: {len(results)} task(s) scored"
        return said

    def _carries_private(self, api, num: int) -> bool:
        from rexrank.backend.pull import read_pull_request
        from rexrank.submission import PRIVATE_DATASETS

        touched = read_pull_request(api, self.settings.results_repo, num).touched
        return any(f"/predictions/{d}." in t.path for t in touched for d in PRIVATE_DATASETS if t.change != "deleted")


def serve(host: str | None = None, port: int | None = None, block: bool = True):
    """The webhook app: huggingface_hub's WebhooksServer with one endpoint, `/webhooks/results`, which plans each
    event and queues its jobs. Refuses to start without a secret (WEBHOOK_SECRET or REXRANK_WEBHOOK_SECRET): an
    open endpoint would let anyone trigger the maintainers' jobs."""
    from huggingface_hub import WebhookPayload, WebhooksServer

    secret = os.environ.get("REXRANK_WEBHOOK_SECRET") or os.environ.get("WEBHOOK_SECRET")
    if not secret:
        raise InputError("no webhook secret: set REXRANK_WEBHOOK_SECRET (the secret of the Hub webhook) before "
                         "starting; without one anyone could trigger the maintainers' jobs")
    settings = Settings.from_environment()
    worker = Worker(settings)
    app = WebhooksServer(webhook_secret=secret)

    async def results(payload):
        found = plan(payload.model_dump(), settings.results_repo)
        worker.submit(found.jobs)
        return {"queued": [j.name if j.pr is None else f"{j.name} #{j.pr}" for j in found.jobs], "why": found.why}

    # The classes themselves, not this module's string annotations: FastAPI reads the request's body by them.
    results.__annotations__ = {"payload": WebhookPayload, "return": dict}
    app.add_webhook("/results")(results)

    app.launch(prevent_thread_lock=not block, share=False, server_name=host or "0.0.0.0",
               server_port=port or int(os.environ.get("PORT", 7860)))
    return app, worker
