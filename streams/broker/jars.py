"""Fetch Apache Kafka's jars from Maven Central into a cache, once.

The cache is ``$STREAMS_CACHE_DIR`` (default ``~/.cache/streams``); a Kafka version lives in
``kafka-<version>/libs``. A fetch writes into a temporary folder and renames it into place,
under a file lock, so concurrent callers (a test session and a CLI) never see half a cache.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from streams.broker.tools import find_maven
from streams.errors import BrokerError

KAFKA_VERSION = os.environ.get("STREAMS_KAFKA_VERSION", "4.4.0")
LOG4J_VERSION = "2.25.5"


def cache_root() -> Path:
    configured = os.environ.get("STREAMS_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "streams"


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}" / "libs"


def resource(name: str) -> str:
    return resources.files("streams.broker").joinpath("resources", name).read_text()


def ensure_libs(version: str = KAFKA_VERSION) -> Path:
    """The folder of Kafka ``version``'s runtime jars, fetched with Maven if not cached."""
    target = libs_dir(version)
    if _complete(target, version):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(target, version):  # another process fetched it while we waited
            return target
        _fetch(target, version)
    return target


def _complete(target: Path, version: str) -> bool:
    return (target / f"kafka_2.13-{version}.jar").exists() and (target / ".complete").exists()


def _fetch(target: Path, version: str) -> None:
    mvn = find_maven()
    pom = resource("pom.xml").replace("@KAFKA_VERSION@", version)
    pom = pom.replace("@LOG4J_VERSION@", LOG4J_VERSION)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="fetch-") as work:
        work_dir = Path(work)
        (work_dir / "pom.xml").write_text(pom)
        out_dir = work_dir / "libs"
        cmd = [
            str(mvn),
            "-B",
            "-q",
            "-f",
            str(work_dir / "pom.xml"),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={out_dir}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not (out_dir / f"kafka_2.13-{version}.jar").exists():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(
                f"fetching Apache Kafka {version} with Maven failed "
                f"(exit {proc.returncode}):\n{tail}"
            )
        (out_dir / ".complete").write_text(version + "\n")
        if target.exists():
            shutil.rmtree(target)
        out_dir.rename(target)
