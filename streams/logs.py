"""One place that configures structlog (and routes stdlib logging through it).

JSON lines when the output is not a terminal (or when asked), readable console output on a
terminal. The level comes from the argument, else ``STREAMS_LOG_LEVEL``, else INFO;
``STREAMS_LOG_JSON=1`` forces JSON.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, TextIO

import structlog

_TRUE = {"1", "true", "yes", "on"}


def _env_level() -> str:
    return os.environ.get("STREAMS_LOG_LEVEL", "INFO").upper()


def configure_logging(
    level: str | int | None = None,
    *,
    json: bool | None = None,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and stdlib logging for a process.

    Safe to call more than once (the last call wins), so the CLI and tests can each set it.
    """
    out = stream if stream is not None else sys.stderr
    if level is None:
        level = _env_level()
    numeric = level if isinstance(level, int) else logging.getLevelName(str(level).upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    if json is None:
        env_json = os.environ.get("STREAMS_LOG_JSON")
        json = env_json.lower() in _TRUE if env_json is not None else not out.isatty()

    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor
    if json:
        renderer = structlog.processors.JSONRenderer()
        shared.append(structlog.processors.dict_tracebacks)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())

    structlog.configure(
        processors=[
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_streams_handler", False):
            root.removeHandler(old)
    handler._streams_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)


Logger = structlog.stdlib.BoundLogger
"""What ``get_logger`` returns: a structlog logger with the stdlib's levels."""


def get_logger(name: str, **bound: Any) -> Logger:
    """A structlog logger named like a stdlib logger, with optional bound context."""
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger.bind(**bound) if bound else logger


class KafkaLog:
    """Where librdkafka's own log lines go: the ``logger`` of every client Streams makes.

    librdkafka writes straight to stderr by default, and repeats a failing connection every
    few milliseconds (hundreds of ``%3|...|FAIL|`` lines while a broker is away). Streams
    reports what those lines mean itself, once (an outage, a refused login, a missing
    topic), so they go to the ``streams.kafka`` logger at DEBUG (``-v`` shows them), at
    most one per client and facility every ``every_s`` seconds.
    """

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s
        self._logger = logging.getLogger("streams.kafka")
        self._last: dict[tuple[Any, ...], float] = {}

    def log(self, _level: int, fmt: str, *args: Any) -> None:
        """Called by confluent-kafka (as on a ``logging.Logger``) from ``poll``/``flush``."""
        if not self._logger.isEnabledFor(logging.DEBUG):
            return
        key = args[:2]  # (facility, client name) of "%s [%s] %s"
        now = time.monotonic()
        if now - self._last.get(key, -self.every_s) < self.every_s:
            return
        self._last[key] = now
        self._logger.debug(fmt, *args)


KAFKA_LOG = KafkaLog()
"""The one relay every client config names (``"logger": KAFKA_LOG``)."""
