"""The instance's HTTP ports: the metrics port and the query port.

``InstanceServer(port, health, exposition=, query=, access=, limits=).bind()`` checks
``access`` (``streams.http_access``: a host other than 127.0.0.1 without a token raises
``HttpAccessError``) and binds the port at once (a port that is taken raises
``InstanceServerError``), so ``streams run`` fails with one line before it creates
anything on the cluster; ``start()`` serves from a thread of its own until ``stop()``.
What it serves:

- ``/metrics`` (with ``exposition``: the metrics port): Prometheus text format,
  ``exposition()``'s body and content type, built at scrape time
  (``streams.observability.metrics``).
- ``/stores/<table>/<key>`` (with ``query``: the query port): the value of ``key`` in
  ``table`` as JSON, ``query(table, key, params)``'s status and body
  (``streams.runtime.query``); ``<key>`` is URL-quoted; ``?from=&to=`` (``params``) bound
  a windowed table's window starts.
- ``/healthz`` (both): 200 ``ok`` while the loop runs, else 503.
- ``/readyz`` (both): 200 ``ready`` when ``health.unready()`` is empty, else 503 with the
  reasons, one a line (``streams.observability.health``).
- anything else: 404, naming the paths served there.

With a token (``access.token``), every request on every path must carry
``Authorization: Bearer <token>``; without it the answer is 401.

What clients can hold (``HttpLimits``): connections are read and written by one asyncio
loop on the server's thread, so a connection costs no thread while its request arrives.
A request whose head (request line and headers) has not all arrived ``timeout_s`` after
it connected is dropped, and so is an answer not taken within ``timeout_s``; at most
``max_connections`` are open, and one more drops the one that has waited longest for its
head (so a client that sends its request promptly is answered however many wait). Answers
are made on at most ``workers`` threads, by ``BaseHTTPRequestHandler`` reading the head
received. One request per connection (HTTP/1.0): no connection idles between requests.
The threads are therefore at most 1 + ``workers`` whatever the clients do.

``load_metrics`` imports the metrics module, which needs ``prometheus_client`` (the extra
``metrics``): without it, one ``InstanceServerError`` saying what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from streams.errors import StreamsError
from streams.http_access import LOCAL, HttpAccess
from streams.observability.health import Health

INSTALL = "pip install 'streams[metrics]'"

Exposition = Callable[[], tuple[bytes, str]]
"""Returns the body of a scrape and its content type."""

Query = Callable[[str, str, dict[str, str]], tuple[int, Any]]
"""``query(table, key, params)``: the HTTP status and the JSON body of the answer; ``params``
are the query string's (the last of a name given twice)."""

STORES = "/stores/"
TEXT = "text/plain; charset=utf-8"
HEAD_END = b"\r\n\r\n"
BACKLOG = 128  # connections the kernel queues before the loop accepts them


class InstanceServerError(StreamsError):
    """The port cannot be served: the metrics package is missing or the port is taken."""


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What clients of a port can hold (see the module docstring)."""

    timeout_s: float = 10.0  # to send the request's head, and to take the answer
    max_connections: int = 128  # open at once
    workers: int = 4  # threads making answers
    max_head_bytes: int = 16_384  # a longer request line and headers: dropped


LIMITS = HttpLimits()


def load_metrics() -> ModuleType:
    """``streams.observability.metrics``, or ``InstanceServerError`` without its package."""
    try:
        from streams.observability import metrics  # noqa: PLC0415 - the extra's module
    except ImportError as exc:
        raise InstanceServerError(
            f"--metrics-port needs the package prometheus_client: {INSTALL}"
        ) from exc
    return metrics


class InstanceServer:
    """Serves one instance's endpoints on ``port`` (0: a free port, see ``port``) of
    ``access.host``."""

    def __init__(
        self,
        port: int,
        health: Health,
        *,
        exposition: Exposition | None = None,
        query: Query | None = None,
        access: HttpAccess = LOCAL,
        limits: HttpLimits = LIMITS,
    ) -> None:
        self._requested = port
        self._access, self._limits = access, limits
        self._answer = _answerer(health, exposition, query, access)
        self._what = "the metrics port" if exposition is not None else "the query port"
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None  # set from ``stop``, awaited on the loop

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the free one picked for 0)."""
        if self._socket is None:
            return self._requested
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def host(self) -> str:
        """The address it listens on (the host asked for, until it is bound)."""
        if self._socket is None:
            return self._access.host
        host: str = self._socket.getsockname()[0]
        return host

    @property
    def bound(self) -> bool:
        """Whether it holds its port: from ``bind`` (or ``start``) until ``stop``."""
        return self._socket is not None

    def bind(self) -> InstanceServer:
        """Check the access and take the port (nothing is served until ``start``)."""
        if self._socket is None:
            self._access.check(self._what)
            host, port = self._access.host, self._requested
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            try:
                self._socket = socket.create_server((host, port), family=family, backlog=BACKLOG)
            except OSError as exc:
                where = "" if host == "127.0.0.1" else f" of {host or 'every interface'}"
                raise InstanceServerError(
                    f"cannot serve on port {port}{where}: {exc.strerror or exc}"
                ) from exc
        return self

    def start(self) -> InstanceServer:
        """Bind if not yet, and serve from a thread of its own until ``stop``."""
        sock = self.bind()._socket
        assert sock is not None
        loop = self._loop = asyncio.new_event_loop()
        stopping = self._stopping = asyncio.Event()  # bound to ``loop`` when awaited there
        self._thread = threading.Thread(
            target=self._run, args=(loop, sock, stopping), name="streams-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop the open connections and give the port back (a port bound
        and never served too)."""
        sock, self._socket = self._socket, None
        thread, self._thread = self._thread, None
        loop, self._loop = self._loop, None
        if thread is not None and loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # its loop closed: it has stopped
                loop.call_soon_threadsafe(self._stopping.set)
            thread.join(5)
        if sock is not None:
            sock.close()

    def _run(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, stopping: asyncio.Event
    ) -> None:
        try:
            loop.run_until_complete(self._serve(sock, stopping))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, sock: socket.socket, stopping: asyncio.Event) -> None:
        limits = self._limits
        pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="streams-http-answer")
        connections = _Connections(self._answer, pool, limits)
        server = await asyncio.start_server(
            connections.serve, sock=sock, limit=limits.max_head_bytes, backlog=BACKLOG
        )
        try:
            await stopping.wait()
        finally:
            server.close()
            await connections.close()
            pool.shutdown(wait=False, cancel_futures=True)


Answer = Callable[[bytes], bytes]
"""Makes the whole response (status line, headers, body) to a request's head."""


