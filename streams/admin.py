"""Thin, typed helpers over confluent-kafka's AdminClient that wait for their results."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from streams.config import client_config
from streams.errors import StreamsError


class TopicError(StreamsError):
    """A topic could not be created, described or deleted."""


class TopicExistsError(TopicError):
    """The topic to create exists already."""


_ADMINS: dict[tuple[str, frozenset[tuple[str, str | int | float]]], AdminClient] = {}


def admin_client(
    bootstrap: str, settings: Mapping[str, str] | None = None, **config: str | int | float
) -> AdminClient:
    """One AdminClient per cluster and config for the whole process (``settings``: the
    user's client settings, ``--config``/``-X``; ``config``: the caller's).

    Admin clients are thread-safe and cheap to keep; making and dropping one per call costs
    a connection each time, and destroying one while its background queue still holds
    events has crashed the interpreter inside librdkafka's callbacks.
    """
    merged = {**config, **(settings or {})}
    key = (bootstrap, frozenset(merged.items()))
    admin = _ADMINS.get(key)
    if admin is None:
        admin = _ADMINS[key] = AdminClient(client_config(bootstrap, merged))
    return admin


def create_topic(
    admin: AdminClient,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    *,
    exist_ok: bool = False,
    timeout: float = 30.0,
    replication_factor: int = 1,
) -> bool:
    """Create ``name`` and wait until the broker's metadata shows it with every leader.

    The controller confirms a creation before every broker knows the topic; waiting for the
    metadata means a producer or consumer started next never sees "unknown topic". With
    ``exist_ok``, a topic another client has just created is waited for the same way.
    ``replication_factor`` -1 takes the broker's ``default.replication.factor``.
    Returns False when the topic existed already (``exist_ok``); raises
    ``TopicExistsError`` for that without ``exist_ok``, ``TopicError`` for other refusals.
    """
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(config or {}),
    )
    future = admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)[name]
    created = True
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicError(f"cannot create topic {name!r}: {err.str()}") from exc
        if not exist_ok:
            raise TopicExistsError(f"topic {name!r} already exists") from exc
        created = False
    _wait_metadata(admin, [name], present=True, timeout=timeout)
    return created


def delete_topics(admin: AdminClient, names: Iterable[str], timeout: float = 30.0) -> None:
    """Delete ``names``; topics that are already gone are not an error."""
    names = list(names)
    if not names:
        return
    futures = admin.delete_topics(names, operation_timeout=timeout, request_timeout=timeout)
    for name, future in futures.items():
        try:
            future.result(timeout=timeout)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise TopicError(f"cannot delete topic {name!r}: {err.str()}") from exc
    _wait_metadata(admin, names, present=False, timeout=timeout)


def delete_app_topics(admin: AdminClient, app_id: str, timeout: float = 30.0) -> list[str]:
    """Delete every topic named ``<app_id>-...``: what an app made (outputs, changelogs,
    retry tiers, DLQs, repartition topics). Returns their names."""
    prefix = f"{app_id}-"
    names = [t for t in admin.list_topics(timeout=timeout).topics if t.startswith(prefix)]
    delete_topics(admin, names, timeout)
    return names


def _wait_metadata(admin: AdminClient, names: list[str], *, present: bool, timeout: float) -> None:
    """Poll metadata until every topic in ``names`` is (or is no longer) served."""
    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(timeout=timeout).topics
        if present:
            done = all(
                n in topics
                and topics[n].error is None
                and topics[n].partitions
                and all(p.leader >= 0 for p in topics[n].partitions.values())
                for n in names
            )
        else:
            done = not any(n in topics for n in names)
        if done:
            return
        if time.monotonic() > deadline:
            state = "appear" if present else "disappear"
            raise TopicError(f"topics {names} did not {state} in metadata within {timeout:.0f} s")
        time.sleep(0.05)
