"""The local broker: Apache Kafka 4.x in KRaft combined mode, one node, from the official jars.

Layout of a data dir::

    server.properties   generated on every start (ports may change between starts)
    meta.json           cluster id and controller port, fixed when the storage is formatted
    broker.pid          pid of the running broker, removed on a clean stop
    kraft/              log.dirs: topics and the metadata log
    logs/server.log     the broker's log (log4j2), logs/stdout.log its console

``LocalBroker`` is the API the CLI (`streams broker ...`) and the pytest fixtures share.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import cast

from streams.broker.jars import KAFKA_VERSION, ensure_libs, resource
from streams.broker.readiness import metadata_ok, wait_ready
from streams.broker.tools import find_java
from streams.config import state_root
from streams.errors import BrokerError
from streams.logs import get_logger

log = get_logger(__name__)

DEFAULT_PORT = 9092
HOST = "127.0.0.1"


def default_data_dir(port: int) -> Path:
    return state_root() / f"broker-{port}"


def free_port() -> int:
    """A port nobody listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


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


def _kafka_cluster_id() -> str:
    # Kafka's Uuid in base64url without padding; like Kafka, avoid a leading '-' which
    # command lines would take for an option.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


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

    # -- paths -----------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

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
        return self.data_dir / "logs" / "server.log"

    @property
    def _pid_file(self) -> Path:
        return self.data_dir / "broker.pid"

    @property
    def _meta_file(self) -> Path:
        return self.data_dir / "meta.json"

    # -- status ----------------------------------------------------------------------------

    def status(self) -> BrokerStatus:
        pid, started = self._read_pid()
        if pid is not None and self._is_our_broker(pid):
            return BrokerStatus(True, self.bootstrap, self.data_dir, self.version, pid, started)
        return BrokerStatus(False, self.bootstrap, self.data_dir, self.version, stale_pid=pid)

    def _read_pid(self) -> tuple[int | None, float | None]:
        try:
            raw = json.loads(self._pid_file.read_text())
            return int(raw["pid"]), float(raw["started_at"])
        except (OSError, ValueError, KeyError, TypeError):
            return None, None

    def _is_our_broker(self, pid: int) -> bool:
        """The pid is alive and is a kafka.Kafka started with this data dir's config."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        config = str(self.data_dir / "server.properties").encode()
        return b"kafka.Kafka" in cmdline and config in cmdline

    # -- up --------------------------------------------------------------------------------

    def up(self, *, fresh: bool = False, timeout: float = 120.0) -> UpResult:
        """Start the broker unless it already runs; return once it answers metadata."""
        current = self.status()
        if current.running:
            if fresh:
                raise BrokerError(
                    f"the broker at {self.bootstrap} is running; stop it before --fresh"
                )
            return UpResult(current, already_running=True, seconds=0.0)
        if current.stale_pid is not None:
            log.warning("removed stale pid file", pid=current.stale_pid, path=str(self._pid_file))
            self._pid_file.unlink(missing_ok=True)
        if port_in_use(self.port):
            raise BrokerError(
                f"port {self.port} is already in use by another process (not the Streams "
                f"broker of {self.data_dir}); stop it or choose another --port"
            )
        java = find_java()
        libs = ensure_libs(self.version)
        if fresh and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        meta = self._ensure_formatted(java, libs)
        if port_in_use(int(meta["controller_port"])):
            raise BrokerError(
                f"the controller port {meta['controller_port']} of {self.data_dir} is in use "
                "by another process; stop it or start with --fresh"
            )
        return self._launch(java, libs)

    def _write_config(self, controller_port: int) -> Path:
        cfg = self.data_dir / "server.properties"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{controller_port}",
            **self._listener_props(controller_port),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "kraft"),
            "num.partitions": "1",
            # Topics are created on purpose (by the runtime, tools or tests), never by a typo.
            "auto.create.topics.enable": "false",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # A single node: no reason to wait for more members before the first rebalance.
            "group.initial.rebalance.delay.ms": "0",
            "transaction.partition.verification.enable": "true",
            "log.retention.hours": "168",
            "delete.topic.enable": "true",
            # Tests and the bench create and delete hundreds of topics: their files go at
            # once, not in a burst a minute later in the middle of whatever runs then
            # (measured: 100 partitions deleted during a latency run took its p99 from
            # 20 ms to 240 ms).
            "log.segment.delete.delay.ms": "1000",
        }
        cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return cfg

    def _listener_props(self, controller_port: int) -> dict[str, str]:
        """The plaintext listener, and the SASL and TLS ones when asked for."""
        served = {"PLAINTEXT": self.port}
        props: dict[str, str] = {}
        if self.sasl_users:
            served["SASL_PLAINTEXT"] = cast(int, self.sasl_port)
            users = " ".join(f'user_{n}="{p}"' for n, p in self.sasl_users.items())
            props["sasl.enabled.mechanisms"] = "PLAIN"
            props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
        if self.tls is not None:
            served["SSL"] = cast(int, self.tls_port)
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

    def _ensure_formatted(self, java: Path, libs: Path) -> dict[str, int | str]:
        if self._meta_file.exists() and (self.data_dir / "kraft" / "meta.properties").exists():
            meta: dict[str, int | str] = json.loads(self._meta_file.read_text())
            return meta
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)  # half-formatted: start over
        (self.data_dir / "logs").mkdir(parents=True)
        meta = {"cluster_id": _kafka_cluster_id(), "controller_port": free_port()}
        cfg = self._write_config(int(meta["controller_port"]))
        cmd = [
            str(java),
            "-cp",
            f"{libs}/*",
            *self._log_opts(),
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            str(meta["cluster_id"]),
            "--config",
            str(cfg),
            "--ignore-formatted",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BrokerError(f"formatting {self.data_dir} failed:\n{proc.stdout}{proc.stderr}")
        self._meta_file.write_text(json.dumps(meta))
        return meta

    def _log_opts(self) -> list[str]:
        log4j = self.data_dir / "log4j2.xml"
        if not log4j.exists():
            log4j.write_text(resource("log4j2.xml"))
        return [
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
        ]

    def _launch(self, java: Path, libs: Path) -> UpResult:
        meta = json.loads(self._meta_file.read_text())
        cfg = self._write_config(int(meta["controller_port"]))
        cmd = [
            str(java),
            f"-Xmx{self.heap}",
            "-Xms256m",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            *self._log_opts(),
            "-cp",
            f"{libs}/*",
            "kafka.Kafka",
            str(cfg),
        ]
        stdout = open(self.data_dir / "logs" / "stdout.log", "ab")  # noqa: SIM115 - child owns it
        started = time.monotonic()
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
        self._pid_file.write_text(json.dumps({"pid": proc.pid, "started_at": time.time()}))
        try:
            wait_ready(self.bootstrap, timeout=120.0, alive=lambda: proc.poll() is None)
        except BrokerError as exc:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            self._pid_file.unlink(missing_ok=True)
            raise BrokerError(f"{exc}; last lines of {self.log_file}:\n{self.tail(20)}") from exc
        seconds = time.monotonic() - started
        log.debug("broker ready", bootstrap=self.bootstrap, pid=proc.pid, seconds=seconds)
        return UpResult(self.status(), already_running=False, seconds=seconds)

    # -- down ------------------------------------------------------------------------------

    def down(self, timeout: float = 30.0) -> bool:
        """Stop the broker: SIGTERM, wait up to ``timeout``, then SIGKILL. False if not running."""
        current = self.status()
        if not current.running or current.pid is None:
            self._pid_file.unlink(missing_ok=True)
            return False
        pid = current.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not _wait_exit(pid, timeout):
            log.warning("broker did not stop in time; killing it", pid=pid, timeout=timeout)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _wait_exit(pid, 10.0)
        self._pid_file.unlink(missing_ok=True)
        return True

    # -- logs ------------------------------------------------------------------------------

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

    def healthy(self) -> bool:
        return metadata_ok(self.bootstrap)

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


def _wait_exit(pid: int, timeout: float) -> bool:
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


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie has exited; only its parent has not reaped it yet.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
