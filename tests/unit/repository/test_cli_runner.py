"""The suites' in-process ``streams`` runner (tests/cli_runner.py) ends a command as a
process would (its exit status, its stdout and stderr apart) and leaves this process as it
found it, so the next run, or the next test on the same xdist worker, starts afresh."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest
import structlog
from cli_runner import Run, streams

from streams import cli
from streams.schemas import SCHEMAS_DIR_ENV, default_catalog
from streams.schemas.builtin import ERROR_TYPE

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def test_a_run_leaves_the_environment_logging_and_folder_as_it_found_them(
    tmp_path: Path,
) -> None:
    environ, cwd = dict(os.environ), Path.cwd()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()

    # -v configures logging at DEBUG on this run's stderr; list exports $STREAMS_SCHEMAS
    run = streams("-v", "schemas", "list", "--schemas", str(SCHEMAS), "--json", cwd=tmp_path)

    assert run.returncode == 0, run.output
    assert "order.placed" in {row["type"] for row in json.loads(run.stdout)}
    assert dict(os.environ) == environ
    assert Path.cwd() == cwd
    assert (root.handlers, root.level) == (handlers, level)
    assert structlog.get_config() == config
    logging.getLogger("streams").error("after the run")  # not to a closed stream


def test_an_error_is_status_1_and_one_line_on_stderr(tmp_path: Path) -> None:
    run = streams("schemas", "list", "--schemas", str(tmp_path / "none"))
    assert run.returncode == 1
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith("error: ")


def test_what_is_written_to_file_descriptor_2_is_stderr_too(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # as librdkafka writes, past sys.stderr, when a client has no Python logger
    line = "%3|1765000000.000|FAIL|rdkafka#producer-1| 127.0.0.1:1: Connection refused\n"
    monkeypatch.setattr(cli, "main", lambda: os.write(2, line.encode()))
    assert streams("anything").stderr == line
    os.write(2, b"after\n")  # fd 2 is the test's again
    assert capfd.readouterr().err == "after\n"


def test_what_is_left_in_the_text_buffers_is_printed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def main() -> None:
        sys.stdout.write("out")  # no newline, no flush: a process's exit writes it
        sys.stderr.write("err")

    monkeypatch.setattr(cli, "main", main)
    assert streams("anything") == Run(0, "out", "err")


def test_a_usage_error_is_status_2_and_no_args_is_the_help() -> None:
    assert streams("schemas", "list", "--no-such-option").returncode == 2
    shown = streams()
    assert shown.output.startswith("Usage: streams [OPTIONS] COMMAND")  # as the script names it


def test_env_sets_and_unsets_variables_for_the_run_only(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    shutil.copytree(SCHEMAS / "order.placed", folder / "order.placed")
    shutil.copy(SCHEMAS / "envelope.avsc", folder)
    os.environ[SCHEMAS_DIR_ENV] = str(tmp_path / "elsewhere")  # conftest puts it back

    found = streams("schemas", "list", "--json", env={SCHEMAS_DIR_ENV: str(folder)})
    assert {row["type"] for row in json.loads(found.stdout)} == {"order.placed", ERROR_TYPE}
    # unset, the folder is found from the working folder: tmp_path/schemas
    unset = streams("schemas", "list", "--json", env={SCHEMAS_DIR_ENV: None}, cwd=tmp_path)
    assert {row["type"] for row in json.loads(unset.stdout)} == {"order.placed", ERROR_TYPE}
    assert os.environ[SCHEMAS_DIR_ENV] == str(tmp_path / "elsewhere")


def test_a_folder_changed_between_runs_is_read_afresh(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, folder)
    os.environ[SCHEMAS_DIR_ENV] = str(folder)
    assert "order.placed" in default_catalog().types()  # cached for this folder
    shutil.rmtree(folder / "order.placed")

    streams("schemas", "list", "--schemas", str(folder))

    assert "order.placed" not in default_catalog().types()
