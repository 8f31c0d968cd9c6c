"""Which Faust transport an app uses, and refusing the one that drops headers.

Faust's ``confluent://`` transport builds every consumed record with no headers and
never passes headers to its producer, so the ``ce_*`` headers of our wire format would
be lost both ways. The ``kafka://`` (aiokafka) transport keeps them. ``check_transport``
raises ``ConfluentTransportError`` (one line saying what to change) for the former.
"""

from __future__ import annotations

from typing import Any

from streams.faust.errors import ConfluentTransportError

HEADER_DROPPING_SCHEMES = frozenset({"confluent"})


def broker_urls(app: Any) -> list[str]:
    """The app's broker URLs as text (``kafka://host:9092``)."""
    return [str(url) for url in app.conf.broker]


def bootstrap_servers(app: Any) -> str:
    """The app's brokers as a Kafka bootstrap list (``host:9092,host2:9092``)."""
    hosts = []
    for url in app.conf.broker:
        hosts.append(f"{url.host}:{url.port or 9092}")
    return ",".join(hosts)


def check_transport(app: Any) -> None:
    """Raise ``ConfluentTransportError`` when ``app`` uses a transport that drops headers."""
    for url in app.conf.broker:
        if url.scheme in HEADER_DROPPING_SCHEMES:
            raise ConfluentTransportError(
                f"Faust app {app.conf.id!r} uses the {url.scheme}:// transport, which drops "
                "record headers (the ce_* headers of Streams envelopes): use kafka:// "
                f"(aiokafka), e.g. broker='kafka://{url.host}:{url.port or 9092}'"
            )
