"""The shell step of the demo: topics, envelopes and garbage, with the ``streams`` command.

Runs the real commands as a user types them (``python -m streams``, against the demo's
broker and the example schemas): ``streams topics create``, ``streams produce`` of two
orders from JSON lines, ``streams produce`` of a line that breaks the schema (refused with
the line and the field), a garbage record written with a bare producer, then
``streams consume``, which shows the two envelopes decoded and the garbage raw with its
reason. Raises RuntimeError when a command does not do what it promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from confluent_kafka import Producer

from streams.demo.context import DemoContext

_ORDERS = [
    {"order_id": "o-1", "customer_id": "c-0001",
     "items": [{"sku": "tea", "quantity": 2, "unit_price_cents": 450}], "total_cents": 900},
    {"order_id": "o-2", "customer_id": "c-0002",
     "items": [{"sku": "mug", "quantity": 1, "unit_price_cents": 1200}], "total_cents": 1200},
]  # fmt: skip
_BAD_LINE = '{"order_id": "o-3", "customer_id": "c-3", "items": [], "total_cents": "12"}'


def step_shell(ctx: DemoContext) -> None:
    """Create a topic, produce envelopes (and a refused line), consume them back."""
    topic = ctx.topic("shell-orders")
    _streams(ctx, "topics", "create", topic, "--partitions", "2")
    lines = "".join(json.dumps(order) + "\n" for order in _ORDERS)
    _streams(ctx, "produce", topic, "--type", "order.placed@2", "--key", "order_id", stdin=lines)
    refused = _streams(ctx, "produce", topic, "--type", "order.placed@2", stdin=_BAD_LINE, ok=1)
    garbage = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all"})
    garbage.produce(topic, key=b"o-9", value=b"\x00not an envelope", partition=0)
    if garbage.flush(30):
        raise RuntimeError("demo: the garbage record was not acknowledged")
    shown = [json.loads(line) for line in _streams(ctx, "consume", topic).splitlines()]
    decoded = sorted(r["data"]["order_id"] for r in shown if "error" not in r)
    raw = [r for r in shown if "error" in r]
    ctx.say(
        "the streams command",
        f"`streams consume {topic}`: {len(decoded)} envelopes decoded ({', '.join(decoded)}), "
        f"{len(raw)} garbage record shown raw",
    )
    ctx.console.print(
        f"   after `streams topics create` and `streams produce --type order.placed@2` of "
        f"{len(_ORDERS)} JSON lines and a garbage record",
        highlight=False,
    )
    ctx.console.print(f"   refused line: {refused.strip()}", highlight=False, soft_wrap=True)
    if raw:
        ctx.console.print(f"   garbage: {raw[0]['error']}", highlight=False, soft_wrap=True)
    if decoded != ["o-1", "o-2"] or len(raw) != 1:
        raise RuntimeError(f"demo consume showed {shown}")


def _streams(ctx: DemoContext, *args: str, stdin: str = "", ok: int = 0) -> str:
    """Run ``streams ARGS``; its stdout (its stderr when it is expected to fail)."""
    env: dict[str, Any] = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": ctx.bootstrap}
    done = subprocess.run(
        [sys.executable, "-m", "streams", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if done.returncode != ok:
        raise RuntimeError(f"demo: `streams {' '.join(args)}` exited {done.returncode}: "
                           f"{done.stderr.strip()}")  # fmt: skip
    return done.stdout if ok == 0 else done.stderr
