"""Without Docker, container tests skip on a workstation, saying why, and fail on CI.

Runs a tiny suite in a child pytest whose DOCKER_HOST points at a socket nobody serves.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_SUITE = """
def test_needs_a_container(kafka_container):
    raise AssertionError("must not run without Docker")
"""


@pytest.fixture
def no_docker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{pytester.path}/no-docker.sock")
    for name in ("CI", "STREAMS_REQUIRE_DOCKER"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_suite=_SUITE)
    return pytester


def test_skips_with_the_reason_on_a_workstation(no_docker: pytest.Pytester) -> None:
    result = no_docker.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*needs Docker*"])


@pytest.mark.parametrize("env", ["CI=true", "STREAMS_REQUIRE_DOCKER=1"])
def test_fails_where_docker_is_required(
    no_docker: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    name, value = env.split("=")
    monkeypatch.setenv(name, value)
    result = no_docker.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*Docker is required here*"])
