"""Apache Kafka in Docker for tests: KRaft, one node, a random host port.

testcontainers-python's own ``KafkaContainer`` only understands Confluent's ``cp-kafka``
image. ``KafkaContainer`` here runs any image laid out like the official ``apache/kafka``
one: the jars under ``/opt/kafka/libs`` and ``java`` (and ``sh``) on PATH. That covers
``apache/kafka:4.x`` from Docker Hub and ``streams-kafka:<version>``, which ``make image``
builds locally from the same jars as the local broker (no registry needed).

The advertised-listener problem: a client on the host must be told ``host:<mapped port>``,
but Docker picks the mapped port only when the container starts. So the container starts
a shell that waits for ``/tmp/streams-go``; once Docker has published the port we copy in
a start script (server.properties, log config, storage format, ``exec java kafka.Kafka``)
that advertises the real address, then the marker. Choosing a free host port up front and
binding it would race with other processes for that port; this way there is no race, and
the image's own entrypoint (which differs between images) plays no part.

Needs the ``testing`` extra (testcontainers, docker): without it, importing this module
raises ImportError saying how to install it. Whether Docker answers, and which image is
the default, is ``streams.testing.docker_daemon`` (no extra needed).
"""

from __future__ import annotations

import contextlib
import io
import shlex
import tarfile
import time
import uuid
from collections.abc import Mapping
from types import TracebackType

from streams.testing.docker_daemon import (
    LABEL,
    LOCAL_IMAGE,
    TESTING_EXTRA,
    ContainerError,
    default_image,
    image_present,
)

try:
    import docker  # type: ignore[import-untyped]
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
except ImportError as exc:  # the testing extra is not installed: say how to get it
    raise ImportError(
        f"KafkaContainer needs the package {exc.name}: {TESTING_EXTRA}", name=exc.name
    ) from exc

from streams.broker.readiness import wait_ready
from streams.logs import get_logger

log = get_logger(__name__)

EXTERNAL_PORT = 9092  # clients on the Docker host, through the mapped port
INTERNAL_PORT = 19092  # other containers on the same network, by alias
CONTROLLER_PORT = 9093  # the KRaft controller, inside the container only

_MARKER = "/tmp/streams-go"
_SCRIPT = "/tmp/streams-start.sh"
_WAIT = f"while [ ! -f {_MARKER} ]; do sleep 0.1; done; exec sh {_SCRIPT}"

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders><Console name="out" target="SYSTEM_OUT">
    <PatternLayout pattern="[%d] %p %m (%c)%n"/></Console></Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="out"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/>
  </Loggers>
