"""One local Apache Kafka node: a KRaft broker+controller process, its config and storage.

A node owns one folder::

    server.properties   generated on every start (client ports may change between starts)
    broker.pid          pid and start time of the running process, removed on a clean stop
    kraft/              log.dirs: topics and the metadata log
    log4j2.xml          the logging config the process reads
    logs/server.log     the node's log (log4j2), logs/stdout.log its console

``LocalNode`` knows nothing of its peers beyond what it is told: the quorum (node id →
controller port) and the cluster size, from which the replication defaults follow
(``replication_defaults``). Formatting, launching and waiting for several nodes at once
are ``streams.broker.cluster.LocalCluster``'s job; a node only starts its own process
(``launch``, which does not wait) and signals it. Nothing here sleeps except
``wait_exit``, which polls the process table with a deadline.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from streams.broker.jars import resource
from streams.errors import BrokerError
from streams.logs import get_logger

log = get_logger(__name__)

HOST = "127.0.0.1"
KILL_WAIT = 10.0  # seconds a SIGKILLed process is given to be gone


def free_port() -> int:
    """A port nobody listens on right now (the kernel's pick)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nobody listens on right now (held open together while the
    kernel picks, so no two are the same)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind((HOST, 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR so a socket in TIME_WAIT does not count; a listener still does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def replication_defaults(size: int) -> dict[str, str]:
    """Replication settings for a cluster of ``size`` nodes: three copies, two in sync for
    an acknowledged write, as production clusters run; fewer when there are fewer nodes."""
    factor = str(min(3, size))
    min_isr = str(min(2, size))
    return {
        "default.replication.factor": factor,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": factor,
        "transaction.state.log.replication.factor": factor,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": factor,
        "share.coordinator.state.topic.min.isr": min_isr,
    }


def quorum_voters(controller_ports: Mapping[int, int]) -> str:
    """``controller.quorum.voters``: ``1@127.0.0.1:<port>,2@...``, by node id."""
    return ",".join(f"{node}@{HOST}:{port}" for node, port in sorted(controller_ports.items()))


class NodeState(enum.Enum):
    RUNNING = "running"
    PAUSED = "paused"  # SIGSTOP: alive, holding its ports, answering nothing
    DOWN = "down"


@dataclass(frozen=True)
class NodeStatus:
    node_id: int
    state: NodeState
    bootstrap: str
    data_dir: Path
    pid: int | None = None
    started_at: float | None = None
    stale_pid: int | None = None  # a pid file that named a process that is gone

    @property
    def alive(self) -> bool:
        """The process exists (running or paused)."""
        return self.state is not NodeState.DOWN

    @property
    def uptime(self) -> float | None:
        return None if self.started_at is None else time.time() - self.started_at


class LocalNode:
    """One KRaft node (``process.roles=broker,controller``) on 127.0.0.1."""

    def __init__(
        self,
        node_id: int,
        data_dir: Path,
        port: int,
        *,
        heap: str,
        sasl_users: Mapping[str, str] | None = None,
        sasl_port: int | None = None,
        tls: tuple[Path, str] | None = None,
        tls_port: int | None = None,
        overrides: Mapping[str, str] | None = None,
        java_options: Sequence[str] = (),
    ) -> None:
        self.node_id = node_id
        self.data_dir = data_dir
        self.port = port
        self.heap = heap
        # With users (name: password): a SASL_PLAINTEXT listener (mechanism PLAIN) on
        # ``sasl_port`` too, beside the plaintext one, to try clients with credentials.
        self.sasl_users = dict(sasl_users or {})
        self.sasl_port = sasl_port
        # With ``tls`` (a PKCS12 keystore and its password): an SSL listener on ``tls_port``.
        self.tls = tls
        self.tls_port = tls_port
        # Server properties set last, over the generated ones (``properties``).
        self.overrides = dict(overrides or {})
        # More JVM options for the node and its format, after the generated ones.
        self.java_options = tuple(java_options)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "logs" / "server.log"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "broker.pid"

    @property
    def formatted(self) -> bool:
        return (self.data_dir / "kraft" / "meta.properties").exists()

    # -- config ----------------------------------------------------------------------------

    def properties(self, controller_ports: Mapping[int, int]) -> dict[str, str]:
        """This node's server.properties in a cluster whose quorum is ``controller_ports``
        (node id → controller port; its size is the cluster's), ``overrides`` last."""
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": quorum_voters(controller_ports),
            **self._listener_props(controller_ports[self.node_id]),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "kraft"),
            "num.partitions": "1",
            # Topics are created on purpose (by the runtime, tools or tests), never by a typo.
            "auto.create.topics.enable": "false",
            **replication_defaults(len(controller_ports)),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.num.partitions": "10",
            # Local nodes start together: no reason to wait for more members before the
            # first rebalance.
            "group.initial.rebalance.delay.ms": "0",
            # What a local broker need not wait out: a KIP-848 member's session as long as
            # the classic one Streams asks for (10 s; Kafka's default and minimum: 45 s),
            # and a transaction past its timeout aborted within a second (Kafka looks every
            # 10 s).
            "group.consumer.session.timeout.ms": "10000",
            "group.consumer.min.session.timeout.ms": "6000",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
            "transaction.partition.verification.enable": "true",
            "log.retention.hours": "168",
            "delete.topic.enable": "true",
            # Tests and the bench create and delete hundreds of topics: their files go at
            # once, not in a burst a minute later in the middle of whatever runs then
            # (measured: 100 partitions deleted during a latency run took its p99 from
            # 20 ms to 240 ms).
            "log.segment.delete.delay.ms": "1000",
            **self.overrides,
        }

    def write_config(self, controller_ports: Mapping[int, int]) -> Path:
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        props = self.properties(controller_ports)
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return self.config_file

    def _listener_props(self, controller_port: int) -> dict[str, str]:
        """The plaintext listener, and the SASL and TLS ones when asked for."""
        served = {"PLAINTEXT": self.port}
        props: dict[str, str] = {}
        if self.sasl_users:
            if self.sasl_port is None:
                raise BrokerError("a SASL listener needs a port (sasl_port)")
            served["SASL_PLAINTEXT"] = self.sasl_port
            users = " ".join(f'user_{n}="{p}"' for n, p in self.sasl_users.items())
            props["sasl.enabled.mechanisms"] = "PLAIN"
            props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
        if self.tls is not None:
            if self.tls_port is None:
                raise BrokerError("a TLS listener needs a port (tls_port)")
            served["SSL"] = self.tls_port
            keystore, password = self.tls
            props["listener.name.ssl.ssl.keystore.location"] = str(keystore)
            props["listener.name.ssl.ssl.keystore.type"] = "PKCS12"
            props["listener.name.ssl.ssl.keystore.password"] = password
            props["listener.name.ssl.ssl.key.password"] = password
        advertised = ",".join(f"{name}://{HOST}:{port}" for name, port in served.items())
        return {
            "listeners": f"{advertised},CONTROLLER://{HOST}:{controller_port}",
            "advertised.listeners": advertised,
            "listener.security.protocol.map": ",".join(
                [*(f"{name}:{name}" for name in served), "CONTROLLER:PLAINTEXT"]
            ),
            **props,
        }

    # -- storage and process ---------------------------------------------------------------

    def format_command(self, java: Path, libs: Path, cluster_id: str) -> list[str]:
        """The StorageTool command that formats this node's storage (config written first)."""
        return [
            str(java),
            "-cp",
            f"{libs}/*",
            *self._log_opts(),
            *self.java_options,
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            cluster_id,
            "--config",
            str(self.config_file),
            "--ignore-formatted",
        ]

    def _log_opts(self) -> list[str]:
        log4j = self.data_dir / "log4j2.xml"
        if not log4j.exists():
            log4j.write_text(resource("log4j2.xml"))
        return [
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
        ]

    def launch(
        self, java: Path, libs: Path, controller_ports: Mapping[int, int]
    ) -> subprocess.Popen[bytes]:
        """Start the process (config rewritten first) and record its pid; does not wait."""
        cfg = self.write_config(controller_ports)
        cmd = [
            str(java),
            f"-Xmx{self.heap}",
            # The whole heap from the start, as Kafka's own start script has it: from 256 MB
            # G1 kept its young space small and paused 10-20 ms every 1.7 s under the
            # bench's 5k records/s, each pause a burst of late records (p99 28-32 ms);
            # with the heap whole, every 5-7 s (p99 21-24 ms).
            f"-Xms{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            *self._log_opts(),
            *self.java_options,
            "-cp",
            f"{libs}/*",
            "kafka.Kafka",
            str(cfg),
        ]
        stdout = open(self.data_dir / "logs" / "stdout.log", "ab")  # noqa: SIM115 - child owns it
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # survive the shell that ran `streams broker up`
                cwd=self.data_dir,
            )
        finally:
            stdout.close()
        self.pid_file.write_text(json.dumps({"pid": proc.pid, "started_at": time.time()}))
        return proc

    def status(self) -> NodeStatus:
        pid, started = self._read_pid()
        if pid is None or not self._is_ours(pid):
            return NodeStatus(
                self.node_id, NodeState.DOWN, self.bootstrap, self.data_dir, stale_pid=pid
            )
        state = NodeState.PAUSED if _stopped(pid) else NodeState.RUNNING
        return NodeStatus(self.node_id, state, self.bootstrap, self.data_dir, pid, started)

    def _read_pid(self) -> tuple[int | None, float | None]:
        try:
            raw = json.loads(self.pid_file.read_text())
            return int(raw["pid"]), float(raw["started_at"])
        except (OSError, ValueError, KeyError, TypeError):
            return None, None

    def _is_ours(self, pid: int) -> bool:
        """The pid is alive and is a kafka.Kafka started with this node's config (a pid
        file can outlive its process, and the pid be reused by another program)."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"kafka.Kafka" in cmdline and str(self.config_file).encode() in cmdline

    def forget(self) -> None:
        """Drop the pid file (the process is gone)."""
        self.pid_file.unlink(missing_ok=True)

    def send(self, sig: signal.Signals) -> int | None:
        """Send ``sig`` to the process; its pid, or None when it is not running."""
        current = self.status()
        if current.pid is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(current.pid, sig)
        return current.pid

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM (a controlled shutdown), wait up to ``timeout``, then SIGKILL. False if
        it was not running."""
        pid = self.terminate()
        if pid is None:
            return False
        self.reap(pid, timeout)
        return True

    def terminate(self) -> int | None:
        """Ask the process to stop (SIGTERM) without waiting; its pid, or None when it was
        not running (then its stale pid file is dropped). ``reap`` waits for it."""
        pid = self.send(signal.SIGTERM)
        if pid is None:
            self.forget()
            return None
        # A paused process would hold the SIGTERM until it is continued.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        return pid

    def reap(self, pid: int, timeout: float) -> None:
        """Wait up to ``timeout`` for ``pid`` (after ``terminate``) to exit, SIGKILL it
        when it has not, and drop the pid file. Returns once every thread of the process
        is gone (its ports free); raises ``BrokerError`` when even SIGKILL did not end it
        within ``KILL_WAIT`` seconds."""
        if not wait_exit(pid, timeout):
            log.warning("node did not stop in time; killing it", node=self.node_id, pid=pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if not wait_exit(pid, KILL_WAIT):
                raise BrokerError(
                    f"node {self.node_id} (pid {pid}) still runs {timeout + KILL_WAIT:.0f} s "
                    "after SIGTERM and SIGKILL; it may be stuck in the kernel (see "
                    f"`ps -o stat,wchan -p {pid}`)"
                )
        self.forget()

    def kill(self) -> bool:
        """SIGKILL, as a crash would; returns once the process is gone. False if it was not
        running. The pid file stays, as after a crash."""
        pid = self.send(signal.SIGKILL)
        if pid is None:
            return False
        wait_exit(pid, KILL_WAIT)
        return True

    def pause(self) -> bool:
        """SIGSTOP: the process stays, holding its ports and answering nothing, as a node
        in a long GC pause or on a frozen VM. Returns once the kernel shows it stopped;
        False if it was not running."""
        return self._stop_or_continue(signal.SIGSTOP, NodeState.PAUSED)

    def resume(self) -> bool:
        """SIGCONT after ``pause``; returns once it runs again. False if it was not alive."""
        return self._stop_or_continue(signal.SIGCONT, NodeState.RUNNING)

    def _stop_or_continue(self, sig: signal.Signals, state: NodeState) -> bool:
        if self.send(sig) is None:
            return False
        deadline = time.monotonic() + 10.0
        while (now := self.status().state) is not state and now is not NodeState.DOWN:
            if time.monotonic() > deadline:
                raise BrokerError(f"node {self.node_id} is still {now.value} after {sig.name}")
            time.sleep(0.01)
        return True

    def tail(self, lines: int = 50) -> str:
        try:
            with open(self.log_file, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 256 * 1024))
                text = fh.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def serving(port: int) -> tuple[Path, int] | None:
    """The folder and node id of the running local node whose client port is ``port``,
    wherever its data dir is (None: no kafka.Kafka process of ours serves it).

    Found from the processes themselves: each was started with its folder's
    server.properties, which names its listeners. So a node started with ``--data-dir``
    is found by its port alone."""
    wanted = f"PLAINTEXT://{HOST}:{port}"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = [arg for arg in (proc / "cmdline").read_bytes().split(b"\0") if arg]
        except OSError:
            continue
        # ``launch``'s command: ... kafka.Kafka <folder>/server.properties
        if len(args) < 2 or args[-2] != b"kafka.Kafka":
            continue
        config = Path(os.fsdecode(args[-1]))
        props = _read_properties(config)
        if wanted in props.get("listeners", "").split(","):
            try:
                return config.parent, int(props.get("node.id", "1"))
            except ValueError:
                continue
    return None


def _read_properties(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    return dict(
        (key.strip(), value.strip())
        for key, sep, value in (line.partition("=") for line in lines)
        if sep and not key.lstrip().startswith("#")
    )


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait for ``pid`` to exit (reaping it if it is our child). True if it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            pass  # not our child: fall back to probing
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _alive(pid: int) -> bool:
    """Some thread of the process still runs. A zombie main thread is not enough: the JVM's
    main thread exits first and its other threads (closing logs, freeing the ports) live
    on for a second or two; only when every thread is gone has the process exited (a
    zombie then waits only for its parent to reap it)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # that thread has just gone
        if stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
            return True
    return False


def _stopped(pid: int) -> bool:
    return _proc_state(pid) in ("T", "t")
