"""Envelope codecs: envelope ⇄ Kafka value + headers.

``AvroCodec`` is Streams' own wire format (README, "Wire format");
``streams.codec.confluent.ConfluentAvroCodec`` the Confluent one (magic byte + schema id;
needs ``confluent-kafka[schemaregistry]``). Every codec implements ``Codec``; ``decode``
raises only ``DecodeError`` subclasses on bad input.

The names below are re-exported lazily (PEP 562): ``streams.codec.errors`` or
``.headers`` load without fastavro or the schema catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.codec.avro import AvroCodec
    from streams.codec.base import Codec, KafkaHeaders
    from streams.codec.errors import (
        BadHeaderError,
        CodecError,
        DecodeError,
        EmptyRecordError,
        EncodeError,
        HeaderMismatchError,
        MalformedRecordError,
        MissingHeaderError,
        NoResolutionPathError,
        RegistryError,
        UnknownSchemaError,
        UnknownSchemaIdError,
        UnknownTypeError,
        UnknownVersionError,
        UpcastError,
    )
    from streams.codec.headers import peek_type
    from streams.codec.upcast import Upcaster, Upcasters
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.codec.avro": ["AvroCodec"],
            "streams.codec.base": ["Codec", "KafkaHeaders"],
            "streams.codec.errors": [
                "BadHeaderError",
                "CodecError",
                "DecodeError",
                "EmptyRecordError",
                "EncodeError",
                "HeaderMismatchError",
                "MalformedRecordError",
                "MissingHeaderError",
                "NoResolutionPathError",
                "RegistryError",
                "UnknownSchemaError",
                "UnknownSchemaIdError",
                "UnknownTypeError",
                "UnknownVersionError",
                "UpcastError",
            ],
            "streams.codec.headers": ["peek_type"],
            "streams.codec.upcast": ["Upcaster", "Upcasters"],
        },
    )

__all__ = [
    "AvroCodec",
    "BadHeaderError",
    "Codec",
    "CodecError",
    "DecodeError",
    "EmptyRecordError",
    "EncodeError",
    "HeaderMismatchError",
    "KafkaHeaders",
    "MalformedRecordError",
    "MissingHeaderError",
    "NoResolutionPathError",
    "RegistryError",
    "UnknownSchemaError",
    "UnknownSchemaIdError",
    "UnknownTypeError",
    "UnknownVersionError",
    "UpcastError",
    "Upcaster",
    "Upcasters",
    "peek_type",
]
