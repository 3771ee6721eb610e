"""A total deadline per judge request.

httpx (httpx2, under the openai client) times each socket read and write on its own: a server that sends one byte every
half second never trips a 2 s read timeout, and holds the request as long as it likes (a 2 s call was seen held for
20 s). Here the HTTP client's network backend gives every socket operation of a request at most the time left
before that request's deadline (set per thread, around the call), so a request ends by its deadline whatever the
server does: trickled headers, a trickled body, a stalled TLS handshake.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import httpcore2 as httpcore
import httpx2 as httpx

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation in this block, on this thread, ends by `seconds` from now."""
    _local.end = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.end = None


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    end = getattr(_local, "end", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend):
        self._inner = inner
        self.streams: weakref.WeakSet[_Stream] = weakref.WeakSet()  # open sockets, for `abort`
        self.aborted = False  # set by `abort`: a socket a thread opens after it is shut at once

    def _opened(self, stream: httpcore.NetworkStream) -> _Stream:
        stream = _Stream(stream)
        self.streams.add(stream)
        if self.aborted:  # a worker was still connecting when the batch ended: it must not wait out its deadline
            _shut(stream)
        return stream

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return self._opened(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout),
                                                    local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return self._opened(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout),
                                                            socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def http_client(openai, timeout: float) -> httpx.Client:
    """The openai client's own HTTP client (its defaults: limits, redirects, proxies from the environment) whose
    requests honour `deadline`, through a proxy too."""
    client = openai.DefaultHttpxClient(timeout=timeout)
    client.rexrank_backends = []
    for transport in (client._transport, *client._mounts.values()):  # the direct one, and one per proxy
        pool = getattr(transport, "_pool", None)  # httpcore's ConnectionPool, or a proxy (its subclass)
        if pool is not None:
            pool._network_backend = _Backend(pool._network_backend)  # it opens every socket of the pool
            client.rexrank_backends.append(pool._network_backend)
    return client


def abort(client: httpx.Client) -> None:
    """End every request `client` has in flight now, from another thread (on Ctrl-C): their sockets are shut down,
    so a thread blocked reading one wakes up with an error instead of waiting for its deadline."""
    for backend in getattr(client, "rexrank_backends", []):
        backend.aborted = True
        for stream in list(backend.streams):
            _shut(stream)


def resume(client: httpx.Client) -> None:
    """Let `client` open sockets again after an `abort` (a new batch)."""
    for backend in getattr(client, "rexrank_backends", []):
        backend.aborted = False


def _shut(stream) -> None:
    sock = stream.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.shutdown(socket.SHUT_RDWR)