class _Connections:
    """The open connections of one server: each reads its request's head within the
    timeout, has its answer made on the pool, and sends it within the timeout; the oldest
    still reading its head is dropped when one more would pass ``max_connections``."""

    def __init__(self, answer: Answer, pool: ThreadPoolExecutor, limits: HttpLimits) -> None:
        self._answer, self._pool, self._limits = answer, pool, limits
        self._open: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._reading: dict[asyncio.Task[None], asyncio.StreamWriter] = {}  # oldest first

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._open) >= self._limits.max_connections and not self._make_room():
            writer.transport.abort()  # every open one is being answered: no room
            return
        self._open[task] = self._reading[task] = writer
        try:
            await self._exchange(task, reader, writer)
        except Exception:  # the loop serves on: only this connection ends
            writer.transport.abort()
        finally:
            self._open.pop(task, None)
            self._reading.pop(task, None)

    def _make_room(self) -> bool:
        """Drop the connection that has waited longest for its head; False if none waits."""
        oldest = next(iter(self._reading), None)
        if oldest is None:
            return False
        writer = self._reading.pop(oldest)
        del self._open[oldest]
        writer.transport.abort()  # its read ends at once; its task ends on its own
        return True

    async def _exchange(
        self, task: asyncio.Task[None], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        timeout = self._limits.timeout_s
        try:
            head = await asyncio.wait_for(reader.readuntil(HEAD_END), timeout)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.transport.abort()  # too slow, too long, or gone: nothing to answer
            return
        self._reading.pop(task, None)  # its head is in: no longer the one to drop
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(self._pool, self._answer, head)
        writer.write(response)
        try:
            await asyncio.wait_for(writer.drain(), timeout)
        except (TimeoutError, OSError):
            writer.transport.abort()  # a client that does not read its answer
            return
        writer.close()

    async def close(self) -> None:
        """Drop every open connection and wait for their tasks to end."""
        tasks = list(self._open.items())
        for task, writer in tasks:
            writer.transport.abort()
            task.cancel()
        await asyncio.gather(*(task for task, _ in tasks), return_exceptions=True)


def _answerer(
    health: Health, exposition: Exposition | None, query: Query | None, access: HttpAccess
) -> Answer:
    served = ["/healthz", "/readyz"]
    served += ["/metrics"] if exposition is not None else []
    served += [f"{STORES}<table>/<key>"] if query is not None else []
    elsewhere = f"not found: {', '.join(served)} are served here"

    class Handler(BaseHTTPRequestHandler):
        """Reads a request from the head received and writes its answer to a buffer
        (``request`` is the pair): the loop does the network, with its timeouts."""

        def setup(self) -> None:
            head, self.wfile = self.request
            self.rfile = io.BytesIO(head)

        def handle(self) -> None:
            self.handle_one_request()

        def finish(self) -> None:
            """Nothing to close: the loop sends the buffer."""

        def do_GET(self) -> None:
            if not access.allows(self.headers.get("Authorization")):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Bearer realm="streams"')
                self._body(b"unauthorized: send Authorization: Bearer <token>\n", TEXT)
                return
            path, _, params = self.path.partition("?")
            if path == "/metrics" and exposition is not None:
                try:
                    body, content_type = exposition()
                except Exception as exc:  # a scrape that fails is one line, not a traceback
                    self._text(500, f"metrics failed: {type(exc).__name__}: {exc}")
                    return
                self._send(200, body, content_type)
            elif path == "/healthz":
                alive = health.alive()
                self._text(200 if alive else 503, "ok" if alive else "not running")
            elif path == "/readyz":
                reasons = health.unready()
                self._text(503 if reasons else 200, "\n".join(reasons) or "ready")
            elif path.startswith(STORES) and query is not None and path.count("/") == 3:
                table, _, key = path.removeprefix(STORES).partition("/")
                try:
                    status, answer = query(unquote(table), unquote(key), dict(parse_qsl(params)))
                except Exception as exc:  # a failed read is an answer, not a traceback
                    status, answer = 500, {"error": f"{type(exc).__name__}: {exc}"}
                body = json.dumps(answer, ensure_ascii=False).encode()
                self._send(status, body, "application/json")
            else:
                self._text(404, elsewhere)

        def _text(self, status: int, text: str) -> None:
            self._send(status, f"{text}\n".encode(), TEXT)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self._body(body, content_type)

        def _body(self, body: bytes, content_type: str) -> None:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes every few seconds are not news: no access log."""

    def answer(head: bytes) -> bytes:
        out = io.BytesIO()
        Handler((head, out), ("", 0), None)  # type: ignore[arg-type]
        return out.getvalue()

    return answer
