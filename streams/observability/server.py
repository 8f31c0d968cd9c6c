"""The instance's HTTP port: ``/metrics``, ``/healthz``, ``/readyz`` and ``/stores``.

``InstanceServer(port, health, exposition=, query=).bind()`` binds the port at once (a port
that is taken raises ``InstanceServerError``, so ``streams run`` fails with one line before
it consumes anything); ``start()`` serves from a daemon thread until ``stop()``:

- ``/metrics`` (with ``exposition``): Prometheus text format, ``exposition()``'s body and
  content type, built at scrape time (``streams.observability.metrics``).
- ``/healthz``: 200 ``ok`` while the loop runs, else 503.
- ``/readyz``: 200 ``ready`` when ``health.unready()`` is empty, else 503 with the
  reasons, one a line (``streams.observability.health``).
- ``/stores/<table>/<key>`` (with ``query``): the value of ``key`` in ``table`` as JSON,
  ``query(table, key, params)``'s status and body (``streams.runtime.query``); ``<key>``
  is URL-quoted; ``?from=&to=`` (``params``) bound a windowed table's window starts.

``load_metrics`` imports the metrics module, which needs ``prometheus_client`` (the extra
``metrics``): without it, one ``InstanceServerError`` saying what to install.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from streams.errors import StreamsError
from streams.observability.health import Health

INSTALL = "pip install 'streams[metrics]'"

Exposition = Callable[[], tuple[bytes, str]]
"""Returns the body of a scrape and its content type."""

Query = Callable[[str, str, dict[str, str]], tuple[int, Any]]
"""``query(table, key, params)``: the HTTP status and the JSON body of the answer; ``params``
are the query string's (the last of a name given twice)."""

STORES = "/stores/"


class InstanceServerError(StreamsError):
    """The port cannot be served: the metrics package is missing or the port is taken."""


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
    """Serves one instance's endpoints on ``port`` (0: a free port, see ``port``)."""

    def __init__(
        self,
        port: int,
        health: Health,
        *,
        exposition: Exposition | None = None,
        query: Query | None = None,
        host: str = "0.0.0.0",
    ) -> None:
        self._requested = port
        self._host = host
        self._health = health
        self._exposition = exposition
        self._query = query
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the free one picked for 0)."""
        return self._server.server_address[1] if self._server is not None else self._requested

    @property
    def bound(self) -> bool:
        """Whether it holds its port: from ``bind`` (or ``start``) until ``stop``."""
        return self._server is not None

    def bind(self) -> InstanceServer:
        """Take the port (nothing is served until ``start``)."""
        if self._server is None:
            handler = _handler(self._health, self._exposition, self._query)
            try:
                server = ThreadingHTTPServer((self._host, self._requested), handler)
            except OSError as exc:
                raise InstanceServerError(
                    f"cannot serve on port {self._requested}: {exc.strerror or exc}"
                ) from exc
            server.daemon_threads = True
            self._server = server
        return self

    def start(self) -> InstanceServer:
        server = self.bind()._server
        assert server is not None
        self._thread = threading.Thread(
            target=server.serve_forever, name="streams-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and give the port back (a port bound and never served too)."""
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is not None:
            if thread is not None:  # ``shutdown`` waits for ``serve_forever`` to return
                server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)


def _handler(
    health: Health, exposition: Exposition | None, query: Query | None
) -> type[BaseHTTPRequestHandler]:
    served = ["/healthz", "/readyz"]
    served += ["/metrics"] if exposition is not None else []
    served += [f"{STORES}<table>/<key>"] if query is not None else []
    elsewhere = f"not found: {', '.join(served)} are served here"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
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
            self._send(status, f"{text}\n".encode(), "text/plain; charset=utf-8")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes every few seconds are not news: no access log."""

    return Handler
