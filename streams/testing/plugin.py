"""The pytest plugin (entry point ``pytest11``): a real broker, unique topics, containers.

Broker mode, first match wins:

1. ``--kafka {external,container,local}`` on the command line;
2. ``STREAMS_KAFKA`` in the environment (same values);
3. ``external`` when ``KAFKA_BOOTSTRAP_SERVERS`` is set, else ``local``.

``external`` uses ``KAFKA_BOOTSTRAP_SERVERS`` (nothing is started); ``local`` starts the
local broker from the official jars on a free port, once per session; ``container``
starts one ``KafkaContainer`` per session (image: ``--kafka-image`` /
``STREAMS_KAFKA_IMAGE``, else ``streams.testing.docker_daemon.default_image()``).

Docker: a test that needs it skips, saying why, when no daemon answers or the ``testing``
extra (testcontainers, docker) is not installed; when ``CI`` is true or
``STREAMS_REQUIRE_DOCKER=1`` it fails instead, so CI never passes by skipping. This module
loads in every pytest session where Streams is installed, so it imports the extra only
inside the container fixtures, after that check.

``kafka_cluster`` (session) is a local three-node cluster (``LocalCluster``: KRaft,
replication factor 3, min ISR 2, a lost node noticed in seconds: ``FAST_FAILOVER``) on
free ports in a temporary folder, stopped at the end. It is always its own, whatever the
broker mode: its tests kill, stop and pause nodes (``kill(node_id)``, ``pause``,
``start``, ``wait_in_sync``...). A test that breaks a node should leave it whole again
(``up()``, which also continues paused nodes, then ``wait_in_sync()``) for the next one;
run such tests in one process, not on pytest-xdist workers that would each start three
JVMs.

Tests that use the broker are marked ``integration``, tests that use Docker ``container``,
tests that use ``kafka_cluster`` ``cluster``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from confluent_kafka.admin import AdminClient

from streams.broker import (
    FAST_FAILOVER,
    QUICK_START_JVM,
    LocalBroker,
    LocalCluster,
    free_port,
    free_ports,
)
from streams.cluster import admin_client, delete_app_topics
from streams.config import BOOTSTRAP_ENV, external_bootstrap
from streams.errors import StreamsError
from streams.testing.docker_daemon import docker_unavailable_reason
from streams.testing.kafka_io import KafkaIO
from streams.testing.topics import TopicFactory, unique_topic_name
from streams.testing.topology_process import TopologyProcess

if TYPE_CHECKING:
    from testcontainers.core.network import Network

    from streams.testing.container import KafkaContainer

MODES = ("external", "container", "local")
MODE_ENV = "STREAMS_KAFKA"
REQUIRE_DOCKER_ENV = "STREAMS_REQUIRE_DOCKER"

_BROKER_FIXTURES = {"kafka_bootstrap", "kafka_admin", "make_topic", "kafka_io", "run_topology"}
_DOCKER_FIXTURES = {"kafka_container", "make_kafka_container", "docker_network"}
_CLUSTER_FIXTURES = {"kafka_cluster"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("streams", "Streams: Kafka for tests")
    group.addoption(
        "--kafka",
        choices=MODES,
        default=None,
        help=f"where the test broker comes from (default: ${MODE_ENV}, else external when "
        f"${BOOTSTRAP_ENV} is set, else local)",
    )
    group.addoption(
        "--kafka-image",
        default=None,
        help="Docker image for container brokers (default: $STREAMS_KAFKA_IMAGE, else "
        "streams-kafka:<version> when built, else apache/kafka:<version>)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real Kafka broker")
    config.addinivalue_line("markers", "container: needs Docker (testcontainers)")
    config.addinivalue_line(
        "markers", "cluster: runs a local multi-node Kafka cluster and fails its nodes"
    )
    summary = _ContainerSummary()
    config.stash[_SUMMARY] = summary
    config.pluginmanager.register(summary, "streams-container-summary")
    kafka_mode(config)  # a bad --kafka / STREAMS_KAFKA is a usage error, before any test


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if _BROKER_FIXTURES & names:
            item.add_marker(pytest.mark.integration)
        if _DOCKER_FIXTURES & names:
            item.add_marker(pytest.mark.container)
        if _CLUSTER_FIXTURES & names:
            item.add_marker(pytest.mark.cluster)


class _ContainerSummary:
    """Counts container tests and the images they ran, for the run's summary: on CI a
    skip fails anyway, but the log should show that the tests really ran."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.images: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "container" not in report.keywords:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.outcome] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.outcomes:
            return
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes.items()))
        images = ", ".join(sorted(self.images)) or "none started"
        terminalreporter.write_line(
            f"streams: container tests {counts}; KafkaContainer images: {images}"
        )


_SUMMARY = pytest.StashKey[_ContainerSummary]()


