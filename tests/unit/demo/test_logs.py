"""The tour prints its own lines: what it runs logs to the file of the run, not stderr."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from rich.console import Console

from streams.demo.runner import _logs_to, _name_the_logs
from streams.logs import get_logger


def test_the_instances_warnings_go_to_the_file_the_tour_names(tmp_path: Path) -> None:
    stderr = io.StringIO()
    handler = logging.StreamHandler(stderr)  # configure_logging's, as the CLI sets it up
    handler._streams_handler = True  # type: ignore[attr-defined]
    root = logging.getLogger()
    # Only this one: an in-process CLI run of an earlier test may have left its own.
    others, root.handlers = root.handlers, [handler]
    log_file, tour = tmp_path / "tour.log", io.StringIO()
    try:
        with _logs_to(log_file):
            get_logger("streams.runtime").warning("partitions lost", partitions=3)
        get_logger("streams.runtime").warning("after the tour")
    finally:
        root.handlers = others
    assert "partitions lost" in log_file.read_text()
    assert "partitions lost" not in stderr.getvalue()
    assert "after the tour" in stderr.getvalue()  # the handler is given back
    _name_the_logs(Console(file=tour, width=200), log_file)
    assert f"logs of the tour's instances (1 line): {log_file}" in tour.getvalue()


def test_a_tour_that_logged_nothing_names_no_file_and_leaves_none(tmp_path: Path) -> None:
    log_file, tour = tmp_path / "tour.log", io.StringIO()
    with _logs_to(log_file):
        pass
    _name_the_logs(Console(file=tour, width=200), log_file)
    assert tour.getvalue() == ""
    assert not log_file.exists()
