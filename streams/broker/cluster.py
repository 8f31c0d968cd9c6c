"""A local Apache Kafka cluster: N KRaft nodes on 127.0.0.1, each broker and controller.

Layout of a data dir::

    cluster.json        cluster id and each node's controller port, fixed at formatting
    node-<id>/          one ``LocalNode`` each: server.properties, broker.pid, kraft/, logs/

The quorum is static (``controller.quorum.voters=1@127.0.0.1:<c1>,2@...``), every node is
formatted with the one cluster id, and the replication defaults are a production
cluster's: replication factor ``min(3, N)``, min ISR ``min(2, N)``, for topics and for the
offsets, transaction and share-state topics (``streams.broker.node.replication_defaults``).
Client ports are ``port, port+1, ...`` unless ``ports`` names them. ``overrides`` are
set on every node over the generated config and ``java_options`` given to its JVM;
``FAST_FAILOVER`` and ``QUICK_START_JVM`` are what the failure tests run with (a lost
node fenced in 6 s rather than Kafka's 9, group sessions of 3 s allowed; a node's JVM
without the JIT's second tier).

``up`` launches every node that is down at once (a node waits for a quorum of its peers),
continues the paused ones, and returns when the metadata lists them all. Per-node control
is for failure tests: ``kill`` (SIGKILL), ``stop`` (SIGTERM, a controlled shutdown),
``pause``/``resume`` (SIGSTOP/SIGCONT), ``start``/``restart`` (returns once the node is
back in the metadata), and ``wait_in_sync`` (every partition's ISR is all its replicas).
Every wait polls a real condition against a deadline and raises ``BrokerError`` when it
passes; none sleeps in place of a condition.

``LocalBroker`` (``streams.broker.local``) is the one-node case of this class.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType

from streams.broker.jars import KAFKA_VERSION, ensure_libs
from streams.broker.node import (
    LocalNode,
    NodeState,
    NodeStatus,
    free_ports,
    port_in_use,
)
from streams.broker.readiness import metadata_ok, wait_ready
from streams.broker.tools import find_java
from streams.cluster import probe_metadata
from streams.config import DEFAULT_PORT, state_root
from streams.errors import BrokerError
from streams.logs import get_logger

log = get_logger(__name__)

DEFAULT_NODES = 3
CLUSTER_META = "cluster.json"

FAST_FAILOVER: Mapping[str, str] = MappingProxyType(
    {
        # The controller fences a node it has not heard from in 6 s (Kafka: 9 s), moving
        # its leaderships and taking it out of every ISR; a killed node's restart
        # registers once its old session has expired (before, the controller refuses it
        # as a duplicate). Not less: with 3 s, on two cores at a load of 40, restarted
        # nodes were fenced 3 s after registering, still busy recovering, and took 20 s
        # more to be unfenced. Heartbeats every second (Kafka: 2 s).
        "broker.session.timeout.ms": "6000",
        "broker.heartbeat.interval.ms": "1000",
        # A follower that fetched nothing for 10 s leaves the ISR (Kafka: 30 s; 10 s before
        # Kafka 2.5), so a frozen one that is somehow not fenced stops holding acks=all
        # writes back within 10 s; not much less, or a follower merely slowed by a busy
        # machine would leave the ISR and come back, again and again.
        "replica.lag.time.max.ms": "10000",
        # A consumer may ask for a 3 s group session (Kafka's floor: 6 s). A classic
        # member whose group coordinator was on the lost node loses its session and
        # rejoins on the new coordinator, which waits out its old membership's session
        # before it assigns anything: two sessions of stall per lost coordinator. Only a
        # floor: each consumer still chooses its session.
        "group.min.session.timeout.ms": "3000",
    }
)
"""Server properties for a cluster whose nodes are failed on purpose: the failure is
noticed in seconds. Kafka's defaults (a production cluster's, and ``streams broker up``'s)
tolerate longer pauses; unclean leader election stays off."""

QUICK_START_JVM: tuple[str, ...] = (
    # Only the JIT's first tier (C1): a node started side by side with and without it on
    # two busy cores took 6.8 s of CPU to answer a metadata request instead of 11.0 s
    # (79 s of wall time instead of 108). A node of a test session, restarted again and
    # again and carrying a few thousand records, never runs long enough for the second
    # tier's faster code to pay its compiling back; the bench's nodes keep both tiers.
    "-XX:TieredStopAtLevel=1",
)
"""JVM options for nodes that live for a test session, not a benchmark."""


def default_cluster_dir(port: int) -> Path:
    return state_root() / f"cluster-{port}"


def stored_size(data_dir: Path) -> int | None:
    """How many nodes the cluster formatted in ``data_dir`` has (None: no cluster there)."""
    try:
        meta = json.loads((data_dir / CLUSTER_META).read_text())
        return len(meta["controller_ports"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _kafka_cluster_id() -> str:
    # Kafka's Uuid in base64url without padding; like Kafka, avoid a leading '-' which
    # command lines would take for an option.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class ClusterStatus:
    bootstrap: str
    data_dir: Path
    version: str
    nodes: tuple[NodeStatus, ...]

    @property
    def running(self) -> bool:
        """Every node runs (none down, none paused)."""
        return all(n.state is NodeState.RUNNING for n in self.nodes)

    @property
    def alive(self) -> bool:
        """Some node's process exists."""
        return any(n.alive for n in self.nodes)


