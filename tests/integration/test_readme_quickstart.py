"""The README's quickstart, pasted into a shell on a fresh machine, works end to end.

The test takes the ```bash block of the README's quickstart section (between the
``--8<-- [start:quickstart]`` and ``[end:quickstart]`` markers, which the docs site
includes too) and runs exactly those lines with ``bash -e`` from the repository root, the
virtualenv's ``bin`` first on PATH, as a user would after ``source .venv/bin/activate``.

Its ``streams broker up`` starts a broker of the test's own, never the one other tests
use: a free port (``STREAMS_BROKER_PORT``) and a fresh state dir (``STREAMS_STATE_DIR``:
the broker's data and the apps' stores), with ``KAFKA_BOOTSTRAP_SERVERS`` naming that
broker so every other command of the block reaches it. The broker is stopped after.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.broker import free_port

ROOT = Path(__file__).resolve().parents[2]
START = "--8<-- [start:quickstart]"
END = "--8<-- [end:quickstart]"
SCRIPT_TIMEOUT = 240  # seconds: a cold broker start, a run, a replay, on a busy machine

# Settings of the caller's environment that would point the commands elsewhere.
_FOREIGN_ENV = (
    "KAFKA_BOOTSTRAP_SERVERS",
    "STREAMS_KAFKA_CONFIG",
    "STREAMS_APP_ID",
    "STREAMS_INSTANCES",
    "STREAMS_APP_STATE_DIR",
    "STREAMS_SCHEMAS",
    "STREAMS_SCHEMAS_DIR",
)


def quickstart_lines(readme: str) -> str:
    """The ```bash block of the README's quickstart section, as written."""
    section = readme.split(START, 1)[1].split(END, 1)[0]
    block = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return block + "\n"


@pytest.fixture
def quickstart_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    port = str(free_port())
    env.update(
        STREAMS_BROKER_PORT=port,
        STREAMS_STATE_DIR=str(tmp_path / "state"),
        KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{port}",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    yield env
    subprocess.run(
        ["streams", "broker", "down"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=True,
    )


def run_script(script: str, env: dict[str, str], out_dir: Path) -> subprocess.CompletedProcess[str]:
    # Its own process group, so that whatever the script leaves behind (the backgrounded
    # `streams run`, when a later line failed) is stopped with it; output to files, not
    # pipes, which such a leftover would hold open. The broker has a session of its own.
    stdout, stderr = out_dir / "stdout", out_dir / "stderr"
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", script],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, stdout.read_text(), stderr.read_text()
    )


def envelopes(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines `streams consume` printed."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_the_readme_quickstart_runs_as_written(
    quickstart_env: dict[str, str], tmp_path: Path
) -> None:
    script = quickstart_lines((ROOT / "README.md").read_text())
    assert script.startswith("streams broker up\n")

    result = run_script(script, quickstart_env, tmp_path)

    shown = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, shown
    port = quickstart_env["STREAMS_BROKER_PORT"]
    assert f"broker up at 127.0.0.1:{port}" in result.stdout  # its own, not another test's
    printed = envelopes(result.stdout)
    # the run's output, then the replay's under the new app id: o-1 and o-2 each time
    accepted = Counter(e["data"]["order_id"] for e in printed if e["type"] == "order.accepted")
    assert accepted == {"o-1": 2, "o-2": 2}, shown
    [rejected] = [e for e in printed if e["type"] == "order.rejected"]
    assert rejected["data"]["order_id"] == "o-3"
    assert rejected["data"]["reason"] == "INVALID"
    assert "Traceback" not in result.stderr
