"""Missing or old Java and Maven get an error that says what to install."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from streams.broker.tools import find_java, find_maven, java_major_version
from streams.errors import MissingToolError


def _fake_java(folder: Path, version_line: str) -> Path:
    java = folder / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return java


def test_no_java_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingToolError, match=r"Java not found: install Java 17"):
        find_java()


def test_old_java_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path, 'openjdk version "1.8.0_392"')
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingToolError, match=r"is Java 8; Kafka 4 needs 17\+"):
        find_java()


def test_java_home_wins_over_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home" / "bin").mkdir(parents=True)
    java = _fake_java(tmp_path / "home" / "bin", 'openjdk version "21.0.2" 2024-01-16')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_java() == java
    assert java_major_version(java) == 21


def test_no_maven_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingToolError, match=r"Maven \(mvn\) not found: install Apache Maven"):
        find_maven()
