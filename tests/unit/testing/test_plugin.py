"""The plugin's broker choice and its Docker policy (skip on a workstation, fail on CI)."""

from __future__ import annotations

import pytest

from streams.testing.plugin import docker_required, kafka_mode


class _Config:
    """Just enough of pytest.Config: the --kafka option."""

    def __init__(self, kafka: str | None = None) -> None:
        self.kafka = kafka

    def getoption(self, name: str, default: object = None) -> object:
        return self.kafka if name == "kafka" else default


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STREAMS_KAFKA", "KAFKA_BOOTSTRAP_SERVERS", "CI", "STREAMS_REQUIRE_DOCKER"):
        monkeypatch.delenv(name, raising=False)


def mode(kafka: str | None = None) -> str:
    return kafka_mode(_Config(kafka))  # type: ignore[arg-type]


def test_default_is_the_local_broker() -> None:
    assert mode() == "local"


def test_bootstrap_servers_alone_select_the_external_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092")
    assert mode() == "external"


def test_env_selects_the_mode_and_the_option_wins_over_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMS_KAFKA", "container")
    assert mode() == "container"
    assert mode("local") == "local"


def test_unknown_mode_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMS_KAFKA", "docker")
    with pytest.raises(pytest.UsageError, match="expected one of external, container, local"):
        mode()


def test_external_without_bootstrap_servers_is_a_usage_error() -> None:
    with pytest.raises(pytest.UsageError, match="KAFKA_BOOTSTRAP_SERVERS"):
        mode("external")


@pytest.mark.parametrize(
    ("env", "required"),
    [
        ({}, False),
        ({"CI": "true"}, True),
        ({"CI": "1"}, True),
        ({"CI": "false"}, False),
        ({"STREAMS_REQUIRE_DOCKER": "1"}, True),
    ],
)
def test_docker_is_required_on_ci(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], required: bool
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert docker_required() is required
