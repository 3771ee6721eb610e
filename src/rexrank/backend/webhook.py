"""The maintainers' jobs behind a Hub webhook: what each event of the results repo asks for, a worker that runs it one
job at a time, and the app that receives the events.

The Hub calls the webhook on events of the repos it watches (docs: huggingface.co/docs/hub/webhooks). For the
results repo:

- new commits on `refs/pr/N` (scope `repo.content`), or a pull request opened or published (scope `discussion`,
  status open): the review job, then, when the pull request carries ReXGradient predictions and the private
  references are configured, the private job. A head the ledger already records as reviewed is skipped: the jobs'
  own commits trigger the webhook too, and must not trigger themselves again.
- new commits on `main`, or a pull request merged: the aggregate job (it commits nothing when the board is unchanged,
  so its own commit ends the chain).
- anything else (another repository, a draft, a comment, a closed pull request): nothing, with the reason.

A job is keyed by the head the event names: `(review, N, newSha)` for new commits on `refs/pr/N`, `(aggregate,
newSha)` for `main` (a merge names its `mergeCommitId`); a discussion event names no head, so its review is keyed
`(review, N, None)`: whatever head is live when it runs. A key already queued, running or done (the last
`REMEMBERED` are kept) queues nothing, so a replayed or repeated event runs nothing twice; only a job that failed on
the way (the network, or the Hub answering 5xx, 408 or 429) is forgotten, so the Hub's Replay button retries it. A
pull request's later discussion events (reopened, retitled) queue nothing once its sha-less review ran: its new
commits come as `repo.content` events naming their head, and the daily sweep reviews every open pull request.
Before a review runs, the worker reads the pull request's live head: a queued head that has since moved on is
skipped (the event of the new head queued its own job). Aggregates coalesce: while one waits in the queue, more
events for `main` queue nothing (it reads `main` when it runs). One event queues at most `MAX_PULL_REQUESTS`
reviews: a Hub event is one push to one repository, and a push through the Hub's API moves one ref; the rest are
left to the daily sweep (`leaderboard_sync/jobs.sh`), and the answer says how many.

The endpoint that receives the events is `rexrank.backend.webhook_server`.
"""

from __future__ import annotations

import os
import queue
import re
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from rexrank.errors import InputError
from rexrank.text import shown

_PR_REF = re.compile(r"^refs/pr/(\d{1,9})$")
_SHA = re.compile(r"^[0-9a-f]{40}$")

MAX_PULL_REQUESTS = 16  # reviews one event may queue; one push through the Hub's API moves one ref
REMEMBERED = 4_096  # done keys kept: four days of the Hub's limit (1,000 triggers a day per webhook) at one job each


@dataclass(frozen=True)
class Job:
    name: str  # "review" (review, then private when it applies) or "aggregate"
    pr: int | None = None
    head: str | None = None  # the commit the event names; None: whatever is live when the job runs

    @property
    def key(self) -> tuple:
        return (self.name, self.pr, self.head)

    def __str__(self) -> str:
        return (self.name if self.pr is None else f"{self.name} #{self.pr}") + (
            f" at {self.head[:12]}" if self.head else "")


@dataclass(frozen=True)
class Plan:
    jobs: tuple[Job, ...]
    why: str  # what the event was, or why it asks for nothing


def _sha(value) -> str | None:
    return value if isinstance(value, str) and _SHA.match(value) else None


