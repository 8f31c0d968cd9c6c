"""Find the programs the local broker needs, with an error that says what to install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from streams.errors import MissingToolError

MIN_JAVA = 17

_INSTALL_JAVA = (
    "install Java 17 or newer (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17) or set JAVA_HOME, "
    "or point Streams at an existing cluster with KAFKA_BOOTSTRAP_SERVERS"
)
_INSTALL_MAVEN = (
    "install Apache Maven (Debian/Ubuntu: apt-get install maven; macOS: brew install maven); "
    "it fetches the Kafka jars from Maven Central once, into the Streams cache"
)


def find_java() -> Path:
    """The ``java`` executable to run the broker with: ``$JAVA_HOME/bin/java`` or PATH."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        if found is None:
            raise MissingToolError(f"Java not found: {_INSTALL_JAVA}")
        candidate = Path(found)
    major = java_major_version(candidate)
    if major < MIN_JAVA:
        raise MissingToolError(
            f"{candidate} is Java {major}; Kafka 4 needs {MIN_JAVA}+: {_INSTALL_JAVA}"
        )
    return candidate


def java_major_version(java: Path) -> int:
    """The major version ``java -version`` reports (``1.8`` counts as 8)."""
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise MissingToolError(f"cannot run {java}: {exc}: {_INSTALL_JAVA}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        raise MissingToolError(f"cannot tell the version of {java}: {_INSTALL_JAVA}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_maven() -> Path:
    found = shutil.which("mvn")
    if found is None:
        raise MissingToolError(f"Maven (mvn) not found: {_INSTALL_MAVEN}")
    return Path(found)
