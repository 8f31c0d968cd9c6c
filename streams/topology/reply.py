"""Replies to requests: the serving side of request-reply.

A request is a record with a ``reply-to`` header naming the topic its requester reads, and
a ``reply-correlation-id`` header: the correlation id its reply must carry
(``streams.patterns.Requester`` writes both). A ``reply`` step (``stream.reply()``) or a
processor (``ctx.reply(envelope)``) sends an envelope to that topic, with that correlation
id, as one of the record's outputs: written with the topology's guarantee (inside the
transaction with exactly-once), and not at all when the record's attempt fails.

A record without ``reply-to`` that reaches a reply fails with ``NotARequestError``, to the
dead-letter topic whatever the step's policy: it is bad input, not a bug to stop for
(``streams.topology.execution.replier`` sends replies).
A request the topology dead-letters gets an error reply as well (``error_reply``), so its
requester does not wait for its timeout.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from streams.envelope import Envelope, new_id
from streams.failures.headers import FailureInfo, Headers
from streams.schemas.builtin import ERROR_TYPE, ERROR_VERSION

REPLY_TO = "reply-to"
CORRELATION = "reply-correlation-id"
_CE_ID = "ce_id"  # the request's own id, when it could not be decoded


class NotARequestError(Exception):
    """A record without a ``reply-to`` header reached a reply."""


class Request(NamedTuple):
    """What a request's headers say: where its reply goes, with which correlation id
    (None: the request envelope's own), and the request's id (``ce_id``)."""

    reply_to: str
    correlation_id: str | None
    id: str | None


def request_headers(reply_to: str, correlation_id: str) -> list[tuple[str, bytes]]:
    """The headers that make a record a request answered on ``reply_to``."""
    return [(REPLY_TO, reply_to.encode()), (CORRELATION, correlation_id.encode())]


def request_of(headers: Headers) -> Request | None:
    """The request ``headers`` make, or None when they name no reply topic."""
    reply_to = correlation = id_ = None
    for name, value in headers:
        if value is None:
            continue
        if name == REPLY_TO:
            reply_to = value.decode(errors="replace")
        elif name == CORRELATION:
            correlation = value.decode(errors="replace")
        elif name == _CE_ID:
            id_ = value.decode(errors="replace")
    return Request(reply_to, correlation, id_) if reply_to else None


def error_reply(
    request: Request,
    envelope: Envelope | None,
    info: FailureInfo,
    dead_letter_topic: str,
    now: datetime,
) -> Envelope:
    """The ``streams.error`` envelope telling the requester of a dead-lettered request why
    it failed: ``envelope`` is the request as decoded (None: it could not be), ``info``
    what its dead letter's error headers say."""
    origin = info.origin
    correlation, key = request.correlation_id, None
    if envelope is not None:
        correlation = correlation or envelope.correlation_id or envelope.id
        key = envelope.key
    return Envelope(
        type=ERROR_TYPE,
        version=ERROR_VERSION,
        data={
            "exception": info.exception,
            "message": info.message,
            "stage": info.stage.value,
            "step": info.step,
            "topic": origin.topic,
            "partition": origin.partition,
            "offset": origin.offset,
            "attempts": info.attempts,
            "dead_letter_topic": dead_letter_topic,
        },
        key=key,
        id=new_id(),
        time=now,
        source=info.app_id,
        correlation_id=correlation or request.id,
        causation_id=envelope.id if envelope is not None else request.id,
    )
