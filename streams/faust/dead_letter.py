"""Dead-lettering a record a Faust agent could not decode, as a Streams topology does.

The DLQ is ``<app>-<topic>-dlq`` (``app`` is the Faust app's id) on the record's
partition; the record keeps its key, value, timestamp and headers untouched and gains the
KIP-1034 error headers with ``stage=decode``: the same ``FailureRouter`` decision and
headers the Streams runtime writes, so ``streams dlq list|show|replay`` work on it and a
replay sends it back to the partition it came from.

``send_dead_letter`` waits for the broker's acknowledgement before it returns: the schema
raises for the record only after that, and only then does Faust ack its offset, so a
bad record is never committed past before its dead letter is safe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Mapping as MappingABC
from typing import Any

from streams.cluster import Topics, admin_client
from streams.coordinates import Coordinates
from streams.failures.headers import Header, Stage
from streams.failures.policy import RetryPolicy
from streams.failures.routing import FailedRecord, FailureRouter, Route
from streams.failures.topics import FailureTopics, dlq_topic, ensure_failure_topics

# Decode failures go to the DLQ whatever the tiers: the policy only names the app's topics.
_POLICY = RetryPolicy()


def record_headers(headers: Any) -> list[Header]:
    """A Faust message's headers (a list of pairs, or a mapping) as ``(str, bytes)`` pairs."""
    if not headers:
        return []
    pairs: Sequence[tuple[Any, Any]] = (
        list(headers.items()) if isinstance(headers, MappingABC) else headers
    )
    out: list[Header] = []
    for name, value in pairs:
        key = name.decode() if isinstance(name, bytes) else str(name)
        out.append((key, value.encode() if isinstance(value, str) else value))
    return out


def failed_record(message: Any) -> FailedRecord:
    """The Faust ``Message`` as failure routing sees it (its timestamp in ms)."""
    timestamp = message.timestamp
    return FailedRecord(
        key=message.key,
        value=message.value,
        headers=record_headers(message.headers),
        coordinates=Coordinates(message.topic, message.partition, message.offset),
        timestamp=round(timestamp * 1000) if timestamp else None,
    )


def dead_letter_route(app_id: str, message: Any, exc: BaseException) -> Route:
    """Where and what to write for ``message``, which failed to decode with ``exc``."""
    router = FailureRouter(app_id, _POLICY)
    return router.route(failed_record(message), exc, stage=Stage.DECODE, step="decode")


async def send_dead_letter(app: Any, message: Any, exc: BaseException) -> Route:
    """Write ``message`` to its DLQ with Faust's producer; returns once acknowledged.

    Raises what the producer raises (a DLQ topic that does not exist, a broker that
    cannot be reached): a record that cannot be dead-lettered must not be skipped."""
    route = dead_letter_route(app.conf.id, message, exc)
    await app.producer.send_and_wait(
        route.topic,
        route.key,
        route.value,
        route.partition,
        route.timestamp / 1000 if route.timestamp is not None else None,
        route.headers,
    )
    return route


def ensure_dead_letter_topic(
    bootstrap: str,
    app_id: str,
    topic: str,
    *,
    settings: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Create ``<app_id>-<topic>-dlq`` with ``topic``'s partition count (kept forever, as
    every Streams DLQ), or check the existing one; returns its name. Blocks; raises
    ``FailureTopicError`` when ``topic`` is missing or the DLQ has another partition count.
    """
    topics = FailureTopics(app_id, topic, retries=(), dlq=dlq_topic(app_id, topic))
    ensure_failure_topics(Topics(admin_client(bootstrap, settings), timeout=timeout), topics)
    return topics.dlq
