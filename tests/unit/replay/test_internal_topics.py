"""``lag`` and ``offsets show`` list each input with the internal topics that serve it."""

from __future__ import annotations

from streams.failures.topics import dlq_topic, retry_topic
from streams.replay.internal import TopicRole, by_input, serves_label


def _rows(app: str, topics: list[str]) -> list[tuple[str, str | None, bool]]:
    return [(r.topic, r.serves, r.internal) for r in by_input(app, topics)]


def test_each_input_comes_first_then_its_tiers_by_number_then_its_dlq() -> None:
    tiers = [retry_topic("shop", "orders", n) for n in (10, 2, 1)]
    topics = [*tiers, dlq_topic("shop", "orders"), "payments", "orders", "shop-x-retry-1"]
    assert _rows("shop", topics) == [
        ("orders", None, False),
        ("shop-orders-retry-1", "orders", True),
        ("shop-orders-retry-2", "orders", True),
        ("shop-orders-retry-10", "orders", True),
        ("shop-orders-dlq", "orders", True),
        ("payments", None, False),
        ("shop-x-retry-1", "x", True),  # its input has no commit: listed where it would be
    ]


def test_an_owned_input_has_its_tiers_under_it_with_the_app_id_once() -> None:
    owned = "shop-rekeyed"
    assert _rows("shop", [retry_topic("shop", owned, 1), owned]) == [
        (owned, None, False),
        ("shop-rekeyed-retry-1", owned, True),
    ]


def test_a_repartition_topic_goes_under_the_only_input_else_on_its_own() -> None:
    repartition = "shop-by-user-repartition"
    tier = retry_topic("shop", repartition, 1)
    assert _rows("shop", ["orders", repartition, tier]) == [
        ("orders", None, False),
        (repartition, "orders", True),
        (tier, repartition, True),
    ]
    assert _rows("shop", ["orders", "payments", tier, repartition]) == [
        ("orders", None, False),
        ("payments", None, False),
        (repartition, None, True),
        (tier, repartition, True),
    ]
    roles = by_input("shop", ["orders", "payments", repartition])
    assert [serves_label(r.serves, r.internal) for r in roles] == [
        "",
        "",
        "internal",
    ]


def test_a_group_that_is_no_apps_lists_its_topics_sorted_as_inputs() -> None:
    assert by_input("g", ["b-retry-1", "a-dlq", "a"]) == [
        TopicRole("a", None, False),
        TopicRole("a-dlq", None, False),
        TopicRole("b-retry-1", None, False),
    ]
