"""``make test`` on a machine without a Docker daemon: the real container suite skips.

Runs ``pytest tests/container`` in a child whose ``DOCKER_HOST`` is a socket nobody
serves (whether or not a daemon runs here). Outside CI every container test is skipped
with the reason and the session passes; with ``STREAMS_REQUIRE_DOCKER=1`` (as ``.ci/run``
sets) or ``CI=true`` none is skipped: each fails, saying Docker is required.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _container_suite(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CI", "STREAMS_REQUIRE_DOCKER", "PYTEST_ADDOPTS")
    }
    environ["DOCKER_HOST"] = f"unix://{tmp_path}/nobody-serves.sock"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests/container", "-p", "no:cacheprovider", "-rs"],
        cwd=ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _outcomes(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_without_docker_every_container_test_skips_saying_why(tmp_path: Path) -> None:
    result = _container_suite(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    outcomes = _outcomes(result.stdout)
    assert outcomes.get("skipped", 0) >= 8, output  # every test that starts a container
    assert not {"failed", "error", "errors"} & set(outcomes), output
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    # pytest folds tests skipped at one place for one reason into a line "SKIPPED [n]"
    # (the compose fixture's three tests, where no docker binary is installed at all).
    counts = []
    for line in skipped:
        match = re.match(
            r"SKIPPED \[(\d+)\] (tests/container|streams/testing)/\S+: needs Docker: ", line
        )
        assert match, line
        counts.append(int(match[1]))
    assert sum(counts) == outcomes["skipped"], output


@pytest.mark.parametrize("env", ["STREAMS_REQUIRE_DOCKER=1", "CI=true"])
def test_where_docker_is_required_the_container_tests_fail(tmp_path: Path, env: str) -> None:
    name, value = env.split("=")
    result = _container_suite(tmp_path, **{name: value})
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    outcomes = _outcomes(result.stdout)
    assert "skipped" not in outcomes, output
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) >= 8, output
    assert "Docker is required here (CI or STREAMS_REQUIRE_DOCKER=1)" in result.stdout
