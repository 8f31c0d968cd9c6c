"""One place that configures structlog (and routes stdlib logging through it).

JSON lines when the output is not a terminal (or when asked), readable console output on a
terminal. The level comes from the argument, else ``STREAMS_LOG_LEVEL``, else INFO;
``STREAMS_LOG_JSON=1`` forces JSON. Lines of stdlib loggers (a user's, librdkafka's
through ``KafkaLog``) go through the same processors and renderer as structlog's own.

Until a process configures logging (``configure_logging``, or structlog itself), Streams'
lines go to stdlib ``logging`` and its level decides, as a library's should: a test suite
or a script shows warnings and errors only unless it asks for more (pytest's
``--log-level``), where structlog's defaults would print every line, DEBUG included.

Record context: a line logged while a record is in hand (by Streams, or by a user step
inside ``map``, with structlog or stdlib ``logging``) carries the record's coordinates
(``topic``, ``partition``, ``offset``: where it was read) and, once its envelope is
decoded, ``event_id``, ``type``, ``version``, ``correlation_id`` and ``causation_id``; a
line logged after the record is done carries none of them; fields a line names itself
win. Free on the record path: binding eight contextvars per record would cost
microseconds a record, so the runtime names once per loop turn (``in_hand``) the
``Current`` its attempt already sets to the record in hand and clears after it, and one
processor (``record_context``) reads it only when a line is emitted. The reference is a
``ContextVar``: two runtimes on two threads never see each other's records.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Any, TextIO

import structlog

_TRUE = {"1", "true", "yes", "on"}

# The runtime's ``streams.topology.execution.context.Current`` (typed loosely: this module is below
# the topology layer); its ``record`` is the record in hand, or None.
_IN_HAND: ContextVar[Any] = ContextVar("streams_record_in_hand", default=None)


def in_hand(current: Any) -> None:
    """Make ``current.record`` the record this thread's log lines name from now on (the
    runtime calls it at each turn with its plan's ``Current``: once per batch)."""
    _IN_HAND.set(current)


def record_context(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Processor: add the record in hand's fields (``record_fields``), if one is in hand."""
    current = _IN_HAND.get()
    record = current.record if current is not None else None
    if record is not None:
        for name, value in record_fields(record).items():
            event_dict.setdefault(name, value)
    return event_dict


def record_fields(record: Any) -> dict[str, Any]:
    """What a log line names of a ``streams.pipeline.record.Record``: its envelope's metadata,
    once decoded (reading it never decodes the payload), and where it was read."""
    env = record.envelope
    fields: dict[str, Any] = {}
    if env is not None:
        fields = {
            "event_id": env.id,
            "type": env.type,
            "version": env.version,
            "correlation_id": env.correlation_id,
            "causation_id": env.causation_id,
        }
    fields["topic"] = record.topic
    fields["partition"] = record.partition
    fields["offset"] = record.offset
    return fields


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
        record_context,
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
    # A stdlib line's ``extra`` fields become fields of the line (``KafkaLog``'s, a user's).
    foreign: list[structlog.types.Processor] = [*shared, structlog.stdlib.ExtraAdder()]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=foreign,
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


def _stdlib_until_configured() -> None:
    """Route structlog into stdlib ``logging`` unless the process configured it already
    (see the module docstring); ``configure_logging`` and a user's configuration win."""
    if not structlog.is_configured():
        structlog.configure(
            processors=[
                structlog.stdlib.filter_by_level,  # a line below the level costs nothing
                structlog.stdlib.add_log_level,
                structlog.dev.ConsoleRenderer(colors=False),
            ],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=False,
        )


_stdlib_until_configured()

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
    most one per client and facility every ``every_s`` seconds, as structured lines: the
    message as the event, ``facility``, ``client`` and librdkafka's own ``kafka_level``
    as fields (``configure_logging`` renders them like every other line).
    """

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s
        self._logger = logging.getLogger("streams.kafka")
        self._last: dict[tuple[Any, ...], float] = {}

    def log(self, level: int, fmt: str, *args: Any) -> None:
        """Called by confluent-kafka (as on a ``logging.Logger``) from ``poll``/``flush``."""
        if not self._logger.isEnabledFor(logging.DEBUG):
            return
        key = args[:2]  # (facility, client name) of "%s [%s] %s"
        now = time.monotonic()
        if now - self._last.get(key, -self.every_s) < self.every_s:
            return
        self._last[key] = now
        if len(args) != 3:  # not confluent-kafka's "%s [%s] %s": keep the line as it is
            self._logger.debug(fmt, *args)
            return
        facility, client, message = args
        fields = {"facility": facility, "client": client, "kafka_level": _level_name(level)}
        self._logger.debug("%s", message, extra=fields)


def _level_name(level: int) -> str:
    return logging.getLevelName(level).lower() if isinstance(level, int) else str(level)


KAFKA_LOG = KafkaLog()
"""The one relay every client config names (``"logger": KAFKA_LOG``)."""
