"""The endpoint of the maintainers' webhook: it receives the Hub's events for the results repo and hands them to
the worker (`rexrank.backend.webhook`: what each event asks for, and the worker that runs it).

The app (`serve`, deployed by `leaderboard_sync/app.py`) refuses to start without a secret. Its endpoint takes the
raw request: it compares `X-Webhook-Secret` with `hmac.compare_digest` (401 without it, 403 when wrong) before a byte
of the body is read, and hangs up; then it reads at most `MAX_BODY` bytes (413 for a larger Content-Length, or as
soon as a chunked body passes the limit) within `BODY_SECONDS` (408), parses them with explicit limits and checks
them against huggingface_hub's `WebhookPayload` (400 for anything else), and only then plans.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import re
import socket
import sys
import threading
from dataclasses import dataclass

from rexrank.backend.webhook import Settings, Worker, plan
from rexrank.errors import InputError
from rexrank.rules.layout import KiB
from rexrank.rules.limits import JsonLimits, parse_json
from rexrank.text import shown

# A real payload is one event of one repository: a PR opened is about 1.3 KB (the Hub docs' example), a push a few
# hundred bytes per moved ref. The free text it can carry is a discussion's title and a comment's content (a pull
# request's description rides on the event that opens it). 64 KiB holds fifty of the docs' example, or about 500 moved
# refs; a discussion event past it is refused (413) and loses no job, because the commits of a new pull request, and
# a merge's commit on main, come as `repo.content` events too, which carry no comment.
MAX_BODY = 64 * KiB
BODY_SECONDS = 10.0  # the Hub posts its few KB at once; a body still trickling in after this is refused (408)
WEBHOOK_JSON = JsonLimits(MAX_BODY, max_depth=6, max_items=4_096)  # a real payload: depth 3, about 40 items


class _Refused(Exception):
    def __init__(self, status: int, error: str):
        super().__init__(error)
        self.status, self.error = status, error


def _refuse(status: int, error: str):
    """An answer that closes the connection: the rest of a refused body is never read."""
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error}, status_code=status, headers={"connection": "close"})


async def _read_body(request) -> bytes:
    """At most MAX_BODY bytes within BODY_SECONDS, refused as soon as either is passed; never the whole of more."""
    length = request.headers.get("content-length")
    if length is not None and not re.fullmatch(r"[0-9]{1,18}", length):
        raise _Refused(400, "Content-Length is not a number")
    if length is not None and int(length) > MAX_BODY:
        raise _Refused(413, f"a body of {int(length)} bytes: a Hub event is at most {MAX_BODY}")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY:
                    raise _Refused(413, f"a body of more than {MAX_BODY} bytes: a Hub event is at most {MAX_BODY}")
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, f"the body took longer than {BODY_SECONDS:g} s") from None
    return b"".join(chunks)


def webhook_app(secret: str, worker: Worker):
    """The endpoint, `/webhooks/results`, as a FastAPI app: it takes the raw request, so nothing reads or parses the
    body before the secret is checked (see the module's rules)."""
    from fastapi import FastAPI
    from huggingface_hub import WebhookPayload
    from pydantic import ValidationError
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    expected = secret.encode()

    async def results(request):
        given = request.headers.get("x-webhook-secret")
        if given is None:
            return _refuse(401, "X-Webhook-Secret header not set")
        if not hmac.compare_digest(given.encode("latin-1"), expected):  # the header's bytes, as they came
            return _refuse(403, "invalid webhook secret")
        try:
            body = await _read_body(request)
        except _Refused as err:
            return _refuse(err.status, err.error)
        try:
            payload = WebhookPayload.model_validate(parse_json(body, WEBHOOK_JSON))
        except InputError as err:
            return _refuse(400, f"not a Hub webhook event: {err}")
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the event"
            return _refuse(400, f"not a Hub webhook event: {shown(where, 60)}: {shown(first['msg'], 120)}")
        found = plan(payload.model_dump(), worker.settings.results_repo)
        queued, not_queued = worker.submit(found.jobs)
        return JSONResponse({"queued": [str(j) for j in queued], "not_queued": not_queued, "why": found.why})

    return FastAPI(routes=[Route("/webhooks/results", results, methods=["POST"])], docs_url=None, redoc_url=None,
                   openapi_url=None)


def _landing(app):
    """The Space's page: what the endpoint is, under the webhook app (gradio, as the Space's SDK)."""
    import gradio as gr

    with gr.Blocks(title="rexrank leaderboard sync") as ui:
        gr.Markdown("# rexrank leaderboard sync\n\nThe maintainers' jobs of the rexrank results repo, run on its Hub "
                    "webhook: `POST /webhooks/results` with the webhook's secret in `X-Webhook-Secret`. Rules: "
                    "`rexrank.backend.webhook`; threats: `docs/security.md`.")
    return gr.mount_gradio_app(app, ui, path="/")


@dataclass
class Served:
    """A running webhook app (serve(..., block=False)): its address, and close() to stop it."""

    url: str
    server: object
    thread: threading.Thread

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(host: str | None = None, port: int | None = None, block: bool = True):
    """The webhook app on uvicorn: the endpoint `/webhooks/results` (webhook_app) under the Space's page. Refuses to
    start without a secret (WEBHOOK_SECRET or REXRANK_WEBHOOK_SECRET): an open endpoint would let anyone trigger the
    maintainers' jobs. Returns (Served, Worker) with block=False; with block=True, serves until stopped."""
    import time

    import uvicorn

    secret = os.environ.get("REXRANK_WEBHOOK_SECRET") or os.environ.get("WEBHOOK_SECRET")
    if not secret:
        raise InputError("no webhook secret: set REXRANK_WEBHOOK_SECRET (the secret of the Hub webhook) before "
                         "starting; without one anyone could trigger the maintainers' jobs")
    settings = Settings.from_environment()
    host, port = host or "0.0.0.0", port if port is not None else int(os.environ.get("PORT", 7860))
    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as err:
        listening.close()
        raise InputError(f"cannot listen on {host}:{port} ({err.strerror})") from None
    worker = Worker(settings)
    app = _landing(webhook_app(secret, worker))
    server = uvicorn.Server(uvicorn.Config(app, http="h11", log_level="warning"))
    where = f"http://{host}:{listening.getsockname()[1]}"
    print(f"rexrank webhook: serving POST {where}/webhooks/results for {settings.results_repo}", file=sys.stderr,
          flush=True)
    if block:
        server.run(sockets=[listening])
        return None, worker
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, name="rexrank-webhook-http",
                              daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    if not server.started:
        raise InputError(f"the webhook app did not start on {host}:{port}")
    return Served(where, server, thread), worker
