"""The instance's HTTP ports against a real HTTP client, on 127.0.0.1: where they bind, the
token they ask for, the paths each serves, and what clients that never finish their
request can hold (``streams.observability.server``, ``streams.http_access``)."""

from __future__ import annotations

import json
import selectors
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cli_runner import streams

from streams.cluster import Member
from streams.codec import AvroCodec
from streams.http_access import BearerToken, HttpAccess, HttpAccessError
from streams.observability.health import Health
from streams.observability.server import HttpLimits, InstanceServer
from streams.patterns.queries import QueryFailed, query
from streams.pipeline.stats import Stats
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.state import IN_MEMORY
from streams.schemas import default_catalog
from streams.testing.memory import MemoryCluster
from streams.testing.memory.admin import MemoryClients
from streams.testing.wait import wait_until
from streams.topology import Topology, TopologyBuilder, owned

TOKEN = BearerToken("0123456789abcdef0123456789abcdef")
HALF_SENT = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the blank line never comes
Answer = tuple[int, str, dict[str, str]]


def ask(port: int, path: str, authorization: str | None = None) -> Answer:
    """Status, body and headers of ``GET path`` on 127.0.0.1."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def table_query(table: str, key: str, params: dict[str, str]) -> tuple[int, Any]:
    return 200, {"table": table, "key": key, "found": True, "value": 1}


def metrics() -> tuple[bytes, str]:
    return b"streams_up 1\n", "text/plain; version=0.0.4"


@pytest.fixture
def health() -> Health:
    health = Health()
    health.running = health.assigned = True
    return health


# -- A: 127.0.0.1 unless told; another host only with a token, asked of every request ---


def test_a_port_binds_127_0_0_1_unless_told(health: Health) -> None:
    server = InstanceServer(0, health).bind()
    try:
        assert server.host == "127.0.0.1"
    finally:
        server.stop()


def test_another_host_without_a_token_is_refused_before_anything_is_bound(
    health: Health,
) -> None:
    server = InstanceServer(0, health, exposition=metrics, access=HttpAccess("0.0.0.0"))
    with pytest.raises(HttpAccessError, match=r"refusing to serve the metrics port on 0\.0\.0\.0"):
        server.start()
    assert not server.bound


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/stores/t/k", "/nothing"])
def test_with_a_token_every_path_asks_for_it(health: Health, path: str) -> None:
    # Two servers, as an instance has: each checks every request on every path.
    servers = [
        InstanceServer(0, health, exposition=metrics, access=HttpAccess(token=TOKEN)).start(),
        InstanceServer(0, health, query=table_query, access=HttpAccess(token=TOKEN)).start(),
    ]
    try:
        for server in servers:
            for refused in (None, "Bearer wrong-token-of-the-right-size!", f"Basic {TOKEN.value}"):
                status, body, headers = ask(server.port, path, refused)
                assert status == 401
                assert headers["WWW-Authenticate"].startswith("Bearer")
                assert TOKEN.value not in body
            status, _body, _headers = ask(server.port, path, TOKEN.header)
            assert status in {200, 404}
    finally:
        for server in servers:
            server.stop()


def passthrough() -> Topology:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).to(owned("out"), type="order.placed", version=2)
    return b.build(default_catalog())


def instance(
    cluster: MemoryCluster, on_tick: Callable[[Stats], None] | None = None, **fields: Any
) -> Runtime:
    config = RuntimeConfig(
        "memory", poll_timeout_s=0, status_interval_s=0, state_dir=IN_MEMORY, **fields
    )
    codec = AvroCodec(default_catalog())
    clients = MemoryClients(cluster)
    return Runtime(passthrough(), config, codec=codec, clients=clients, on_tick=on_tick)


def test_an_instance_refuses_another_host_without_a_token_before_it_creates_anything() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("in", 1)
    for ports in ({"metrics_port": 0}, {"query_port": 0}):
        with pytest.raises(HttpAccessError, match="refusing to serve"):
            instance(cluster, http=HttpAccess("0.0.0.0"), **ports)
    assert cluster.topics() == ["in"]  # no output, no DLQ, no changelog


# -- B: tables only on the query port ----------------------------------------------------


def test_tables_answer_on_the_query_port_only() -> None:
    cluster = MemoryCluster()
    cluster.create_topic("in", 1)
    seen: dict[str, Answer] = {}

    def asked(_stats: Stats) -> None:
        assert runtime.metrics_port and runtime.query_port
        seen["metrics port"] = ask(runtime.metrics_port, "/stores/nothing/k")
        seen["query port"] = ask(runtime.query_port, "/stores/nothing/k")
        runtime.stop()

    runtime = instance(cluster, asked, metrics_port=0, query_port=0, shutdown_timeout_s=0)
    runtime.run()
    status, body, _headers = seen["metrics port"]
    assert status == 404
    assert body == "not found: /healthz, /readyz, /metrics are served here\n"
    status, body, _headers = seen["query port"]  # the table's answer, as JSON
    assert status == 404 and "nothing" in json.loads(body)["error"]


# -- C: half-sent requests hold no thread, and are dropped ---------------------------------


def half_sent(port: int, count: int) -> list[tuple[socket.socket, float]]:
    """``count`` connections that send a request's first lines and never its end, each
    with the moment it began to connect (the server's clock for it starts after that, but
    may start before ``create_connection`` returns here)."""
    opened = []
    for _ in range(count):
        connected = time.monotonic()
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(HALF_SENT)
        opened.append((sock, connected))
    return opened


def dropped_at(
    socks: list[socket.socket], deadline_s: float, count: int | None = None
) -> dict[socket.socket, float]:
    """When the server closed each of ``socks`` (read EOF or a reset), waiting at most
    ``deadline_s`` in all, or until ``count`` of them (default: all) are; those still open
    are left out."""
    selector = selectors.DefaultSelector()
    for sock in socks:
        selector.register(sock, selectors.EVENT_READ)
    closed: dict[socket.socket, float] = {}
    deadline = time.monotonic() + deadline_s
    while len(closed) < (len(socks) if count is None else count) and time.monotonic() < deadline:
        for key, _events in selector.select(timeout=deadline - time.monotonic()):
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            try:
                data = sock.recv(1024)
            except ConnectionResetError:
                data = b""
            assert data == b"", "a half-sent request was answered"
            closed[sock] = time.monotonic()
            selector.unregister(sock)
    selector.close()
    return closed


@pytest.fixture
def baseline() -> Iterator[int]:
    """The threads of the process before a server starts."""
    yield threading.active_count()


def test_half_sent_requests_hold_no_thread_and_are_dropped_after_the_timeout(
    health: Health, baseline: int
) -> None:
    limits = HttpLimits(timeout_s=0.5, max_connections=512, workers=2)
    server = InstanceServer(0, health, exposition=metrics, limits=limits).start()
    try:
        opened = half_sent(server.port, 300)
        # All 300 wait for their request's end: a normal request is answered meanwhile...
        assert ask(server.port, "/healthz")[:2] == (200, "ok\n")
        assert ask(server.port, "/metrics")[:2] == (200, "streams_up 1\n")
        # ...on a bounded number of threads: the server's loop and its workers.
        assert threading.active_count() <= baseline + 1 + limits.workers
        closed = dropped_at([sock for sock, _ in opened], deadline_s=30)
        assert len(closed) == len(opened)  # every one dropped...
        for sock, connected in opened:  # ...and none before its timeout
            assert closed[sock] - connected >= limits.timeout_s
            sock.close()
        assert threading.active_count() <= baseline + 1 + limits.workers
    finally:
        server.stop()
    wait_until(lambda: threading.active_count() <= baseline, 10, what="the server's threads")


def test_a_request_sent_a_byte_at_a_time_is_dropped_at_the_timeout(health: Health) -> None:
    # The timeout is for the whole head, not between two bytes: a trickle does not extend it.
    limits = HttpLimits(timeout_s=0.5)
    server = InstanceServer(0, health, limits=limits).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            connected, sent = time.monotonic(), 0
            selector = selectors.DefaultSelector()
            selector.register(sock, selectors.EVENT_READ)
            while not selector.select(timeout=0.05):  # nothing to read: not dropped yet
                assert time.monotonic() - connected < 10, "a trickling request is never dropped"
                sock.sendall(HALF_SENT[sent % len(HALF_SENT) : sent % len(HALF_SENT) + 1])
                sent += 1
            selector.close()
            assert sock.recv(1024) == b""
            assert time.monotonic() - connected >= limits.timeout_s
            assert sent > 5  # it did trickle
    finally:
        server.stop()


def test_past_the_bound_the_oldest_waiting_connection_is_dropped(
    health: Health, baseline: int
) -> None:
    limits = HttpLimits(timeout_s=60, max_connections=16, workers=2)
    server = InstanceServer(0, health, limits=limits).start()
    try:
        opened = [sock for sock, _ in half_sent(server.port, 40)]
        oldest, newest = opened[:24], opened[24:]
        # Long before their timeout, the 24 oldest make room for the 16 newest.
        assert set(dropped_at(oldest, deadline_s=30)) == set(oldest)
        assert dropped_at(newest, deadline_s=0.2) == {}  # still waiting
        assert ask(server.port, "/healthz")[:2] == (200, "ok\n")  # room made for it too
        assert threading.active_count() <= baseline + 1 + limits.workers
        assert list(dropped_at(newest, deadline_s=30, count=1)) == newest[:1]  # the oldest
        assert dropped_at(newest[1:], deadline_s=0.2) == {}
    finally:
        server.stop()
    # Stopping drops every open connection.
    assert len(dropped_at(opened[24:], deadline_s=30)) == 16
    for sock in opened:
        sock.close()


def test_a_head_longer_than_the_bound_is_dropped_at_once(health: Health) -> None:
    limits = HttpLimits(timeout_s=60, max_head_bytes=1_024)
    server = InstanceServer(0, health, limits=limits).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(HALF_SENT + b"X-Padding: " + b"x" * 2_048 + b"\r\n")
            assert len(dropped_at([sock], deadline_s=30)) == 1
    finally:
        server.stop()


# -- the commands: refused in one line before the cluster is asked; the token from a file ---

ROOT = Path(__file__).resolve().parents[3]


# A port no broker listens on: the commands are refused before asking, or fail asking.
NO_BROKER = "127.0.0.1:1"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "topology/orders.py", "--metrics-port", "0", "--http-host", "0.0.0.0"],
        ["run", "topology/orders.py", "--query-port", "0", "--http-host", "0.0.0.0"],
        ["run", "topology/orders.py", "--instances", "2", "--query-port", "0", "--http-host", ""],
        ["projections", "rebuild", "topology/orders.py", "--name", "p", "--query-port", "0",
         "--http-host", "10.1.2.3", "--execute"],
    ],
)  # fmt: skip
def test_a_command_refuses_another_host_without_a_token_in_one_line(args: list[str]) -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": NO_BROKER, "STREAMS_HTTP_TOKEN": ""}
    result = streams(*args, "--timeout", "1", env=env, cwd=ROOT)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1  # the parent of --instances refuses before starting any child
    assert lines[0].startswith("error: refusing to serve the metrics and query ports on ")
    assert "without a token" in lines[0]


def test_with_a_token_file_the_command_goes_on_to_the_cluster(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(f"{TOKEN.value}\n")
    args = ["run", "topology/orders.py", "--metrics-port", "0", "--http-host", "0.0.0.0"]
    env = {"KAFKA_BOOTSTRAP_SERVERS": NO_BROKER}
    result = streams(*args, "--http-token-file", str(token), "--timeout", "1", env=env, cwd=ROOT)
    assert result.returncode == 1
    assert "refusing to serve" not in result.stderr  # past the check: no broker on port 1
    assert TOKEN.value not in result.stderr + result.stdout
    missing = streams(*args, "--http-token-file", str(tmp_path / "nothing"), env=env, cwd=ROOT)
    assert missing.stderr.strip() == (
        f"error: cannot read the token file {tmp_path / 'nothing'}: No such file or directory"
    )


def test_streams_query_sends_the_token(health: Health, tmp_path: Path) -> None:
    server = InstanceServer(0, health, query=table_query, access=HttpAccess(token=TOKEN)).start()
    member = Member("m-1", f"app@127.0.0.1:{server.port}", "/127.0.0.1", ())
    cluster: Any = SimpleNamespace(describe_group=lambda _app: SimpleNamespace(members=[member]))
    try:
        assert query(cluster, "app", "counts", "k", timeout=5, token=TOKEN) == 1
        for token, said in [(None, "asks for a token"), (BearerToken("x" * 16), "refused")]:
            with pytest.raises(QueryFailed, match=said):  # at once: asking again won't help
                query(cluster, "app", "counts", "k", timeout=60, token=token)
    finally:
        server.stop()