</Configuration>
"""


class KafkaContainer(DockerContainer):
    """One Apache Kafka node (broker + KRaft controller) in a Docker container.

    ``start()`` blocks until a metadata request through the mapped port succeeds (or
    raises ``ContainerError`` with the container's last log lines after
    ``startup_timeout`` seconds, removing the container). ``stop()`` removes the container
    and its volumes. Use it as a context manager::

        with KafkaContainer() as kafka:
            produce_to(kafka.bootstrap_servers)

    ``network``/``alias``: join a Docker network so other containers reach this broker
    at ``internal_bootstrap`` (``<alias>:19092``). ``broker_config`` adds or overrides
    server.properties entries. The default image is ``default_image()``.
    """

    def __init__(
        self,
        image: str | None = None,
        *,
        network: Network | None = None,
        alias: str | None = None,
        broker_config: Mapping[str, str] | None = None,
        heap: str = "512m",
        startup_timeout: float = 120.0,
    ) -> None:
        super().__init__(image or default_image())
        self.alias = alias or f"kafka-{uuid.uuid4().hex[:8]}"
        self.broker_config = dict(broker_config or {})
        self.heap = heap
        self.startup_timeout = startup_timeout
        self._bootstrap: str | None = None
        self.with_exposed_ports(EXTERNAL_PORT)
        if network is not None:
            self.with_network(network)
            self.with_network_aliases(self.alias)

    # -- addresses -------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for clients on the Docker host. Only valid after ``start()``."""
        if self._bootstrap is None:
            raise ContainerError("the Kafka container is not started")
        return self._bootstrap

    def get_bootstrap_server(self) -> str:
        """The same as ``bootstrap_servers`` (testcontainers' name for it)."""
        return self.bootstrap_servers

    @property
    def internal_bootstrap(self) -> str:
        """``alias:19092`` for containers on the same Docker network."""
        return f"{self.alias}:{INTERNAL_PORT}"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> KafkaContainer:
        started = time.monotonic()
        _reaper_or_none()
        # Whatever the image's entrypoint is, run our waiting shell instead. Set here, not
        # in __init__, so a caller's with_kwargs()/with_command() cannot drop it.
        labels = {**self._kwargs.get("labels", {}), LABEL: "kafka"}
        self._kwargs = {**self._kwargs, "entrypoint": ["sh", "-c"], "labels": labels}
        self.with_command([_WAIT])
        try:
            super().start()
        except Exception as exc:
            self._remove_quietly()
            raise ContainerError(
                f"cannot start a container from {self.image}: {exc}{_hint(exc, self.image)}"
            ) from exc
        try:
            host = self.get_container_host_ip()
            # "localhost" may resolve to ::1 first, where Docker may not publish the port.
            host = "127.0.0.1" if host == "localhost" else host
            bootstrap = f"{host}:{self.get_exposed_port(EXTERNAL_PORT)}"
            self._copy_start_script(self.server_properties(bootstrap))
            remaining = self.startup_timeout - (time.monotonic() - started)
            wait_ready(bootstrap, timeout=max(remaining, 1.0), alive=self._running)
        except Exception as exc:
            logs = self.logs_tail(30)
            self._remove_quietly()
            raise ContainerError(
                f"Kafka in a container from {self.image} did not become ready: {exc}\n"
                f"last lines of its log:\n{logs}"
            ) from exc
        self._bootstrap = bootstrap
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Remove the container (killing Kafka if it still runs) and its volumes.

        Blocks until Docker has removed it. Calling it again, or after the container is
        gone, does nothing.
        """
        self._bootstrap = None
        if self._container is None:
            return
        try:
            self._container.remove(force=force, v=delete_volume)
        except docker.errors.NotFound:
            pass  # removed already (by the user, or a daemon restart)
        finally:
            self._container = None
            self.get_docker_client().client.close()

    def __enter__(self) -> KafkaContainer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- inside the container ----------------------------------------------------------------

    def server_properties(self, advertised: str) -> dict[str, str]:
        """The broker's configuration, advertising ``advertised`` to host clients."""
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@localhost:{CONTROLLER_PORT}",
            "listeners": (
                f"PLAINTEXT://0.0.0.0:{EXTERNAL_PORT},INTERNAL://0.0.0.0:{INTERNAL_PORT},"
                f"CONTROLLER://localhost:{CONTROLLER_PORT}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://{advertised},INTERNAL://{self._internal_host()}:{INTERNAL_PORT}"
            ),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": "/tmp/kraft-logs",
            "num.partitions": "1",
            # Like the local broker: topics are created on purpose, never by a typo.
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        props.update(self.broker_config)
        return props

    def _internal_host(self) -> str:
        # With a network the alias resolves for every member; without one, only the
        # container itself resolves its hostname, which is all the broker needs.
        if self._network is not None:
            return self.alias
        return str(self.get_wrapped_container().attrs["Config"]["Hostname"])

    def _copy_start_script(self, props: Mapping[str, str]) -> None:
        cluster_id = uuid.uuid4().hex[:22]  # any 22 chars of base64url will do for Kafka
        properties = "".join(f"{k}={v}\n" for k, v in props.items())
        java = (
            f"java -Xmx{self.heap} -Xms128m -XX:+UseG1GC -Djava.awt.headless=true "
            "-Dlog4j2.configurationFile=/tmp/streams-log4j2.xml -cp '/opt/kafka/libs/*'"
        )
        script = (
            "set -e\n"
            f"{java} kafka.tools.StorageTool format --cluster-id {shlex.quote(cluster_id)} "
            "--config /tmp/streams-server.properties --ignore-formatted >/dev/null\n"
            f"exec {java} kafka.Kafka /tmp/streams-server.properties\n"
        )
        # The marker goes last in the archive: the waiting shell sees it only once the
        # other files are complete.
        files = [
            ("streams-server.properties", properties),
            ("streams-log4j2.xml", _LOG4J2),
            ("streams-start.sh", script),
            ("streams-go", ""),
        ]
        if not self.get_wrapped_container().put_archive("/tmp", _tar(files)):
            raise ContainerError("cannot copy the start script into the container")

    def _running(self) -> bool:
        container = self.get_wrapped_container()
        container.reload()
        return bool(container.status == "running")

    def logs_tail(self, lines: int = 50) -> str:
        """The last ``lines`` lines of the container's output (empty if there is none)."""
        try:
            raw: bytes = self.get_wrapped_container().logs(tail=lines)
        except Exception:  # the container may be gone already
            return ""
        return raw.decode(errors="replace")

    def _remove_quietly(self) -> None:
        # Nothing to remove, or the daemon is gone: either way nothing is left to do.
        with contextlib.suppress(Exception):
            self.stop()


def _reaper_or_none() -> None:
    """Run without testcontainers' Ryuk reaper where its image cannot be had.

    testcontainers starts Ryuk (from Docker Hub) before the first container; where no
    registry is reachable that fails every start. Our containers do not need it: the
    fixtures and ``stop()`` remove them. So when the image is neither here nor
    pullable, Ryuk is switched off for this process, with a warning, instead of
    failing. ``TESTCONTAINERS_RYUK_DISABLED=true`` skips the check.
    """
    if testcontainers_config.ryuk_disabled:
        return
    image = testcontainers_config.ryuk_image
    if image_present(image):
        return
    try:
        client = docker.from_env(timeout=60)
        try:
            client.images.pull(image)
        finally:
            client.close()
    except Exception as exc:  # no registry, no DNS, rate limit: all mean "no Ryuk"
        testcontainers_config.ryuk_disabled = True
        log.warning(
            "running without testcontainers' Ryuk reaper: its image cannot be pulled; "
            "Streams' containers are removed by their fixtures and stop()",
            image=image,
            error=str(exc).splitlines()[0][:200],
        )


def _hint(exc: Exception, image: str) -> str:
    """What to do about the usual reasons a container does not start."""
    text = str(exc)
    if "testcontainers/ryuk" in text or "testcontainers%2Fryuk" in text:
        return (
            "\n(testcontainers' reaper image cannot be pulled: set "
            "TESTCONTAINERS_RYUK_DISABLED=true where no registry is reachable)"
        )
    if not image_present(image):
        return (
            f"\n({image} is not here and cannot be pulled: build {LOCAL_IMAGE} with "
            "`make image`, or choose an image with STREAMS_KAFKA_IMAGE / --kafka-image)"
        )
    return ""


def _tar(files: list[tuple[str, str]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
