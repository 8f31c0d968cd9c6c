"""Section ``request_reply``: request round trips through ``streams run topology/quotes.py``.

One ``Requester`` sends quote requests at ``RATE`` per second (what is due every 2 ms,
encoded as it goes), each timed from ``submit`` until its reply completes its future, on
the requester's reply thread; the first ``WARM_S`` seconds are not timed (the broker's JIT,
connections and batches settle). Beside it the same load on the machine's floor: a bare
confluent-kafka loop that writes each request back, unchanged, to the topic its
``reply-to`` header names (the request envelope carries its own correlation id, so it
serves as its reply), with the runtime's producer settings. Target: p50 at most 10 ms.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import Future
from typing import Any, cast

from streams.bench.core import (
    PARTITIONS,
    TICK_S,
    BenchContext,
    Row,
    drop_app_topics,
    relay_clients,
    start_instance,
    stop_process,
)
from streams.envelope import Envelope
from streams.examples import example_path
from streams.patterns import Requester
from streams.testing.topics import unique_topic_name
from streams.topology.reply import REPLY_TO

SECTION = "request_reply"
QUOTES = example_path("quotes")
RATE = 1_000
# The first seconds at the rate are not timed: a broker just started is slow for its first
# half-minute under load (its JIT: produce acks at p50 74 ms, then 4.5), and each path
# settles its connections and batches.
WARM_S = 20
SKUS = ("tea", "mug", "pot", "kettle")


def _request(n: int) -> Envelope:
    data = {"sku": SKUS[n % len(SKUS)], "quantity": 1 + n % 5, "customer_id": f"c-{n % 500:04d}"}
    return Envelope.new("quote.requested", data, key=f"c-{n % 500:04d}", source="bench")


def _echo(bootstrap: str, source: str, _target: str) -> None:
    """Each request written back as it is to its ``reply-to`` topic: the floor."""
    consumer, producer = relay_clients(bootstrap)
    consumer.subscribe([source])
    while True:
        for msg in consumer.consume(1_000, timeout=0) or consumer.consume(1, timeout=0.1):
            if msg.error() is None:
                headers = msg.headers() or []
                reply_to = cast(bytes, dict(headers)[REPLY_TO]).decode()
                producer.produce(reply_to, msg.value(), msg.key(), headers=headers)
        producer.poll(0)


def round_trips(
    ctx: BenchContext, topic: str, reply_topic: str, seconds: int, warm: int
) -> list[float]:
    """Milliseconds from ``submit`` to reply of each request after the first ``warm``
    seconds (see the docstring)."""
    latencies: list[float] = []
    with Requester(ctx.bootstrap, reply_topic=reply_topic, timeout=30) as requester:
        requester.request(topic, _request(0), timeout=120)  # the server answers: warm

        def timed(sent: float) -> Any:
            def done(future: Future[Envelope]) -> None:
                if future.exception() is None:
                    latencies.append((time.perf_counter() - sent) * 1000)

            return done

        total = RATE * (seconds + warm)
        futures = []
        start, i = time.perf_counter(), 0
        while i < total:
            now = time.perf_counter()
            due = min(total, int((now - start) * RATE) + 1)
            for n in range(i, due):
                future = requester.submit(topic, _request(n))
                if n >= RATE * warm:
                    future.add_done_callback(timed(now))
                futures.append(future)
            i = due
            time.sleep(max(0.0, now + TICK_S - time.perf_counter()))
        failed = sum(1 for f in futures if f.exception() is not None)
    if failed:
        raise RuntimeError(f"{failed} of {total} requests got no reply")
    return sorted(latencies)


def _pct(values: list[float], q: float) -> float:
    return values[min(int(q * len(values)), len(values) - 1)]


def _rows(label: str, latencies: list[float], seconds: int, target: bool = False) -> list[Row]:
    note = f"{RATE:,} requests/s for {seconds} s, {len(latencies):,} timed"
    p50 = _pct(latencies, 0.50)
    return [
        Row(
            SECTION,
            f"round trip p50{label}",
            p50,
            "ms",
            note=note + ("; target <= 10 ms" if target else ""),
        ),
        Row(SECTION, f"round trip p99{label}", _pct(latencies, 0.99), "ms", note=note),
    ]


def run(ctx: BenchContext) -> list[Row]:
    seconds, warm = (3, 2) if ctx.quick else (10, WARM_S)
    requests = ctx.topic("rr-requests", partitions=PARTITIONS)
    app_id = unique_topic_name("bench-quotes")
    proc, _outputs = start_instance(ctx, QUOTES, app_id, requests)
    try:
        served = round_trips(ctx, requests, f"{app_id}-replies", seconds, warm)
    finally:
        stop_process(proc)
        drop_app_topics(ctx, app_id)
    echoed_in = ctx.topic("rr-echo", partitions=PARTITIONS)
    echo = multiprocessing.get_context("fork").Process(
        target=_echo, args=(ctx.bootstrap, echoed_in, ""), daemon=True
    )
    echo.start()
    try:
        replies = ctx.topic("rr-echo-replies", partitions=1)
        bare = round_trips(ctx, echoed_in, replies, seconds, warm)
    finally:
        echo.kill()
        echo.join()
    return [*_rows("", served, seconds, target=True), *_rows(", bare echo loop", bare, seconds)]
