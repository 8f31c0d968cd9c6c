"""``KafkaIO``: produce and wait helpers bound to one cluster (the ``kafka_io`` fixture)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from confluent_kafka import Message

from streams.envelope import Envelope
from streams.errors import StreamsError
from streams.testing import produce as _produce
from streams.testing import wait as _wait
from streams.testing.wait import DEFAULT_TIMEOUT


class KafkaIO:
    """Write test input to, and wait for output from, the cluster at ``bootstrap``.

    ``codec`` (e.g. ``streams.codec.AvroCodec``) encodes and decodes envelopes; the
    record-level methods need none. Every method blocks: writes until acknowledged, waits
    until the topic holds what was asked or ``WaitTimeoutError`` after ``timeout`` seconds.
    """

    def __init__(self, bootstrap: str, codec: Any = None) -> None:
        self.bootstrap = bootstrap
        self.codec = codec

    def _codec(self) -> Any:
        if self.codec is None:
            raise StreamsError(
                "no envelope codec: pass codec= (the kafka_io fixture loads <rootdir>/schemas)"
            )
        return self.codec

    def produce(self, topic: str, envelopes: Iterable[Envelope]) -> list[Envelope]:
        """Encode and write ``envelopes`` keyed by ``env.key``; returns them as a list."""
        return _produce.produce_envelopes(self.bootstrap, topic, envelopes, self._codec())

    def produce_records(
        self,
        topic: str,
        records: Iterable[_produce.Record],
    ) -> int:
        """Write raw ``(key, value, headers)`` records (e.g. garbage, to test a DLQ)."""
        return _produce.produce_records(self.bootstrap, topic, records)

    def wait_for_records(
        self,
        topic: str,
        count: int,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        match: Callable[[Message], bool] | None = None,
    ) -> list[Message]:
        return _wait.wait_for_records(self.bootstrap, topic, count, timeout, match=match)

    def wait_for(
        self,
        topic: str,
        predicate: Callable[[Sequence[Message]], bool],
        timeout: float = DEFAULT_TIMEOUT,
        *,
        what: str | None = None,
    ) -> list[Message]:
        return _wait.wait_for(self.bootstrap, topic, predicate, timeout, what=what)

    def wait_for_envelopes(
        self,
        topic: str,
        count: int,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        match: Callable[[Envelope], bool] | None = None,
    ) -> list[Envelope]:
        return _produce.wait_for_envelopes(
            self.bootstrap, topic, count, self._codec(), timeout, match=match
        )
