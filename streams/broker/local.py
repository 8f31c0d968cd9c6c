"""The local broker: Apache Kafka 4.x in KRaft combined mode, one node, from the official jars.

Layout of a data dir (the node's own folder, see ``streams.broker.node``)::

    server.properties   generated on every start (ports may change between starts)
    meta.json           cluster id and controller port, fixed when the storage is formatted
    broker.pid          pid of the running broker, removed on a clean stop
    kraft/              log.dirs: topics and the metadata log
    logs/server.log     the broker's log (log4j2), logs/stdout.log its console

``LocalBroker`` is the one-node case of ``LocalCluster``: the same node code (config,
formatting, launch, readiness, stop), laid out flat in its data dir, with optional SASL and
TLS listeners. It is the API the CLI (`streams broker ...`) and the pytest fixtures share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from streams.broker.cluster import LocalCluster
from streams.broker.jars import KAFKA_VERSION
from streams.broker.node import HOST, LocalNode, NodeStatus, free_port, port_in_use
from streams.config import DEFAULT_PORT, state_root
from streams.errors import BrokerError

__all__ = [
    "DEFAULT_PORT",
    "HOST",
    "BrokerStatus",
    "LocalBroker",
    "UpResult",
    "default_data_dir",
    "free_port",
    "port_in_use",
]


def default_data_dir(port: int) -> Path:
    return state_root() / f"broker-{port}"


@dataclass(frozen=True)
class BrokerStatus:
    running: bool
    bootstrap: str
    data_dir: Path
    version: str
    pid: int | None = None
    started_at: float | None = None
    stale_pid: int | None = None  # a pid file that named a process that is gone

    @property
    def uptime(self) -> float | None:
        return None if self.started_at is None else time.time() - self.started_at


@dataclass(frozen=True)
class UpResult:
    status: BrokerStatus
    already_running: bool
    seconds: float  # time from launch to the first successful metadata request


class _OneNode(LocalCluster):
    """LocalBroker's cluster: one node whose folder is the data dir itself (the layout
    single-node data dirs have always had), its metadata in meta.json."""

    _noun = "broker"

    def __init__(self, broker: LocalBroker) -> None:
        self._broker = broker  # before super().__init__, which makes the node
        super().__init__(1, broker.port, broker.data_dir, broker.version, broker.heap)

    def _make_node(self, node_id: int, port: int) -> LocalNode:
        b = self._broker
        return LocalNode(
            node_id,
            self.data_dir,
            port,
            heap=self.heap,
            sasl_users=b.sasl_users,
            sasl_port=b.sasl_port,
            tls=b.tls,
            tls_port=b.tls_port,
        )

    @property
    def _meta_file(self) -> Path:
        return self.data_dir / "meta.json"

    def _name(self, node: LocalNode) -> str:
        return "the Streams broker"


class LocalBroker:
    """A single-node Kafka broker+controller on 127.0.0.1, run from the Maven Central jars."""

    def __init__(
        self,
        port: int = DEFAULT_PORT,
        data_dir: Path | str | None = None,
        version: str = KAFKA_VERSION,
        heap: str = "1g",
        *,
        sasl_users: Mapping[str, str] | None = None,
        sasl_port: int | None = None,
        tls: tuple[Path, str] | None = None,
        tls_port: int | None = None,
    ) -> None:
        self.port = port
        self.data_dir = Path(data_dir) if data_dir else default_data_dir(port)
        self.version = version
        self.heap = heap
        # With users (name: password): a SASL_PLAINTEXT listener (mechanism PLAIN) on
        # ``sasl_port`` too, beside the plaintext one, to try clients with credentials.
        self.sasl_users = dict(sasl_users or {})
        self.sasl_port = sasl_port if sasl_port is not None or not self.sasl_users else free_port()
        # With ``tls`` (a PKCS12 keystore and its password): an SSL listener on ``tls_port``.
        self.tls = tls
        self.tls_port = tls_port if tls_port is not None or tls is None else free_port()
        self._cluster = _OneNode(self)
        self._node = self._cluster.nodes[0]

    # -- paths -----------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return self._node.bootstrap

    @property
    def tls_bootstrap(self) -> str:
        """The SSL listener's address (a broker made with ``tls``)."""
        if self.tls_port is None:
            raise BrokerError("this broker has no TLS listener (give it tls=)")
        return f"{HOST}:{self.tls_port}"

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL_PLAINTEXT listener's address (a broker made with ``sasl_users``)."""
        if self.sasl_port is None:
            raise BrokerError("this broker has no SASL listener (give it sasl_users)")
        return f"{HOST}:{self.sasl_port}"

    @property
    def log_file(self) -> Path:
        return self._node.log_file

    # -- status, up, down ------------------------------------------------------------------

    def status(self) -> BrokerStatus:
        return self._broker_status(self._node.status())

    def _broker_status(self, node: NodeStatus) -> BrokerStatus:
        # A paused broker is still running: its process is there, holding the port.
        return BrokerStatus(
            node.alive,
            self.bootstrap,
            self.data_dir,
            self.version,
            node.pid,
            node.started_at,
            node.stale_pid,
        )

    def up(self, *, fresh: bool = False, timeout: float = 120.0) -> UpResult:
        """Start the broker unless it already runs; return once it answers metadata."""
        result = self._cluster.up(fresh=fresh, timeout=timeout)
        status = self._broker_status(result.status.nodes[0])
        return UpResult(status, result.already_running, result.seconds)

    def down(self, timeout: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, wait up to ``timeout``, then SIGKILL. False if not running."""
        return self._cluster.down(timeout)

    def kill(self) -> bool:
        """SIGKILL the broker, as a crash would; returns once it is gone (``up`` starts it
        again on the same data). False if it was not running."""
        return self._node.kill()

    # -- logs ------------------------------------------------------------------------------

    def tail(self, lines: int = 50) -> str:
        return self._node.tail(lines)

    def healthy(self) -> bool:
        return self._cluster.healthy()

    # -- context manager: the pytest fixture's shape ---------------------------------------

    def __enter__(self) -> LocalBroker:
        self.up()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()
