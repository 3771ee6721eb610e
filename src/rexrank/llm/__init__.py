"""The one door to LLM judges (GREEN, FineRadScore, RadRScore): any OpenAI-compatible chat endpoint.

    judge = Judge(base_url="http://localhost:8000/v1", model="StanfordAIMI/GREEN-RadLlama2-7b")
    replies = judge.complete(prompts, prompt_version="green-v1", dataset="mimic-cxr")

Endpoint from arguments or `REXRANK_JUDGE_URL` / `REXRANK_JUDGE_MODEL`; the API key only from the environment
(`OPENAI_API_KEY` or the variable named by `api_key_env`), so it never reaches a signature or a log. Prompts run on
a bounded thread pool; timeouts, 429 (Retry-After honoured), 5xx, connection errors and unreadable bodies are
retried with exponential backoff and jitter, and a request that still fails is the judge's failure, never the
study's: the batch raises `JudgeFailed` once every other prompt is answered (and cached), so no study is ever scored
or left out because the maintainers' server was down. A prompt the server refuses (another 4xx: too long, say) is
the request's own doing and comes back as `Reply(refused=True)` for the metric to score. Every reply is written to
a SQLite cache as it completes, keyed by model, prompt version, messages and decoding settings: an interrupted run
resumes and a rerun makes no calls. Credentialed datasets go only to loopback endpoints or to ones the user allowed
(`--allow-endpoint`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from rexrank.cache import default_path
from rexrank.errors import InputError, MetricUnavailable
from rexrank.llm.deadline import abort, deadline, http_client, resume
from rexrank.llm.guard import CREDENTIALED_DATASETS, DataUse, check_data_use, credentialed, is_loopback
from rexrank.llm.replies import ReplyCache

__all__ = ["CREDENTIALED_DATASETS", "DataUse", "Judge", "JudgeFailed", "JudgeStats", "JudgeUnavailable", "Reply",
           "ReplyCache", "check_data_use", "credentialed", "is_loopback"]

Messages = list[dict]


class JudgeUnavailable(MetricUnavailable):
    """The judge cannot run here (no openai package, no key, unknown model); the message says how to fix it."""


class JudgeFailed(JudgeUnavailable):
    """The judge's server failed (timeouts, 5xx, 429, a dead connection) after every retry, or refused most of a
    batch (its configuration, not the studies): nothing is scored. The replies received are cached, so running again
    asks only for the rest."""


@dataclass(frozen=True)
class Reply:
    text: str | None
    finish_reason: str | None = None
    cached: bool = False
    error: str | None = None  # why there is no answer: only ever a refusal once `Judge.complete` returns
    refused: bool = False  # the server refused this request (HTTP 4xx other than 408/409/429): the prompt's doing

    @property
    def truncated(self) -> bool:  # cut at max_tokens: returned, but the caller decides whether it parses
        return self.finish_reason == "length"


@dataclass
class JudgeStats:
    calls: int = 0  # HTTP requests, retries included
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    truncated: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in vars(self).items())


def _openai():
    try:
        import openai
    except ImportError:
        raise JudgeUnavailable("the LLM judge needs the openai package: pip install 'rexrank[llm]'") from None
    return openai


class _Fatal(Exception):
    """A failure no retry and no other prompt can fix (bad key, unknown model)."""


@dataclass(eq=False)
class Judge:
    base_url: str | None = None  # default: REXRANK_JUDGE_URL, else OpenAI's public API
    model: str | None = None  # default: REXRANK_JUDGE_MODEL
    temperature: float = 0.0  # greedy: judges must be reproducible
    max_tokens: int | None = 1024  # None: not sent, the server's own limit (vLLM: the context left after the prompt)
    seed: int | None = None
    concurrency: int | str = 8  # requests in flight; "auto": the endpoint's capacity (`rexrank.llm.capacity`)
    timeout: float = 120.0  # seconds per request, in all (`rexrank.llm.deadline`), not per socket read
    max_retries: int = 6
    backoff_base: float = 1.0  # seconds; waits grow base, 2 base, 4 base, ... up to backoff_max
    backoff_max: float = 60.0
    api_key_env: str = "OPENAI_API_KEY"
    allow_endpoints: tuple[str, ...] = ()  # non-loopback endpoints that may receive credentialed data
    cache: str | os.PathLike | bool = True  # True: rexrank's default cache file; False: no cache
    progress: bool = True
    stats: JudgeStats = field(default_factory=JudgeStats, init=False)

    def __post_init__(self):
        self.base_url = self.base_url or os.environ.get("REXRANK_JUDGE_URL") or "https://api.openai.com/v1"
        self.model = self.model or os.environ.get("REXRANK_JUDGE_MODEL")
        if not self.model:
            raise JudgeUnavailable("no judge model: pass model=... or set REXRANK_JUDGE_MODEL")
        if self.concurrency != "auto" and (not isinstance(self.concurrency, int) or self.concurrency < 1):
            raise InputError(f"judge concurrency must be a whole number from 1, or auto; got {self.concurrency!r}")
        self._auto: int | None = None  # "auto" resolved, once
        path = default_path() if self.cache is True else (self.cache or None)
        self._cache = ReplyCache(path) if path else None
        self._client = None
        self._lock = threading.Lock()  # guards stats, updated from the worker threads

    @property
    def decoding(self) -> dict:
        # float(): temperature=0 and temperature=0.0 must give one cache key
        tokens = None if self.max_tokens is None else int(self.max_tokens)
        return {"temperature": float(self.temperature), "max_tokens": tokens, "seed": self.seed}

    @property
    def identity(self) -> str:
        """The judge's part of a score signature."""
        seed = "" if self.seed is None else f":seed={self.seed}"
        tokens = "server" if self.max_tokens is None else self.max_tokens
        return f"judge:{self.model}:t={self.temperature:g}:max_tokens={tokens}{seed}"

    def key(self, messages: Messages, prompt_version: str) -> str:
        payload = [self.model, prompt_version, messages, self.decoding]
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def complete(self, prompts: list[Messages] | list[str], prompt_version: str, *,
                 dataset: DataUse | str | None) -> list[Reply]:
        """One reply per prompt, in order. `dataset` says what the text is (`rexrank.data.identity.identify`; a name
        or None is never public), for the data-use guard. A prompt the server refused gets Reply(refused=True); a
        request that failed after every retry raises JudgeFailed once the others are answered, as does a batch the
        server refused more than half of (a limit or model the maintainers set wrong refuses every prompt alike)."""
        check_data_use(dataset, self.base_url, self.allow_endpoints)
        messages = [[{"role": "user", "content": p}] if isinstance(p, str) else p for p in prompts]
        keys = [self.key(m, prompt_version) for m in messages]
        done: dict[str, Reply] = {}
        if self._cache:
            done = {k: Reply(text, finish, cached=True) for k, (text, finish) in self._cache.get(keys).items()}
        self._count(cache_hits=sum(k in done for k in keys))
        todo = {k: m for k, m in zip(keys, messages) if k not in done}  # identical prompts are asked once
        if todo:
            self._ask_all(todo, done, prompt_version, len(keys))
        replies = [done[k] for k in keys]
        failed = [done[k] for k in todo if done[k].error is not None and not done[k].refused]
        if failed:
            kept = (f"; the {len(todo) - len(failed):,} replies received are cached: run again to ask only the rest"
                    if self._cache else "")
            raise JudgeFailed(f"the judge at {self.base_url} failed {len(failed):,} of {len(todo):,} requests "
                              f"({failed[0].error}): nothing was scored{kept}")
        refused = [r for r in replies if r.refused]
        if len(refused) > len(replies) / 2:
            raise JudgeFailed(f"the judge at {self.base_url} refused {len(refused):,} of {len(replies):,} prompts "
                              f"({refused[0].error}): the judge's settings, not the studies; nothing was scored")
        return replies

    def _ask_all(self, todo: dict[str, Messages], done: dict[str, Reply], prompt_version: str, total: int):
        from tqdm.auto import tqdm

        client = self._connect()
        resume(client._client)
        stop = threading.Event()  # set when the batch ends early: workers stop retrying
        with ExitStack() as stack:
            put = stack.enter_context(self._cache.writer()) if self._cache else None
            bar = stack.enter_context(tqdm(total=total, initial=total - len(todo), desc=f"judge {self.model}",
                                           disable=not self.progress))
            pool = ThreadPoolExecutor(max_workers=min(self.workers(), len(todo)), thread_name_prefix="judge")
            pending: dict = {}
            ended = []  # set once every answer is in; until then an exit is early
            # On an interrupt or a fatal error (callbacks run last first): no more retries, the requests in flight
            # end now (their sockets shut down, or a Ctrl-C would wait out their deadline), queued ones never start.
            # "In flight" includes a Ctrl-C while the requests are still being submitted: the first may be sent.
            stack.callback(pool.shutdown, wait=False, cancel_futures=True)
            stack.callback(lambda: ended or abort(client._client))
            stack.callback(stop.set)
            pending.update({pool.submit(self._ask, client, m, stop): k for k, m in todo.items()})
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    key = pending.pop(future)
                    try:
                        reply = done[key] = future.result()
                    except _Fatal as err:
                        raise JudgeUnavailable(str(err)) from None
                    self._count(failures=reply.error is not None, truncated=reply.truncated)
                    if put and reply.error is None:  # written now: an interrupted run keeps it
                        put(key, reply.text, reply.finish_reason, self.model, prompt_version)
                    bar.update()
            ended.append(True)

    def workers(self) -> int:
        """Requests in flight at once: `concurrency`, or for "auto" the endpoint's capacity, asked once (capped at
        AUTO_CAP; AUTO_DEFAULT when the endpoint does not say), with a line on stderr saying how it was chosen."""
        if self.concurrency != "auto":
            return self.concurrency
        if self._auto is None:
            from rexrank.llm.capacity import AUTO_CAP, AUTO_DEFAULT, endpoint_capacity

            found, how = endpoint_capacity(self.base_url, self.model, self.api_key_env)
            self._auto = AUTO_DEFAULT if found is None else min(found, AUTO_CAP)
            chosen = f"{self._auto}" + (f" (of {found:,}: at most {AUTO_CAP})" if found and found > AUTO_CAP else "")
            print(f"judge concurrency auto: {chosen}; {how}" if found else
                  f"judge concurrency auto: {self._auto}, the default; {how}", file=sys.stderr)
        return self._auto

    def _count(self, **increments) -> None:
        with self._lock:
            for name, value in increments.items():
                setattr(self.stats, name, getattr(self.stats, name) + int(value))

    def _connect(self):
        if self._client is None:
            openai = _openai()
            key = os.environ.get(self.api_key_env)
            if not key and not is_loopback(self.base_url):
                raise JudgeUnavailable(f"no API key: set {self.api_key_env} for the judge endpoint {self.base_url}")
            # Our own retries (with Retry-After and counting), so the client's are off.
            self._client = openai.OpenAI(base_url=self.base_url, api_key=key or "EMPTY", timeout=self.timeout,
                                         max_retries=0, http_client=http_client(openai, self.timeout))
        return self._client

    def _ask(self, client, messages: Messages, stop: threading.Event) -> Reply:
        openai = _openai()
        decoding = {k: v for k, v in self.decoding.items() if v is not None}
        for attempt in range(self.max_retries + 1):
            if stop.is_set():
                return Reply(None, error="stopped before it was asked (the run ended early)")
            self._count(calls=1)
            retry_after = None
            try:
                with deadline(self.timeout):  # in all: a server trickling bytes never holds a request longer
                    response = client.chat.completions.create(model=self.model, messages=messages, **decoding)
                choice = response.choices[0]
                if choice.message.content is None:
                    raise ValueError("reply without content")
                if usage := response.usage:
                    self._count(prompt_tokens=usage.prompt_tokens or 0, completion_tokens=usage.completion_tokens or 0)
                return Reply(choice.message.content, choice.finish_reason)
            except openai.APIStatusError as err:
                status, error = err.status_code, f"HTTP {err.status_code} from {self.base_url}: {err.message}"
                if status in (401, 403):
                    raise _Fatal(f"API key rejected by {self.base_url} (HTTP {status}): set {self.api_key_env} "
                                 "to a key valid for this endpoint") from None
                if status == 404:
                    raise _Fatal(f"model {self.model!r} not found at {self.base_url} (is the model name right, and "
                                 f"does the URL end in /v1?): {err.message}") from None
                if status not in (408, 409, 429) and status < 500:
                    return Reply(None, error=error, refused=True)  # this prompt was refused (e.g. too long)
                retry_after = _retry_after(err.response.headers)
            except openai.APIConnectionError as err:  # timeouts included
                error = f"{type(err).__name__} talking to {self.base_url}: {err}"
            except (ValueError, TypeError, IndexError, AttributeError) as err:  # a body that is not a chat completion
                error = f"unreadable reply from {self.base_url}: {type(err).__name__}: {err}"
            if attempt == self.max_retries or stop.is_set():
                return Reply(None, error=f"{error} (after {attempt + 1} attempts)")
            self._count(retries=1)
            cap = min(self.backoff_max, self.backoff_base * 2 ** attempt)
            stop.wait(min(self.backoff_max, retry_after) if retry_after is not None else random.uniform(cap / 2, cap))
        raise AssertionError("unreachable")


def _retry_after(headers) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, `Retry-After` in seconds, or an HTTP date."""
    try:
        if ms := headers.get("retry-after-ms"):
            return float(ms) / 1000
        if value := headers.get("retry-after"):
            try:
                return max(0.0, float(value))
            except ValueError:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        pass
    return None
