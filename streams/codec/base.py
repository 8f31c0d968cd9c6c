"""The one interface every codec implements; the runtime depends on this alone."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from streams.codec.headers import Headers
from streams.envelope import Envelope

KafkaHeaders = list[tuple[str, bytes]]


@runtime_checkable
class Codec(Protocol):
    """Envelope ⇄ Kafka value + headers. Implementations are cheap per call and never block.

    ``encode`` raises ``EncodeError`` (naming the field) when the payload does not fit its
    schema. ``decode`` raises only ``DecodeError`` subclasses on bad input, whatever the
    bytes; ``version`` is the payload version the reader wants (None: as written); with
    ``lazy`` a codec may leave the payload to be decoded when ``data`` is first read (its
    errors are then raised there), the metadata still checked at once.

    A codec whose record values carry all the metadata may say so with a class attribute
    ``reads_headers = False``: the runtime then decodes with ``lazy`` and no headers
    (asking a consumed message for its headers costs microseconds). Without it, the
    runtime passes the headers.
    """

    def encode(self, env: Envelope) -> tuple[bytes, KafkaHeaders]: ...

    def decode(
        self,
        value: bytes | None,
        headers: Headers | None = None,
        *,
        version: int | None = None,
        lazy: bool = False,
    ) -> Envelope: ...

    def peek_type(self, headers: Headers | None) -> tuple[str, int] | None: ...
