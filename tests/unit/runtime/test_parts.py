"""The parts of a runtime instance beside its record path (``streams.runtime.assembly``):
the ports ``run`` serves answer from before the start until the instance has closed, and
are given back after, a start that fails included; ``close`` releases what the instance
holds, its slot last. On in-memory clients: ``run`` stops itself from its status tick."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from streams.codec import AvroCodec
from streams.observability.health import Health
from streams.observability.server import InstanceServer
from streams.pipeline.stats import Stats
from streams.runtime import Runtime, RuntimeConfig
from streams.runtime.slot import InstanceSlot
from streams.runtime.state import IN_MEMORY
from streams.schemas import default_catalog
from streams.testing.memory import MemoryCluster
from streams.testing.memory.admin import MemoryClients
from streams.topology import Topology, TopologyBuilder, owned

CODEC = AvroCodec(default_catalog())
Answer = tuple[int, str]


def passthrough() -> Topology:
    b = TopologyBuilder("app")
    b.source("in", type="order.placed", version=2).to(owned("out"), type="order.placed", version=2)
    return b.build(default_catalog())


def get(port: int | None, path: str) -> Answer:
    try:
        with urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except HTTPError as exc:
        return exc.code, exc.read().decode()


class Probing(MemoryClients):
    """In-memory clients whose consumer calls ``probe`` when it subscribes: the last thing
    ``Runtime.start`` does, where it blocks on a broker."""

    def __init__(self, probe: Callable[[], None]) -> None:
        cluster = MemoryCluster()
        cluster.create_topic("in", 1)
        super().__init__(cluster)
        self._probe = probe

    def consumer(self, config: dict[str, Any]) -> Any:
        consumer = super().consumer(config)
        subscribe = consumer.subscribe

        def probed(*args: Any, **kwargs: Any) -> None:
            self._probe()
            subscribe(*args, **kwargs)

        consumer.subscribe = probed
        return consumer


def served(probe: Callable[[], None], on_tick: Callable[[Stats], None]) -> Runtime:
    config = RuntimeConfig(
        "memory",
        poll_timeout_s=0,
        status_interval_s=0,
        state_dir=IN_MEMORY,
        shutdown_timeout_s=0,
        metrics_port=0,
        query_port=0,
    )
    return Runtime(passthrough(), config, codec=CODEC, clients=Probing(probe), on_tick=on_tick)


def given_back(port: int) -> bool:
    try:
        InstanceServer(port, Health()).bind().stop()
    except OSError:
        return False
    return True


def test_the_ports_answer_from_before_the_start_until_the_instance_has_closed() -> None:
    seen: dict[str, tuple[Answer, Answer]] = {}

    def ask() -> tuple[Answer, Answer]:
        return get(runtime.metrics_port, "/healthz"), get(runtime.query_port, "/readyz")

    def at_start() -> None:
        seen["start"] = ask()

    def running(_stats: Stats) -> None:
        seen["running"] = ask()
        runtime.stop()

    runtime = served(at_start, running)
    # Both bound at the assembly: the group is told of the query port, and a port taken
    # refuses the instance before it created any topic.
    query_port, metrics_port = runtime.query_port, runtime.metrics_port
    assert query_port and metrics_port
    runtime.run()
    waiting = (503, "waiting for a partition assignment\n")
    assert seen["start"] == ((200, "ok\n"), waiting)
    assert seen["running"] == ((200, "ok\n"), (200, "ready\n"))
    assert runtime.metrics_port is None and runtime.query_port is None
    assert given_back(query_port) and given_back(metrics_port)


def test_a_start_that_fails_gives_the_ports_back() -> None:
    ports: list[int | None] = []

    def refuse() -> None:
        ports.extend((runtime.metrics_port, runtime.query_port))
        raise RuntimeError("no broker")

    runtime = served(refuse, lambda _stats: None)
    with pytest.raises(RuntimeError, match="no broker"):
        runtime.run()
    assert all(ports)
    assert all(given_back(port) for port in ports if port is not None)
    assert runtime.metrics_port is None and runtime.query_port is None


def test_a_port_bound_and_never_served_is_given_back_at_once() -> None:
    server = InstanceServer(0, Health()).bind()
    port = server.port
    server.stop()  # returns: nothing to wait for
    assert not server.bound and given_back(port)


def test_close_releases_the_slot_for_the_next_instance(tmp_path: Path) -> None:
    config = RuntimeConfig("memory", state_dir=str(tmp_path), static_membership=True)
    runtime = Runtime(passthrough(), config, codec=CODEC, clients=Probing(lambda: None))
    runtime.start()
    runtime.close()
    slot = InstanceSlot.claim(tmp_path, "app")
    assert slot.name == "0"  # the one the closed instance held
    slot.close()
