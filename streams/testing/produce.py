"""Put test data into a topic, and read envelopes back, with any envelope codec.

The codec is anything with ``encode(env) -> (value, headers)`` and ``decode(value,
headers) -> Envelope``, such as ``streams.codec.AvroCodec``. Records are keyed by the
envelope's ``key`` (its partition key), like the runtime writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, Message, Producer

from streams.envelope import Envelope
from streams.errors import ProduceError
from streams.testing.wait import DEFAULT_TIMEOUT, TopicReader

Headers = list[tuple[str, bytes]]
Record = tuple[bytes | str | None, bytes | None, Headers | None]
"""``(key, value, headers)`` of one record to write."""


class EnvelopeEncoder(Protocol):
    def encode(self, env: Envelope) -> tuple[bytes, Headers]: ...


class EnvelopeDecoder(Protocol):
    def decode(self, value: bytes | None, headers: Any = None) -> Envelope: ...


def produce_records(
    bootstrap: str,
    topic: str,
    records: Iterable[Record],
    *,
    partition: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    config: Mapping[str, Any] | None = None,
) -> int:
    """Write ``(key, value, headers)`` records to ``topic`` and wait for every ack.

    Returns the number written. Blocks until all are acknowledged (idempotent producer,
    ``acks=all``: in order, no duplicates); raises ``ProduceError`` naming the first
    failure, or when acks do not arrive within ``timeout`` seconds. ``config``: client
    settings (a secured cluster's, say).
    """
    # Quiet: failures reach the caller as ProduceError; librdkafka's own log would only
    # repeat them, and keep logging reconnects if the broker goes away before this
    # handle is freed (a test's container, say).
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "log_level": 0,
            # Java's default partitioner for keyed records, as the runtime's producer and
            # the TestDriver: a key lands on the same partition whoever writes it.
            "partitioner": "murmur2_random",
            **(config or {}),
        }
    )
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    count = 0
    for key, value, headers in records:
        while True:
            try:
                producer.produce(
                    topic,
                    value,
                    key,
                    partition=-1 if partition is None else partition,  # -1: the partitioner
                    headers=list(headers or ()),
                    on_delivery=on_delivery,
                )
                break
            except BufferError:  # local queue full: let deliveries drain, then retry
                producer.poll(0.1)
        count += 1
    left = producer.flush(timeout)
    if errors:
        raise ProduceError(f"writing to {topic!r} failed: {errors[0].str()}")
    if left:
        raise ProduceError(f"{left} records to {topic!r} not acknowledged within {timeout:g} s")
    return count


def produce_envelopes(
    bootstrap: str,
    topic: str,
    envelopes: Iterable[Envelope],
    codec: EnvelopeEncoder,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    config: Mapping[str, Any] | None = None,
) -> list[Envelope]:
    """Encode ``envelopes`` with ``codec`` and write them to ``topic``, keyed by ``env.key``.

    Blocks until every record is acknowledged; returns the envelopes written (so a test
    can compare them with what comes out). Encoding errors propagate before anything
    is written. ``config``: client settings, as for ``produce_records``.
    """
    envs = list(envelopes)
    encoded = [(env.key, *codec.encode(env)) for env in envs]
    produce_records(bootstrap, topic, encoded, timeout=timeout, config=config)
    return envs


def wait_for_envelopes(
    bootstrap: str,
    topic: str,
    count: int,
    codec: EnvelopeDecoder,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    match: Callable[[Envelope], bool] | None = None,
) -> list[Envelope]:
    """Block until ``topic`` holds ``count`` envelopes (that ``match``); return them decoded.

    Records that the codec cannot decode fail the wait at once (``DecodeError``): a test
    expecting envelopes should hear about garbage immediately, not after the timeout.
    """
    decoded: list[Envelope] = []

    def enough(records: Sequence[Message]) -> bool:
        for msg in records[len(seen_msgs) :]:
            seen_msgs.append(msg)
            env = codec.decode(msg.value(), msg.headers())
            if match is None or match(env):
                decoded.append(env)
        return len(decoded) >= count

    seen_msgs: list[Message] = []
    what = f"{count} envelopes" + (" matching the filter" if match else "")
    with TopicReader(bootstrap, topic) as reader:
        reader.wait_for(enough, timeout, what=what)
    return decoded[:count]
