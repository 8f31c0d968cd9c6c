"""``run_topology``: a topology runs in the background for a test and stops cleanly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.envelope import Envelope
from streams.testing import KafkaIO, TopicFactory, TopologyProcess, unique_topic_name

pytest_plugins = ["pytester"]


def placed(n: int, customer: str) -> Envelope:
    line = {"sku": "s", "quantity": 1, "unit_price_cents": 100 + n}
    data = {
        "order_id": f"o{n}",
        "customer_id": customer,
        "items": [line],
        "total_cents": 100 + n,
        "currency": "EUR",
    }
    return Envelope.new("order.placed", data, version=2, key=customer)


def test_mirror_topology_copies_input_in_per_key_order(
    run_topology: Callable[..., TopologyProcess], make_topic: TopicFactory, kafka_io: KafkaIO
) -> None:
    source = make_topic("orders", partitions=2)
    app = unique_topic_name("mirror")
    proc = run_topology("topology/mirror.py", app_id=app, input=source)
    sent = kafka_io.produce(source, [placed(n, f"c{n % 3}") for n in range(12)])

    got = kafka_io.wait_for_envelopes(f"{app}-mirror", 12, timeout=60)

    assert proc.running
    for customer in ("c0", "c1", "c2"):
        assert [e.id for e in got if e.key == customer] == [e.id for e in sent if e.key == customer]


def test_stop_is_clean_and_says_so(kafka_bootstrap: str, make_topic: TopicFactory) -> None:
    source = make_topic("orders")
    app = unique_topic_name("mirror")
    with TopologyProcess(
        "topology/mirror.py", kafka_bootstrap, app_id=app, settings={"input": source}
    ) as proc:
        proc.wait_started(assigned=True)
        proc.check()  # still running
        assert proc.stop() == 0
    assert not proc.running
    assert proc.stop() == 0  # stopping again reports the same exit


_BROKEN = """
def test_uses_a_topology_that_cannot_start(run_topology):
    run_topology("no-such-topology.py", bootstrap="127.0.0.1:1")
"""


def test_a_topology_that_cannot_start_fails_the_test_with_its_output(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_broken=_BROKEN)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*streams run no-such-topology.py* exited with 1*", "*no topology file at*"]
    )
