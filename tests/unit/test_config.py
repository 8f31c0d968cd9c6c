"""Where the cluster and the local state are, read from the environment on every call."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.config import external_bootstrap, state_root


def test_state_root_is_streams_state_dir_when_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("STREAMS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_root() == tmp_path / "state"


def test_state_root_falls_back_to_xdg_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("STREAMS_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_root() == tmp_path / "xdg" / "streams"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_root() == tmp_path / ".local" / "state" / "streams"


def test_state_root_expands_a_user_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("STREAMS_STATE_DIR", "~/streams-state")
    assert state_root() == tmp_path / "streams-state"


def test_the_local_broker_keeps_its_data_under_the_state_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from streams.broker.local import default_data_dir  # noqa: PLC0415 - loads the broker

    monkeypatch.setenv("STREAMS_STATE_DIR", str(tmp_path))
    assert default_data_dir(9092) == tmp_path / "broker-9092"


def test_external_bootstrap_is_the_trimmed_env_var_or_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", " 127.0.0.1:9092 ")
    assert external_bootstrap() == "127.0.0.1:9092"
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "  ")
    assert external_bootstrap() is None
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS")
    assert external_bootstrap() is None
