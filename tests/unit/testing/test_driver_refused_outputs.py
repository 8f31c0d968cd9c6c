"""An output the broker refuses for its record's sake is that record's failure: the work
since the last commit is done again without the record, which goes to the DLQ, and none
of its store writes stays (a DLQ copy replayed after a fix is processed, not dropped as a
duplicate). The TestDriver runs the runtime on in-memory clients that refuse as librdkafka
and the broker do: a record over ``message.max.bytes`` in ``produce``, one over a topic's
limit or for a topic the producer may not write in its delivery report."""

from __future__ import annotations

from collections.abc import Iterator

import factories
import pytest

from streams.envelope import Envelope
from streams.failures.headers import header_text
from streams.schemas import default_catalog
from streams.testing import TestDriver
from streams.topology import Topology, TopologyBuilder, owned

T, V = "order.placed", 2
HOUR = 3600.0
BIG = 1_100_000  # bytes of padding: over librdkafka's default message.max.bytes


class Padding:
    """Pads the order whose id is ``big`` with a line whose sku is ``size`` bytes long,
    until it is ``fixed`` (what a deploy after the incident does)."""

    def __init__(self, big: str, size: int = BIG) -> None:
        self.big = big
        self.size = size
        self.fixed = False

    def __call__(self, env: Envelope) -> Envelope:
        if env.data["order_id"] != self.big or self.fixed:
            return env
        line = {"sku": "x" * self.size, "quantity": 1, "unit_price_cents": 1}
        return env.with_data({**env.data, "items": [line]})


def order(n: int) -> Envelope:
    return factories.order(n, "c-1", key=f"o-{n}")


GUARANTEES = ["at_least_once", "exactly_once"]


def dedup_then_pad(pad: Padding, guarantee: str = "at_least_once") -> Topology:
    b = TopologyBuilder("app", processing_guarantee=guarantee)
    b.source("in", type=T, version=V).dedup(ttl=HOUR, name="once").map(pad, name="pad").to(
        owned("out"), type=T, version=V, name="out"
    )
    return b.build(default_catalog())


@pytest.fixture
def pad() -> Padding:
    return Padding("o-2")


@pytest.fixture(params=GUARANTEES)
def driver(pad: Padding, request: pytest.FixtureRequest) -> Iterator[TestDriver]:
    with TestDriver(dedup_then_pad(pad, request.param)) as d:
        yield d


def order_ids(driver: TestDriver, topic: str = "app-out") -> list[str]:
    return [e.data["order_id"] for e in driver.read(topic)]


def test_an_output_too_large_to_send_dead_letters_its_record_and_the_rest_goes_on(
    driver: TestDriver,
) -> None:
    driver.pipe("in", [order(1), order(2), order(3)])
    assert order_ids(driver) == ["o-1", "o-3"]
    (letter,) = driver.dead_letters
    assert letter.info.error_type == "OutputRefusedError"
    assert letter.info.step == "out"
    assert "MSG_SIZE_TOO_LARGE" in letter.info.message
    assert letter.info.origin.offset == 1
    assert driver.stats.refusals == 1


def test_a_refused_records_dedup_id_is_undone_so_its_replay_is_processed(
    driver: TestDriver, pad: Padding
) -> None:
    big = order(2)
    driver.pipe("in", [order(1), big])
    (letter,) = driver.dead_letters
    pad.fixed = True
    # The letter replayed after the fix: its value and key, as `streams dlq replay` sends
    driver.pipe_raw("in", letter.value, key=letter.key)
    assert order_ids(driver) == ["o-1", "o-2"]
    assert driver.duplicates == 0
    driver.pipe("in", big)  # now it was seen: dedup drops the same id
    assert driver.duplicates == 1


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_a_record_refused_in_its_delivery_report_is_found_alone_then_dead_lettered(
    guarantee: str,
) -> None:
    # The topic takes less than the producer: the broker refuses the write in its report
    # (with its whole batch), so the record is a suspect until its outputs, sent alone,
    # are refused again.
    with TestDriver(dedup_then_pad(Padding("o-2", size=200_000), guarantee)) as driver:
        driver.cluster.limit_message_bytes("app-out", 100_000)
        driver.pipe("in", [order(1), order(2), order(3)])
        assert order_ids(driver) == ["o-1", "o-3"]
        (letter,) = driver.dead_letters
        assert letter.info.error_type == "OutputRefusedError"
        assert "MSG_SIZE_TOO_LARGE" in letter.info.message
        assert driver.stats.refusals == 2  # once a suspect, once refused alone


def test_a_topic_the_app_may_not_write_dead_letters_each_record_for_it() -> None:
    b = TopologyBuilder("app")
    src = b.source("in", type=T, version=V)
    src.filter(lambda e: e.data["total_cents"] % 2 == 0, name="even").to(
        "audit", type=T, version=V, name="audit"
    )
    src.filter(lambda e: e.data["total_cents"] % 2 == 1, name="odd").to(
        owned("out"), type=T, version=V, name="out"
    )
    with TestDriver(b.build(default_catalog())) as driver:
        driver.cluster.deny_writes("audit")
        driver.pipe("in", [order(1), order(2), order(3), order(4)])
        assert order_ids(driver) == ["o-1", "o-3"]
        letters = driver.dead_letters
        assert [letter.info.origin.offset for letter in letters] == [1, 3]
        assert {letter.info.step for letter in letters} == {"audit"}
        assert all("TOPIC_AUTHORIZATION_FAILED" in letter.info.message for letter in letters)


def test_a_dead_letter_larger_than_the_producer_takes_is_cut_to_fit_and_says_so() -> None:
    # An input just under the limit fails: with its error headers it would be over it.
    b = TopologyBuilder("app")

    def reject(env: Envelope) -> Envelope:
        raise ValueError("no")

    b.source("in", type=T, version=V).map(reject, on_error="dlq").to(
        owned("out"), type=T, version=V
    )
    with TestDriver(b.build(default_catalog())) as driver:
        big = order(1).with_data(
            {
                **order(1).data,
                "items": [{"sku": "y" * 999_700, "quantity": 1, "unit_price_cents": 1}],
            }
        )
        driver.pipe("in", big)
        (letter,) = driver.dead_letters
        (record,) = driver.cluster.records("in")
        assert letter.value is not None and record.value is not None
        assert record.value.startswith(letter.value) and len(letter.value) < len(record.value)
        assert header_text(letter.headers, "streams.failure.value_cut") == str(len(record.value))
        assert letter.info.value_cut == len(record.value)
