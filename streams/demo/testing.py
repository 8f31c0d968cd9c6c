"""The test-kit step of the demo: waiting on a topic, and what a timeout says.

Writes 3 records, waits for them with ``wait_for_records``, then asks for a 4th that never
comes and shows the ``WaitTimeoutError`` message (a 1 s wait); tells whether Docker answers,
i.e. whether ``pytest --kafka container`` would run or skip. Raises RuntimeError when the
wait for the missing record returns instead of timing out.
"""

from __future__ import annotations

from streams.cluster import admin_client, create_topic
from streams.demo.context import DemoContext
from streams.testing.docker_daemon import default_image, docker_unavailable_reason
from streams.testing.produce import produce_records
from streams.testing.wait import WaitTimeoutError, wait_for_records


def step_testing(ctx: DemoContext) -> None:
    """Wait for 3 records written, then for a 4th never written; report on Docker."""
    topic = ctx.topic("test-kit")
    create_topic(admin_client(ctx.bootstrap), topic, partitions=2)
    produce_records(ctx.bootstrap, topic, [(f"k{i}", f"v{i}".encode(), None) for i in range(3)])
    got = wait_for_records(ctx.bootstrap, topic, 3, timeout=30)
    try:
        wait_for_records(ctx.bootstrap, topic, 4, timeout=1)
    except WaitTimeoutError as exc:
        said = str(exc).split(", the last ones")[0]
    else:
        raise RuntimeError("demo: a wait for a 4th record that was never written returned")
    ctx.say(
        "test kit",
        f"wait_for_records returned the {len(got)} records written; asking for 4 fails "
        f"with WaitTimeoutError: {said}",
    )
    reason = docker_unavailable_reason()
    if reason is None:
        ctx.console.print(
            f"   Docker answers: `pytest --kafka container` would run {default_image()}"
        )
    else:
        ctx.console.print(f"   no Docker here ({reason}): container tests would skip")
