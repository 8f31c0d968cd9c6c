"""The compose stack end to end, on the locally built images (no registry): Kafka and the
orders topology come up with `compose/stack.sh up` (what `make up` runs), and an order
written from the host comes out accepted. About a minute, plus the app image build."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.broker import free_port
from streams.cluster import admin_client
from streams.testing import LOCAL_IMAGE, KafkaIO, wait_until
from streams.testing.container import image_present
from streams.testing.plugin import docker_missing, require_docker

# The app image is built first when the tree changed (a wheel compiled with Cython, then a
# docker build on the vfs driver): 4-5 minutes on two busy cores, the suite's default
# timeout of 300 s cut it in CI.
pytestmark = [pytest.mark.container, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "compose" / "stack.sh"


@pytest.fixture
def stack() -> Iterator[str]:
    """The stack on a free host port, under a project name of its own; down after."""
    require_docker()
    if not image_present(LOCAL_IMAGE):
        docker_missing(f"{LOCAL_IMAGE} is not built (make image)")
    port = free_port()
    env = {
        **os.environ,
        "KAFKA_PORT": str(port),
        "STREAMS_KAFKA_IMAGE": LOCAL_IMAGE,
        "COMPOSE_PROJECT_NAME": f"streams-test-{uuid.uuid4().hex[:6]}",
        "PYTHON": sys.executable,
    }
    up = _stack(env, "up")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield f"127.0.0.1:{port}"
    finally:
        # Shown by pytest only when the test fails: what the services said.
        print(_stack(env, "logs", "--tail", "30").stdout)
        _stack(env, "down")


def _stack(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(STACK), *args], env=env, capture_output=True, text=True, check=False
    )


def test_the_stack_runs_the_orders_topology(stack: str, envelope_codec: object) -> None:
    sys.path.insert(0, str(ROOT))
    from topology.orders import enrich, is_valid, sample_orders, validate  # noqa: PLC0415

    # The topology service creates its input topic when it starts: wait for that.
    wait_until(
        lambda: "orders" in admin_client(stack, log_level=0).list_topics(timeout=10).topics,
        timeout=120,
        what="the input topic `orders`",
    )
    io = KafkaIO(stack, codec=envelope_codec)
    orders = [o for o in sample_orders(20, seed=11) if is_valid(enrich(validate(o)))][:3]
    io.produce("orders", orders)

    ids = {o.id for o in orders}
    accepted = io.wait_for_envelopes(
        "orders-accepted", 3, timeout=120, match=lambda e: e.causation_id in ids
    )

    assert sorted(e.data["order_id"] for e in accepted) == sorted(
        o.data["order_id"] for o in orders
    )
