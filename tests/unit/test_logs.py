"""The logging setup users get from configure_logging()."""

from __future__ import annotations

import io
import json
import logging

import pytest
import structlog

from streams.logs import configure_logging, get_logger


def test_json_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    get_logger("streams.test", app="orders").info("started", partitions=4)
    record = json.loads(out.getvalue().splitlines()[-1])
    assert record["event"] == "started"
    assert record["app"] == "orders"
    assert record["partitions"] == 4
    assert record["level"] == "info"
    assert "timestamp" in record


def test_stdlib_logging_goes_through_the_same_chain() -> None:
    out = io.StringIO()
    configure_logging("INFO", json=True, stream=out)
    logging.getLogger("some.library").warning("disk %s", "full")
    record = json.loads(out.getvalue().splitlines()[-1])
    assert record["event"] == "disk full"
    assert record["level"] == "warning"
    assert record["logger"] == "some.library"


def test_level_from_env_filters_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setenv("STREAMS_LOG_LEVEL", "WARNING")
    configure_logging(stream=out)
    log = get_logger("streams.test")
    log.info("hidden")
    log.warning("shown")
    events = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    assert events == ["shown"]


def test_console_output_when_asked_for_it() -> None:
    out = io.StringIO()
    configure_logging("DEBUG", json=False, stream=out)
    get_logger("streams.test").debug("restored", store="dedup")
    text = out.getvalue()
    assert "restored" in text and "store=dedup" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.splitlines()[-1])


def test_unknown_level_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("LOUD", stream=io.StringIO())


@pytest.fixture(autouse=True)
def _reset_logging() -> object:
    yield
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_streams_handler", False):
            root.removeHandler(handler)