def _started(config: pytest.Config, container: KafkaContainer) -> None:
    summary = config.stash.get(_SUMMARY, None)
    if summary is not None:
        summary.images.add(container.image)


def kafka_mode(config: pytest.Config) -> str:
    """The broker mode this session runs with (see the module docstring)."""
    mode = config.getoption("kafka", default=None) or os.environ.get(MODE_ENV, "").strip()
    if not mode:
        return "external" if external_bootstrap() else "local"
    if mode not in MODES:
        raise pytest.UsageError(f"{MODE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "external" and not external_bootstrap():
        raise pytest.UsageError(f"--kafka external needs {BOOTSTRAP_ENV} (host:port,...)")
    return mode


def docker_required() -> bool:
    """True on CI (``CI=true``) or with ``STREAMS_REQUIRE_DOCKER=1``: no skipping then."""
    ci = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
    return ci or os.environ.get(REQUIRE_DOCKER_ENV, "").strip() == "1"


def require_docker() -> None:
    """Return when Docker answers; else skip the test (or fail it where Docker is required)."""
    reason = docker_unavailable_reason()
    if reason is not None:
        docker_missing(reason)


def docker_missing(reason: str) -> NoReturn:
    """Skip the test for want of ``reason`` (something Docker tests need), or fail it on CI
    or with ``STREAMS_REQUIRE_DOCKER=1``, where container tests must run."""
    if docker_required():
        pytest.fail(
            f"Docker is required here (CI or {REQUIRE_DOCKER_ENV}=1) but {reason}; "
            "`bash .ci/docker.sh` sets up the daemon and the local Kafka image",
            pytrace=False,
        )
    pytest.skip(f"needs Docker: {reason}")


def _image(config: pytest.Config) -> str | None:
    image: str | None = config.getoption("kafka_image", default=None)
    return image


# -- brokers ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_container(pytestconfig: pytest.Config) -> Iterator[KafkaContainer]:
    """One Kafka container for the whole session, removed at the end (needs Docker)."""
    require_docker()
    from streams.testing.container import KafkaContainer  # noqa: PLC0415 - the testing extra

    container = KafkaContainer(_image(pytestconfig))
    container.start()
    _started(pytestconfig, container)
    try:
        yield container
    finally:
        container.stop()


@pytest.fixture
def docker_network() -> Iterator[Network]:
    """A Docker network for this test (containers reach each other by alias), removed after."""
    require_docker()
    from testcontainers.core.network import Network  # noqa: PLC0415 - the testing extra

    network = Network()
    network.create()
    try:
        yield network
    finally:
        _remove_network(network)


def _remove_network(network: Network) -> None:
    # Containers of longer-lived fixtures (or ones torn down after this) may still be
    # attached; Docker refuses to remove a network with endpoints, so detach them first.
    import docker  # type: ignore[import-untyped]  # noqa: PLC0415 - the testing extra

    handle = docker.from_env().networks.get(network.name)
    for container in handle.containers:
        handle.disconnect(container, force=True)
    handle.remove()


@pytest.fixture
def make_kafka_container(
    pytestconfig: pytest.Config,
) -> Iterator[Callable[..., KafkaContainer]]:
    """``make_kafka_container(network=None, alias=None, image=None, **kw)``: a started
    ``KafkaContainer`` of its own (a second cluster, say), removed after the test."""
    require_docker()
    from streams.testing.container import KafkaContainer  # noqa: PLC0415 - the testing extra

    started: list[KafkaContainer] = []

    def make(image: str | None = None, **kwargs: Any) -> KafkaContainer:
        container = KafkaContainer(image or _image(pytestconfig), **kwargs)
        container.start()
        _started(pytestconfig, container)
        started.append(container)
        return container

    try:
        yield make
    finally:
        for container in reversed(started):
            container.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Bootstrap address of a real Kafka broker for the whole session (see ``--kafka``)."""
    mode = kafka_mode(request.config)
    if mode == "external":
        yield str(external_bootstrap())
        return
    if mode == "container":
        container: KafkaContainer = request.getfixturevalue("kafka_container")
        yield container.bootstrap_servers
        return
    broker = LocalBroker(port=free_port(), data_dir=tmp_path_factory.mktemp("kafka"))
    broker.up()
    try:
        yield broker.bootstrap
    finally:
        broker.down()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local three-node Kafka cluster for the whole session (see the module docstring).

    Its nodes run with ``FAST_FAILOVER``: a killed or frozen node is fenced after 6 s and a
    frozen follower leaves the ISR after 10 s, where Kafka waits 9 s and 30 s, and a
    consumer may ask for a 3 s group session (Kafka's floor: 6 s). The tests
    are about what happens once a node is lost (nothing lost, no stall), not about how
    long Kafka takes to notice; a workstation's `streams broker up --nodes 3` keeps
    Kafka's defaults. And their JVMs run with ``QUICK_START_JVM`` (no second JIT tier):
    every node is started several times in a session, on the same two cores as the
    instances under test."""
    cluster = LocalCluster(
        3,
        ports=free_ports(3),
        data_dir=tmp_path_factory.mktemp("cluster"),
        overrides=FAST_FAILOVER,
        java_options=QUICK_START_JVM,
    )
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def kafka_admin(kafka_bootstrap: str) -> AdminClient:
    return admin_client(kafka_bootstrap)


@pytest.fixture
def make_topic(kafka_admin: AdminClient, request: pytest.FixtureRequest) -> Iterator[TopicFactory]:
    """``make_topic(name=None, partitions=1, config=None) -> str``; deleted after the test."""
    factory = TopicFactory(kafka_admin, hint=request.node.name)
    try:
        yield factory
    finally:
        factory.cleanup()


@pytest.fixture
def app_id(kafka_admin: AdminClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique app id for the test (``--app-id``, ``TopologyBuilder(app_id)``); every
    topic named ``<app_id>-...`` (what the app made: outputs, changelogs, retry tiers,
    DLQs) is deleted after it."""
    app = unique_topic_name(request.node.name)
    try:
        yield app
    finally:
        delete_app_topics(kafka_admin, app)


# -- data in and out -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def envelope_codec(pytestconfig: pytest.Config) -> Any:
    """The codec ``kafka_io`` uses: ``AvroCodec`` over ``<rootdir>/schemas`` (None when
    there is no such folder). Override it in your ``conftest.py`` for other schemas."""
    schemas = Path(pytestconfig.rootpath) / "schemas"
    if not schemas.is_dir():
        return None
    # Imported here: the codec and its schemas are needed only by envelope tests.
    from streams.codec import AvroCodec  # noqa: PLC0415
    from streams.schemas.catalog import SchemaCatalog  # noqa: PLC0415

    return AvroCodec(SchemaCatalog.load(schemas))


@pytest.fixture
def kafka_io(kafka_bootstrap: str, envelope_codec: Any) -> KafkaIO:
    """Produce to and wait on the session broker; envelopes go through ``envelope_codec``."""
    return KafkaIO(kafka_bootstrap, codec=envelope_codec)


# -- topologies --------------------------------------------------------------------------------


@pytest.fixture
def run_topology(request: pytest.FixtureRequest) -> Iterator[Callable[..., TopologyProcess]]:
    """``run_topology(path, *, app_id=None, bootstrap=None, **settings) -> TopologyProcess``.

    Starts ``streams run <path>`` (relative to the rootdir) in the background against
    ``bootstrap`` (default: ``kafka_bootstrap``), with ``--set key=value`` for each of
    ``settings``; returns once the runtime has started (subscribed), or fails the test
    with the topology's output. After the test it is stopped with SIGTERM; a topology
    that exits by itself, fails or does not stop cleanly fails the test with its output.
    The topics it owns (``<app_id>-...``) are deleted after the test when ``app_id`` was
    given: give each test its own (the ``app_id`` fixture).
    """
    started: list[TopologyProcess] = []

    def run(
        path: str | Path,
        *,
        app_id: str | None = None,
        bootstrap: str | None = None,
        **settings: Any,
    ) -> TopologyProcess:
        target = bootstrap or request.getfixturevalue("kafka_bootstrap")
        proc = TopologyProcess(
            path,
            target,
            app_id=app_id,
            settings={k: str(v) for k, v in settings.items()},
            cwd=request.config.rootpath,
        )
        proc.start()
        try:
            # Once started its signal handlers are in place: the SIGTERM after is clean.
            proc.wait_started()
        except BaseException:
            proc.close()  # the failure is the test's; nothing left to report at teardown
            raise
        started.append(proc)
        return proc

    yield run
    problems = [problem for proc in started if (problem := _stop(proc))]
    for proc in started:
        if proc.app_id:
            _delete_owned_topics(proc.bootstrap, proc.app_id)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def _stop(proc: TopologyProcess) -> str | None:
    """Stop ``proc``; what went wrong with it, or None when it ran and stopped cleanly."""
    exited_early = not proc.running
    try:
        code = proc.stop()
    except StreamsError as exc:
        proc.close()
        return str(exc)
    output = proc.output(40)
    proc.close()
    if exited_early:
        return f"`streams run {proc.path}` exited with {code} during the test:\n{output}"
    if code != 0:
        return f"`streams run {proc.path}` stopped with exit code {code}:\n{output}"
    return None


def _delete_owned_topics(bootstrap: str, app_id: str) -> None:
    # Quiet: errors raise; the handle may outlive a container broker (then it would log
    # every reconnect attempt).
    delete_app_topics(admin_client(bootstrap, log_level=0), app_id)
