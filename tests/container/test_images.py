"""The image `make image` builds, run the way compose runs it, and the compose file."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from testcontainers.core.container import DockerContainer

from streams.broker import free_port
from streams.broker.readiness import wait_ready
from streams.testing import LOCAL_IMAGE, wait_until
from streams.testing.container import LABEL, image_present
from streams.testing.plugin import docker_missing, require_docker

pytestmark = pytest.mark.container

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "compose" / "stack.sh"


def _need(condition: bool, reason: str) -> None:
    if not condition:
        docker_missing(reason)


@pytest.fixture
def local_image() -> str:
    require_docker()
    _need(image_present(LOCAL_IMAGE), f"{LOCAL_IMAGE} is not built (make image)")
    return LOCAL_IMAGE


@pytest.fixture
def plain_kafka(local_image: str) -> Iterator[str]:
    """The image with its own entrypoint, configured by KAFKA_* env as in compose."""
    port = free_port()
    container = (
        DockerContainer(local_image)
        .with_bind_ports(9092, port)
        .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://127.0.0.1:{port}")
        .with_env("KAFKA_NUM_PARTITIONS", "3")
        .with_env("KAFKA_HEAP_OPTS", "-Xmx384m")
        .with_kwargs(labels={LABEL: "image-test"})
    )
    container.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        container.stop()


def test_the_local_image_runs_kafka_from_env_settings(plain_kafka: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # noqa: PLC0415

    wait_ready(plain_kafka, timeout=120)
    admin = AdminClient({"bootstrap.servers": plain_kafka})
    # KAFKA_NUM_PARTITIONS=3 became num.partitions=3: a topic created without a count has 3.
    admin.create_topics([NewTopic("env-check", replication_factor=1)])["env-check"].result(30)

    def partitions() -> int:  # the broker's metadata may trail the controller's for a moment
        return len(admin.list_topics("env-check", timeout=10).topics["env-check"].partitions)

    wait_until(lambda: partitions() > 0, 30, what="the topic in the broker's metadata")
    assert partitions() == 3


def _compose_tool() -> list[str] | None:
    if (
        subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    return [found] if found else None


@pytest.mark.parametrize(
    "env",
    [{}, {"STREAMS_KAFKA_IMAGE": LOCAL_IMAGE}, {"COMPOSE_PROFILES": "ui"}],
    ids=["official-image", "local-image", "with-ui"],
)
def test_the_compose_file_is_valid(env: dict[str, str]) -> None:
    _need(_compose_tool() is not None, "neither `docker compose` nor `docker-compose` is here")
    result = subprocess.run(
        ["bash", str(STACK), "config"],
        capture_output=True,
        text=True,
        # Only this case's settings: the caller's STREAMS_KAFKA_IMAGE must not leak in.
        env={**{k: v for k, v in os.environ.items() if k != "STREAMS_KAFKA_IMAGE"}, **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    resolved = result.stdout
    assert f"image: {env.get('STREAMS_KAFKA_IMAGE', 'apache/kafka:4.4.0')}" in resolved
    assert "KAFKA_BOOTSTRAP_SERVERS: kafka:19092" in resolved
    assert "provectuslabs/kafka-ui" in resolved  # in the file; started only with its profile
