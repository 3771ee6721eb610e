"""A fake OpenAI-compatible chat server for tests: stdlib only, on 127.0.0.1, with scripted replies and faults.

    def test_x(fake_openai):
        fake_openai.replies = {"Is there an effusion?": "No."}
        fake_openai.fail(429, retry_after=1)          # the next request is rate limited once
        judge = Judge(base_url=fake_openai.url, model=fake_openai.model)   # the real `openai` client
        ...
        assert fake_openai.calls == 2

Faults are served in order, one per request, before any normal reply: 429 / 500 / 503 (retryable), 401 / 404
(not), "malformed" (a body that is not JSON), "truncated" (JSON cut in half), "length" (the first half of the
reply's words, with finish_reason "length"), "slow" (answers after `seconds`, for client timeouts), "trickle" (the
whole response, status line and headers included, one byte every `seconds`: no single read ever times out).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Fault:
    kind: int | str
    retry_after: str | None = None  # the Retry-After header, as the server would write it
    seconds: float = 0.0  # for "slow"


class FakeOpenAI:
    def __init__(self, model: str = "judge-model", host: str = "127.0.0.1") -> None:
        self.model = model
        self.models = {model}  # served models; any other name answers 404 model_not_found, as OpenAI does
        self.api_key: str | None = None  # when set, any other bearer token answers 401
        self.replies: dict[str, str] | Callable[[str], str] = {}  # last user message -> reply text
        self.replies_to: Callable[[dict], str] | None = None  # the whole request body -> reply text (over `replies`)
        self.default_reply = "ok"
        self.delay = 0.0  # seconds before every answer
        self.fail_after: int | None = None  # after this many successful replies, every request answers 500
        self.requests: list[dict] = []  # request bodies of /v1/chat/completions, in arrival order
        self.trickled: list[tuple[int, int]] = []  # per "trickle" fault: (bytes sent before the client left, total)
        self.in_flight = self.max_in_flight = 0
        # What a vLLM server says of itself: {"num_gpu_blocks", "block_size", "max_model_len"} puts
        # vllm:cache_config_info on /metrics and max_model_len on /v1/models; None: neither, as OpenAI's API.
        self.vllm: dict[str, int] | None = None
        self._faults: deque[Fault] = deque()
        self._ok = 0
        self._lock = threading.Lock()
        self._server = _Server((host, 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self.url = f"http://{host}:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), name="FakeOpenAI", daemon=True)
        self._thread.start()

    @property
    def calls(self) -> int:
        return len(self.requests)

    def prompts(self) -> list[str]:
        """The last user message of each request, in arrival order."""
        return [_last_user(body) for body in self.requests]

    def fail(self, kind: int | str, times: int = 1, retry_after: str | int | float | None = None,
             seconds: float = 0.0) -> None:
        """Queue `times` faults of one kind for the next requests."""
        ra = None if retry_after is None else str(retry_after)
        self._faults.extend(Fault(kind, ra, seconds) for _ in range(times))

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- request handling (called from server threads) ---

    def answer(self, body: dict, auth: str | None) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(body)
            fault = self._faults.popleft() if self._faults else None
            if fault is None and self.fail_after is not None and self._ok >= self.fail_after:
                fault = Fault(500)
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            fault = Fault(401)
        if fault is None and body.get("model") not in self.models:
            fault = Fault(404)
        delay = self.delay + (fault.seconds if fault and fault.kind == "slow" else 0.0)
        if delay:
            time.sleep(delay)
        if fault is not None and fault.kind not in ("slow", "length", "trickle"):
            return _fault(fault, body.get("model"))
        prompt = _last_user(body)
        text = self.replies_to(body) if self.replies_to is not None else self.replies(prompt) \
            if callable(self.replies) else self.replies.get(prompt, self.default_reply)
        finish = "stop"
        if fault is not None and fault.kind == "length":
            words = text.split()
            text, finish = " ".join(words[: max(1, len(words) // 2)]), "length"
        with self._lock:
            self._ok += 1
            n = self._ok
        words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        reply = {
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": words, "completion_tokens": len(text.split()),
                      "total_tokens": words + len(text.split())},
        }
        trickle = {"X-Trickle": str(fault.seconds)} if fault is not None and fault.kind == "trickle" else {}
        return 200, trickle, json.dumps(reply).encode()


def _last_user(body: dict) -> str:
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def _fault(fault: Fault, model: str | None) -> tuple[int, dict[str, str], bytes]:
    if fault.kind == "malformed":
        return 200, {}, b"<html>502 Bad Gateway</html>"
    if fault.kind == "truncated":
        return 200, {}, b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mess'
    status = int(fault.kind)
    message, code = {
        401: ("Incorrect API key provided.", "invalid_api_key"),
        404: (f"The model `{model}` does not exist or you do not have access to it.", "model_not_found"),
        429: ("Rate limit reached.", "rate_limit_exceeded"),
    }.get(status, ("The server had an error while processing your request.", None))
    headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
    error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    return status, headers, json.dumps(error).encode()


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # listen backlog; the default 5 drops concurrent connects (a 1 s SYN retry each)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API; every answer carries Content-Length
    disable_nagle_algorithm = True  # headers and body go out in two writes: without this, ~40 ms per reply

    def log_message(self, format, *args):  # noqa: A002 - quiet test output
        pass

    def do_GET(self):
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        vllm = fake.vllm
        if self.path == "/metrics" and vllm:  # Prometheus text, as vLLM writes its cache config info
            labels = {"block_size": vllm["block_size"], "cache_dtype": "auto", "enable_prefix_caching": "True",
                      "gpu_memory_utilization": 0.9, "num_cpu_blocks": "None", "num_gpu_blocks": vllm["num_gpu_blocks"],
                      "swap_space": 4}
            text = ("# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                    "# TYPE vllm:num_requests_running gauge\n"
                    f'vllm:num_requests_running{{engine="0",model_name="{fake.model}"}} 0.0\n'
                    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
                    "# TYPE vllm:cache_config_info gauge\n"
                    "vllm:cache_config_info{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "} 1.0\n")
            return self._send(200, {"Content-Type": "text/plain; version=0.0.4"}, text.encode())
        if self.path.rstrip("/") != "/v1/models":
            return self._send(404, {}, b'{"error": {"message": "not found"}}')
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake",
                 **({"max_model_len": vllm["max_model_len"]} if vllm else {})} for m in sorted(fake.models)]
        self._send(200, {}, json.dumps({"object": "list", "data": data}).encode())

    def do_POST(self):
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {}, b'{"error": {"message": "not found"}}')
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            status, headers, payload = fake.answer(body, self.headers.get("Authorization"))
        finally:
            with fake._lock:
                fake.in_flight -= 1
        self._send(status, headers, payload)

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        if "X-Trickle" in headers:
            return self._trickle(float(headers.pop("X-Trickle")), status, headers, payload)
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): nothing to tell it
            pass

    def _trickle(self, seconds: float, status: int, headers: dict[str, str], payload: bytes) -> None:
        head = f"HTTP/1.1 {status} OK\r\nContent-Length: {len(payload)}\r\nContent-Type: application/json\r\n"
        data = (head + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() + payload
        self.close_connection = True
        sent = 0
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                sent += 1
                time.sleep(seconds)
        except (BrokenPipeError, ConnectionResetError, OSError):  # the client gave up: what this fault is for
            pass
        self.server.fake.trickled.append((sent, len(data)))  # type: ignore[attr-defined]


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch):
    """A running FakeOpenAI with a test API key in the environment and no judge settings leaking in."""
    fake = FakeOpenAI()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for key in ("REXRANK_JUDGE_URL", "REXRANK_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # a developer's proxy must not see loopback traffic
    yield fake
    fake.stop()


def non_loopback_address() -> str | None:
    """An address of this machine that is not a loopback one (traffic to it stays on the machine), or None."""
    import ipaddress
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the interface a route would use
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback else address


@pytest.fixture
def remote_openai(monkeypatch: pytest.MonkeyPatch):
    """A FakeOpenAI on one of this machine's non-loopback addresses: to the data-use guard, an endpoint elsewhere."""
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to serve a remote-looking judge on")
    fake = FakeOpenAI(host=address)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for key in ("REXRANK_JUDGE_URL", "REXRANK_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_PROXY", f"127.0.0.1,localhost,{address}")
    yield fake
    fake.stop()
