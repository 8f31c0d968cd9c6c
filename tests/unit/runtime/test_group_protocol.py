"""The consumer group protocol the user chooses (classic or KIP-848's consumer) decides
how the runtime's consumer joins: the settings librdkafka refuses are never set by us,
and a user who sets one gets one line naming it. Each config is checked by librdkafka
itself: creating a consumer (no broker needed) refuses what the protocol does not take."""

from __future__ import annotations

import re
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException

from streams.config import (
    CLASSIC_ONLY,
    ClientConfigError,
    client_config,
    client_settings,
    incremental_rebalances,
)
from streams.pipeline.failure import needs_range_assignor
from streams.runtime.config import RuntimeConfig, split_client_overrides
from streams.topology import TopologyBuilder, owned


def runtime_config(*items: str, **fields: Any) -> RuntimeConfig:
    client, consumer, producer = split_client_overrides(client_settings(None, items))
    return RuntimeConfig(
        "127.0.0.1:1", client=client, consumer=consumer, producer=producer, **fields
    )


def librdkafka_takes(config: dict[str, Any]) -> None:
    Consumer(config).close()  # raises KafkaException for a setting the protocol refuses


def test_classic_is_cooperative_sticky_with_a_short_session_and_a_static_member() -> None:
    config = runtime_config(static_membership=True).consumer_config(
        "app", group_instance_id="app-0-abc"
    )
    assert config["partition.assignment.strategy"] == "cooperative-sticky"
    assert config["session.timeout.ms"] == 10_000
    assert config["group.instance.id"] == "app-0-abc"
    assert "group.remote.assignor" not in config
    librdkafka_takes(config)


def test_classic_co_located_partitions_take_the_range_assignor() -> None:
    config = runtime_config().consumer_config("app", range_assignor=True)
    assert config["partition.assignment.strategy"] == "range"
    assert "group.instance.id" not in config  # no identity given: a dynamic member


@pytest.mark.parametrize(
    "item",
    ["group.protocol=consumer", "consumer.group.protocol=consumer", "group.protocol=CONSUMER"],
)
@pytest.mark.parametrize("range_assignor", [False, True])
def test_the_consumer_protocol_sets_nothing_it_refuses(item: str, range_assignor: bool) -> None:
    config = runtime_config(item, static_membership=True).consumer_config(
        "app", range_assignor=range_assignor, group_instance_id="app-0-abc"
    )
    assert not set(CLASSIC_ONLY) & set(config)
    # the broker's assignor where partitions must be co-located, else its default (uniform)
    assert config.get("group.remote.assignor") == ("range" if range_assignor else None)
    # a static member restarted after a crash is refused (fatal) until its predecessor
    # expires: never static on this protocol
    assert "group.instance.id" not in config
    librdkafka_takes(config)


def test_an_instance_is_a_dynamic_member_unless_asked() -> None:
    config = runtime_config().consumer_config("app", group_instance_id="app-0-abc")
    assert "group.instance.id" not in config
    librdkafka_takes(config)


def test_the_users_classic_settings_win() -> None:
    config = runtime_config(
        "consumer.partition.assignment.strategy=roundrobin", "consumer.session.timeout.ms=6000"
    ).consumer_config("app", range_assignor=True)
    assert config["partition.assignment.strategy"] == "roundrobin"
    assert config["session.timeout.ms"] == "6000"


@pytest.mark.parametrize(
    ("items", "range_assignor", "incremental"),
    [
        ((), False, True),  # cooperative-sticky
        ((), True, False),  # range: eager
        (("consumer.partition.assignment.strategy=roundrobin",), False, False),
        (("consumer.partition.assignment.strategy=cooperative-sticky",), True, True),
        (("group.protocol=consumer",), False, True),  # every KIP-848 group
        (("group.protocol=consumer",), True, True),
    ],
)
def test_the_runtime_knows_whether_its_group_assigns_incrementally(
    items: tuple[str, ...], range_assignor: bool, incremental: bool
) -> None:
    """The rebalance callback starts the partitions itself, with ``incremental_assign`` or
    ``assign``: librdkafka refuses the one that is not its group's."""
    config = runtime_config(*items).consumer_config("app", range_assignor=range_assignor)
    assert incremental_rebalances(config) is incremental
    assert incremental_rebalances({}) is False  # librdkafka's default: range,roundrobin


@pytest.mark.parametrize("key", sorted(CLASSIC_ONLY))
@pytest.mark.parametrize("kind", ["", "consumer."])
def test_a_setting_the_consumer_protocol_refuses_is_one_clear_error(key: str, kind: str) -> None:
    value = {"partition.assignment.strategy": "range", "group.protocol.type": "consumer"}
    config = runtime_config("group.protocol=consumer", f"{kind}{key}={value.get(key, '1000')}")
    with pytest.raises(
        ClientConfigError, match=rf"^{re.escape(key)} cannot be set with group\.protocol"
    ):
        config.consumer_config("app")


def test_librdkafka_refuses_exactly_what_we_refuse() -> None:
    """``CLASSIC_ONLY`` is librdkafka's list: each fails a consumer's creation."""
    for key, value in {
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 2_000,
        "partition.assignment.strategy": "range",
        "group.protocol.type": "consumer",
    }.items():
        config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", key: value}
        with pytest.raises(KafkaException, match=re.escape(key)):
            Consumer({**config, "group.protocol": "consumer"})
        librdkafka_takes({**config, "group.protocol": "classic"})
    assert set(CLASSIC_ONLY) == {
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
        "group.protocol.type",
    }


def test_every_client_refuses_them_not_only_the_runtimes() -> None:
    """Replay, offsets and lag build their clients with ``client_config`` too."""
    settings = {"group.protocol": "consumer", "heartbeat.interval.ms": "500"}
    with pytest.raises(ClientConfigError, match=r"heartbeat\.interval\.ms"):
        client_config("127.0.0.1:1", settings)
    client_config("127.0.0.1:1", {"group.protocol": "classic", "heartbeat.interval.ms": "500"})


def test_retry_policies_ask_for_the_range_assignor() -> None:
    def topology(retry: str | None) -> TopologyBuilder:
        builder = TopologyBuilder("pay", retry=retry)
        builder.source("payments", type="payment.captured", version=1).map(
            lambda e: e, name="same"
        ).to(owned("out"), type="payment.captured", version=1)
        return builder

    assert not needs_range_assignor(topology(None).build())
    assert needs_range_assignor(topology("1s").build())