@dataclass(frozen=True)
class ClusterUp:
    status: ClusterStatus
    started: tuple[int, ...]  # the nodes this call launched; none when all were up
    seconds: float  # from launch until the metadata listed every launched node
    resumed: tuple[int, ...] = ()  # the paused nodes it continued

    @property
    def already_running(self) -> bool:
        return not self.started and not self.resumed


class LocalCluster:
    """``nodes`` KRaft nodes (broker+controller) on 127.0.0.1, run from the Maven Central
    jars; a context manager (``up`` on entry, ``down`` on exit)."""

    def __init__(
        self,
        nodes: int = DEFAULT_NODES,
        port: int = DEFAULT_PORT,
        data_dir: Path | str | None = None,
        version: str = KAFKA_VERSION,
        heap: str = "512m",  # three JVMs share a small machine
        *,
        ports: Sequence[int] | None = None,
        overrides: Mapping[str, str] | None = None,
        java_options: Sequence[str] = (),
    ) -> None:
        if nodes < 1:
            raise BrokerError(f"a cluster needs at least one node, not {nodes}")
        ports = list(ports) if ports is not None else [port + i for i in range(nodes)]
        if len(ports) != nodes:
            raise BrokerError(f"{nodes} nodes need {nodes} ports, not {len(ports)}")
        self.size = nodes
        self.port = ports[0]
        self.data_dir = Path(data_dir) if data_dir else default_cluster_dir(self.port)
        self.version = version
        self.heap = heap
        self.overrides = dict(overrides or {})  # every node's, over the generated ones
        self.java_options = tuple(java_options)  # every node's JVM's, and its format's
        self.nodes: tuple[LocalNode, ...] = tuple(
            self._make_node(node_id, node_port) for node_id, node_port in enumerate(ports, 1)
        )

    # -- what a subclass may lay out differently (LocalBroker's single node) --------------

    _noun = "cluster"

    def _make_node(self, node_id: int, port: int) -> LocalNode:
        return LocalNode(
            node_id,
            self.data_dir / f"node-{node_id}",
            port,
            heap=self.heap,
            overrides=self.overrides,
            java_options=self.java_options,
        )

    @property
    def _meta_file(self) -> Path:
        return self.data_dir / CLUSTER_META

    def _name(self, node: LocalNode) -> str:
        return f"node {node.node_id} of the Streams cluster"

    # -- addresses -------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Every node's client address, comma-separated."""
        return ",".join(node.bootstrap for node in self.nodes)

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(node.node_id for node in self.nodes)

    def node(self, node_id: int) -> LocalNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise BrokerError(f"no node {node_id}: the cluster's nodes are 1 to {self.size}")

    def node_bootstrap(self, node_id: int) -> str:
        return self.node(node_id).bootstrap

    # -- status ----------------------------------------------------------------------------

    def status(self) -> ClusterStatus:
        return ClusterStatus(
            self.bootstrap,
            self.data_dir,
            self.version,
            tuple(node.status() for node in self.nodes),
        )

    def healthy(self) -> bool:
        return metadata_ok(self.bootstrap)

    def tail(self, node_id: int, lines: int = 50) -> str:
        return self.node(node_id).tail(lines)

    # -- up and down -----------------------------------------------------------------------

    def up(self, *, fresh: bool = False, timeout: float = 180.0) -> ClusterUp:
        """Resume every paused node and start every node that is down; return once the
        metadata lists them all.

        Idempotent: running nodes are left alone, and with all of them running nothing
        happens. ``fresh`` wipes the data dir first (refused while a node runs).
        """
        current = self.status()
        if fresh and current.alive:
            raise BrokerError(
                f"the {self._noun} at {self.bootstrap} is running; stop it before --fresh"
            )
        paused = tuple(n.node_id for n in current.nodes if n.state is NodeState.PAUSED)
        for node_id in paused:
            self.resume(node_id)
        self._wait_listed([self.node(node_id) for node_id in paused], timeout)
        down = [self.node(n.node_id) for n in current.nodes if not n.alive]
        if not down:
            return ClusterUp(self.status(), (), 0.0, paused)
        for status, node in zip(current.nodes, self.nodes, strict=True):
            if status.stale_pid is not None:
                log.warning("removed stale pid file", pid=status.stale_pid, path=str(node.pid_file))
                node.forget()
        for node in down:
            if port_in_use(node.port):
                raise BrokerError(
                    f"port {node.port} is already in use by another process (not "
                    f"{self._name(node)} of {self.data_dir}); stop it or choose another --port"
                )
        java = find_java()
        libs = ensure_libs(self.version)
        if fresh and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        controller_ports = self._ensure_formatted(java, libs, running=current.alive)
        result = self._launch(down, java, libs, controller_ports, timeout)
        return ClusterUp(result.status, result.started, result.seconds, paused)

    def down(self, timeout: float = 30.0) -> bool:
        """Stop every node: SIGTERM to all at once, wait up to ``timeout``, then SIGKILL.
        False if none was running."""
        pids = [(node, node.terminate()) for node in self.nodes]
        deadline = time.monotonic() + timeout
        for node, pid in pids:
            if pid is not None:
                node.reap(pid, max(0.0, deadline - time.monotonic()))
        return any(pid is not None for _, pid in pids)

    def _ensure_formatted(self, java: Path, libs: Path, *, running: bool) -> dict[int, int]:
        """The controller ports (node id → port); formats every node first when the data
        dir holds no complete cluster."""
        ports = self._read_meta()
        if ports is not None and all(node.formatted for node in self.nodes):
            if len(ports) != self.size:
                raise BrokerError(
                    f"{self.data_dir} holds a {len(ports)}-node cluster, not {self.size} "
                    f"nodes: give --nodes {len(ports)}, or start with --fresh"
                )
            return ports
        if running:
            raise BrokerError(
                f"{self.data_dir} is not completely formatted while some of its nodes run; "
                "stop them (streams broker down) first"
            )
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)  # half-formatted: start over
        self.data_dir.mkdir(parents=True)
        taken = {node.port for node in self.nodes}
        picked = [p for p in free_ports(self.size + len(taken)) if p not in taken][: self.size]
        ports = dict(zip(self.node_ids, picked, strict=True))
        cluster_id = _kafka_cluster_id()
        for node in self.nodes:
            node.write_config(ports)
        # Each format is a JVM of its own: run them side by side.
        procs = [
            (
                node,
                subprocess.Popen(
                    node.format_command(java, libs, cluster_id),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                ),
            )
            for node in self.nodes
        ]
        failed = []
        for node, proc in procs:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                failed.append(f"formatting {node.data_dir} failed:\n{output}")
        if failed:
            raise BrokerError("\n".join(failed))
        self._meta_file.write_text(
            json.dumps({"cluster_id": cluster_id, "controller_ports": ports})
        )
        return ports

    def _read_meta(self) -> dict[int, int] | None:
        try:
            meta = json.loads(self._meta_file.read_text())
        except (OSError, ValueError):
            return None
        if "controller_port" in meta:  # a single-node data dir from before clusters
            return {1: int(meta["controller_port"])}
        try:
            return {int(k): int(v) for k, v in meta["controller_ports"].items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def _launch(
        self,
        nodes: Sequence[LocalNode],
        java: Path,
        libs: Path,
        controller_ports: dict[int, int],
        timeout: float,
    ) -> ClusterUp:
        """Launch ``nodes`` together and wait until the metadata lists every one of them."""
        for node in nodes:
            if port_in_use(controller_ports[node.node_id]):
                raise BrokerError(
                    f"the controller port {controller_ports[node.node_id]} of "
                    f"{node.data_dir} is in use by another process; stop it or start with "
                    "--fresh"
                )
        started = time.monotonic()
        procs: list[tuple[LocalNode, subprocess.Popen[bytes]]] = []
        exited: list[LocalNode] = []

        def alive() -> bool:
            exited.extend(node for node, proc in procs if proc.poll() is not None)
            return not exited

        try:
            for node in nodes:
                procs.append((node, node.launch(java, libs, controller_ports)))
            self._wait_listed(nodes, timeout, alive)
        except BrokerError as exc:
            for node, proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                node.forget()
            culprit = exited[0] if exited else nodes[0]
            what = f"{self._name(culprit)} exited while starting" if exited else str(exc)
            raise BrokerError(
                f"{what}; last lines of {culprit.log_file}:\n{culprit.tail(20)}"
            ) from exc
        seconds = time.monotonic() - started
        ids = tuple(node.node_id for node in nodes)
        log.debug("nodes ready", bootstrap=self.bootstrap, nodes=ids, seconds=seconds)
        return ClusterUp(self.status(), ids, seconds)

    def _wait_listed(
        self,
        nodes: Sequence[LocalNode],
        timeout: float,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        """Wait until the metadata of ``nodes`` lists each of them: a launched node once it
        has registered, a continued one (fenced while it was paused) once it is back."""
        if nodes:
            wait_ready(
                ",".join(node.bootstrap for node in nodes),
                timeout=timeout,
                alive=alive,
                brokers=[node.node_id for node in nodes],
            )

    # -- one node at a time: failure tests ------------------------------------------------

    def kill(self, node_id: int) -> bool:
        """SIGKILL the node, as a crash would; returns once it is gone. False if it was
        not running."""
        return self.node(node_id).kill()

    def stop(self, node_id: int, timeout: float = 30.0) -> bool:
        """Stop the node cleanly (SIGTERM: it hands its leaderships over first)."""
        return self.node(node_id).stop(timeout)

    def pause(self, node_id: int) -> bool:
        """SIGSTOP the node: it keeps its ports and answers nothing, until ``resume``."""
        return self.node(node_id).pause()

    def resume(self, node_id: int) -> bool:
        return self.node(node_id).resume()

    def start(self, node_id: int, timeout: float = 120.0) -> bool:
        """Start the node when it is down, continue it when paused; return once the
        metadata lists it again. False if it was running already."""
        node = self.node(node_id)
        current = node.status()
        if current.state is NodeState.PAUSED:
            node.resume()
            self._wait_listed([node], timeout)
            return True
        if current.alive:
            return False
        if current.stale_pid is not None:
            node.forget()
        ports = self._read_meta()
        if ports is None or not node.formatted:
            raise BrokerError(
                f"{self.data_dir} holds no formatted cluster: start it whole first (up)"
            )
        if port_in_use(node.port):
            raise BrokerError(
                f"port {node.port} is already in use by another process (not "
                f"{self._name(node)} of {self.data_dir})"
            )
        self._launch([node], find_java(), ensure_libs(self.version), ports, timeout)
        return True

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        """Stop the node cleanly, start it again, and return once it is back in the
        metadata."""
        self.stop(node_id)
        self.start(node_id, timeout)

    def wait_in_sync(self, topics: Iterable[str] | None = None, timeout: float = 60.0) -> None:
        """Block until every partition of ``topics`` (default: every topic, internal ones
        too) has all its replicas in sync (ISR == replicas) and a leader.

        A restarted node takes a while to catch up; wait for this before failing the next
        one. Raises ``BrokerError`` naming the lagging partitions after ``timeout``.
        """
        wanted = None if topics is None else set(topics)
        deadline = time.monotonic() + timeout
        while True:
            lagging = _out_of_sync(self.bootstrap, wanted)
            if not lagging:
                return
            if time.monotonic() > deadline:
                more = f" and {len(lagging) - 5} more" if len(lagging) > 5 else ""
                raise BrokerError(
                    f"not in sync after {timeout:.0f} s: {'; '.join(lagging[:5])}{more}"
                )
            time.sleep(0.1)

    # -- context manager: the pytest fixture's shape ---------------------------------------

    def __enter__(self) -> LocalCluster:
        self.up()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.down()


def _out_of_sync(bootstrap: str, topics: set[str] | None) -> list[str]:
    """What keeps the cluster from being in sync: partitions whose ISR lacks a replica or
    that have no leader, topics asked for that do not exist, or no metadata at all."""
    try:
        # Quiet and new each time: nodes may be down on purpose.
        meta = probe_metadata(bootstrap, 5.0)
    except Exception as exc:  # KafkaException: no node answered in time
        return [f"no metadata ({exc})"]
    found = meta.topics
    lagging = [f"topic {name!r} does not exist" for name in sorted((topics or set()) - set(found))]
    for name, topic in sorted(found.items()):
        if topics is not None and name not in topics:
            continue
        if topic.error is not None:
            lagging.append(f"{name}: {topic.error}")
            continue
        for pid, part in sorted(topic.partitions.items()):
            if part.leader < 0 or set(part.isrs) != set(part.replicas):
                lagging.append(
                    f"{name}[{pid}] leader {part.leader}, isr {sorted(part.isrs)} "
                    f"of replicas {sorted(part.replicas)}"
                )
    return lagging