def plan(event: dict, results_repo: str) -> Plan:
    """The jobs an event of the Hub's webhook asks for (see the module's rules)."""
    repo = event.get("repo") or {}
    if repo.get("type") != "dataset" or repo.get("name") != results_repo:
        return Plan((), f"not the results repo ({repo.get('type')} {shown(repo.get('name'), 96)!r})")
    scope = (event.get("event") or {}).get("scope", "")
    if scope == "repo.content":
        aggregate, reviews = [], {}
        for ref in event.get("updatedRefs") or []:
            if not (sha := _sha(ref.get("newSha"))):
                continue  # a deleted ref, or not a commit
            if ref.get("ref") == "refs/heads/main":
                aggregate = [Job("aggregate", None, sha)]
            elif match := _PR_REF.match(ref.get("ref") or ""):
                reviews.setdefault(int(match[1]), Job("review", int(match[1]), sha))
        jobs = (*list(reviews.values())[:MAX_PULL_REQUESTS], *aggregate)
        why = "new commits" if jobs else "no branch or pull request moved"
        if len(reviews) > MAX_PULL_REQUESTS:
            why += (f"; {len(reviews) - MAX_PULL_REQUESTS} more pull requests left to the daily sweep (one event "
                    f"queues at most {MAX_PULL_REQUESTS})")
        return Plan(jobs, why)
    discussion = event.get("discussion") or {}
    if scope == "discussion" and discussion.get("isPullRequest"):
        status, num = discussion.get("status"), discussion.get("num")
        if status == "open":
            return Plan((Job("review", num),), f"pull request #{num} open")
        if status == "merged":
            merged = _sha((discussion.get("changes") or {}).get("mergeCommitId"))
            return Plan((Job("aggregate", None, merged),), f"pull request #{num} merged")
        return Plan((), f"pull request #{num} is {status}")
    return Plan((), f"a {shown(scope, 60) or 'unknown'} event: nothing to run")


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
    """Runs queued jobs one at a time on a thread of its own; `log` keeps one line per job run or skipped. A job whose
    key is already queued, running or done is not queued again (see the module's rules)."""

    settings: Settings
    log: list[str] = field(default_factory=list)

    def __post_init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._pending: dict[tuple, str] = {}  # key -> "queued" or "running"
        self._done: OrderedDict[tuple, None] = OrderedDict()
        self._aggregate: list[tuple] | None = None  # the keys the aggregate waiting in the queue stands for
        threading.Thread(target=self._run, name="rexrank-webhook", daemon=True).start()

    def submit(self, jobs: tuple[Job, ...]) -> tuple[list[Job], list[str]]:
        """Queue the jobs no earlier event asked for; returns those queued, and a line for each one not queued."""
        queued, not_queued = [], []
        with self._lock:
            for job in jobs:
                if state := self._state(job.key):
                    not_queued.append(f"{job}: already {state}")
                elif job.name == "aggregate" and self._aggregate is not None:
                    self._aggregate.append(job.key)
                    self._pending[job.key] = "queued"
                    not_queued.append(f"{job}: an aggregate is already queued (it reads main when it runs)")
                else:
                    self._pending[job.key] = "queued"
                    if job.name == "aggregate":
                        self._aggregate = [job.key]
                    self._queue.put(job)
                    queued.append(job)
        return queued, not_queued

    def wait(self) -> None:
        """Until every queued job has run (tests; a server never waits)."""
        self._queue.join()

    def _state(self, key: tuple) -> str | None:
        return self._pending.get(key) or ("done" if key in self._done else None)

    def _remember(self, keys) -> None:
        for key in keys:
            if key[0] == "aggregate" and key[2] is None:
                continue  # an aggregate no commit names: the next such event must run one
            self._done[key] = None
            self._done.move_to_end(key)
        while len(self._done) > REMEMBERED:
            self._done.popitem(last=False)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            with self._lock:
                keys = [job.key]
                if job.name == "aggregate":
                    keys, self._aggregate = self._aggregate or keys, None
                for key in keys:
                    self._pending[key] = "running"
            done, covered = False, []
            try:
                line, covered = self.run(job)
                done = True
                self._say(line)
            except InputError as err:  # refused at this head: a replay would be refused again
                done = True
                self._say(f"{job}: error: {str(err).splitlines()[0]}")
            except OSError as err:  # the network or a Hub failure is forgotten, so that a replay retries
                done = _lasting(err)
                self._say(f"{job}: error: {str(err).splitlines()[0]}")
            except Exception as err:  # noqa: BLE001 - one job's bug must not stop the worker; a replay meets it again
                done = True
                self._say(f"{job}: failed ({type(err).__name__})")
            finally:
                with self._lock:
                    for key in keys:
                        self._pending.pop(key, None)
                    if done:
                        self._remember(keys + covered)
                self._queue.task_done()

    def _say(self, line: str) -> None:
        self.log.append(line)
        print(f"rexrank webhook: {line}", file=sys.stderr, flush=True)

    def run(self, job: Job) -> tuple[str, list[tuple]]:
        """Run one job: its line for the log, and the keys of the other jobs it stands for (the head it found)."""
        from huggingface_hub import HfApi

        from rexrank.rules import ledger

        settings, api = self.settings, HfApi(token=self.settings.token)
        if job.name == "aggregate":
            from rexrank.board.aggregate import aggregate_hub

            board, _ = aggregate_hub(settings.results_repo, token=settings.token)
            return f"aggregate: {int(board['rank'].notna().sum())} ranked rows of {len(board)}", []
        live = api.list_repo_commits(settings.results_repo, repo_type="dataset", revision=f"refs/pr/{job.pr}")[0]
        head, at = live.commit_id, Job("review", job.pr, live.commit_id)
        if job.head and job.head != head:
            return f"{job}: outdated, the pull request is at {head[:12]} (its own event queues it)", []
        if job.head is None:
            with self._lock:
                state = self._state(at.key)
            if state:
                return f"{job}: head {head[:12]} already {state}", [at.key] if state == "done" else []
        reviewed = [record.get("reviewed", {}) for record in ledger.read_hub(api, settings.results_repo)
                    .submissions.values()]
        if any(r.get("pr") == job.pr and r.get("head") == head for r in reviewed):
            return f"review #{job.pr}: head {head[:12]} already reviewed", [at.key]
        from rexrank.backend.review import review

        checks = review(settings.results_repo, job.pr, settings.datasets, token=settings.token)
        said = f"review #{job.pr}: {len(checks)} numbers checked"
        if settings.references and self._carries_private(api, job.pr):
            from rexrank.backend.private import score_pull_request
            from rexrank.scorers import AVAILABLE

            results = score_pull_request(settings.results_repo, job.pr, settings.references, list(AVAILABLE),
                                         token=settings.token)
            said += f"; private: {len(results)} task(s) scored"
        from rexrank.backend.jobs import JobSettings, code_submission, launch

        if (inference := JobSettings.from_environment()) and (model := code_submission(api, settings.results_repo,
                                                                                       job.pr)):
            started = launch(api, settings.results_repo, job.pr, model, inference, settings.token)
            said += f"; inference job {getattr(started, 'id', started)} started"
        return said, [at.key]

    def _carries_private(self, api, num: int) -> bool:
        from rexrank.backend.pull import read_pull_request
        from rexrank.catalog import PRIVATE_DATASETS

        touched = read_pull_request(api, self.settings.results_repo, num).touched
        return any(f"/predictions/{d}." in t.path for t in touched for d in PRIVATE_DATASETS if t.change != "deleted")


def _lasting(err: OSError) -> bool:
    """A Hub answer a replay would get again: 4xx (no such pull request, no access), not 408 or 429."""
    status = getattr(getattr(err, "response", None), "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 429)
