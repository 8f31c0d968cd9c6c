"""Request-reply on a real broker: one ``Requester``, ``topology/quotes.py`` serving.

A thousand requests in flight at once to two instances, each answered with its own reply;
a server instance killed mid-way (a request gets its reply or ``ReplyTimeout``, never
another's); a refused request answered by an error reply long before its timeout; asyncio;
and, with exactly-once, each request's reply written once however the instances crash.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from cli_runner import streams

from streams.codec import AvroCodec
from streams.envelope import Envelope
from streams.examples import example_path
from streams.patterns import ReplyTimeout, Requester, RequestFailed
from streams.schemas import default_catalog
from streams.testing import TopicFactory, TopicReader, TopologyProcess, wait_until
from streams.topology.loader import import_file

QUOTES = example_path("quotes")
PARTITIONS = 4
SKUS = ["tea", "mug", "pot", "kettle"]


def request(n: int, sku: str | None = None) -> Envelope:
    data = {"sku": sku or SKUS[n % len(SKUS)], "quantity": 1 + n % 5, "customer_id": f"c-{n:04d}"}
    return Envelope.new("quote.requested", data, key=f"k-{n % 97}", source="test")


def expected(asked: Envelope) -> dict[str, Any]:
    """What topology/quotes.py answers, computed by its own function."""
    return dict(import_file(QUOTES).quote(asked).data)


def check_reply(asked: Envelope, reply: Envelope) -> None:
    assert reply.correlation_id == asked.id
    assert reply.causation_id == asked.id
    assert dict(reply.data) == expected(asked)


Serve = Callable[..., list[TopologyProcess]]


@pytest.fixture
def quotes_topic(make_topic: TopicFactory) -> str:
    return make_topic(partitions=PARTITIONS)


@pytest.fixture
def serve(kafka_bootstrap: str, app_id: str, quotes_topic: str) -> Iterator[Serve]:
    """``serve(n, *args)``: ``n`` instances of the quotes topology, each owning
    partitions; stopped (or found killed) after the test."""
    started: list[TopologyProcess] = []

    def start(instances: int, *args: str) -> list[TopologyProcess]:
        procs = [
            TopologyProcess(
                QUOTES, kafka_bootstrap, app_id=app_id, settings={"input": quotes_topic}, args=args
            ).start()
            for _ in range(instances)
        ]
        started.extend(procs)
        for proc in procs:
            proc.wait_started(assigned=True)
        return procs

    yield start
    for proc in started:
        proc.close()


def test_a_thousand_requests_in_flight_each_get_their_own_reply(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    serve(2)
    with Requester(kafka_bootstrap, reply_topic=f"{app_id}-replies", timeout=60) as requester:
        asked = [request(n) for n in range(1_000)]
        futures = [requester.submit(quotes_topic, env) for env in asked]
        assert requester.in_flight > 100  # sent without waiting for replies
        for env, future in zip(asked, futures, strict=True):
            check_reply(env, future.result())
        assert requester.in_flight == 0


def test_a_refused_request_fails_at_once_with_the_servers_error(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    serve(1)
    with Requester(kafka_bootstrap, reply_topic=f"{app_id}-replies", timeout=60) as requester:
        fine = request(1)
        check_reply(fine, requester.request(quotes_topic, fine))
        with pytest.raises(RequestFailed, match="no price for sku 'spoon'") as failed:
            requester.request(quotes_topic, request(2, sku="spoon"))
        error = failed.value.error
        assert error["exception"].endswith("UnknownSku")
        assert error["step"] == "quote"
        assert error["dead_letter_topic"] == f"{app_id}-{quotes_topic}-dlq"
        with pytest.raises(ReplyTimeout):
            requester.request("quotes-nobody-serves", request(3), timeout=1)


def test_asyncio_requests_wait_without_blocking_the_loop(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    serve(1)
    asked = [request(n) for n in range(50)]

    async def ask_all(requester: Requester) -> list[Envelope]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        replies = await asyncio.gather(*(requester.request_async(quotes_topic, e) for e in asked))
        ticker.cancel()
        assert ticks > 1  # the loop ran while the replies were awaited
        return replies

    with Requester(kafka_bootstrap, reply_topic=f"{app_id}-replies", timeout=60) as requester:
        for env, reply in zip(asked, asyncio.run(ask_all(requester)), strict=True):
            check_reply(env, reply)


def outcomes(asked: list[Envelope], futures: list[Future[Envelope]]) -> Counter[str]:
    """Each request's reply checked against the request; how many were answered and how
    many timed out (anything else fails the test)."""
    seen: Counter[str] = Counter()
    for env, future in zip(asked, futures, strict=True):
        try:
            reply = future.result()
        except ReplyTimeout:
            seen["timed out"] += 1
            continue
        check_reply(env, reply)
        seen["answered"] += 1
    return seen


def test_a_server_killed_mid_way_leaves_replies_or_timeouts_never_anothers_reply(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    first, _second = serve(2)
    with Requester(kafka_bootstrap, reply_topic=f"{app_id}-replies", timeout=3) as requester:
        before = [request(n) for n in range(300)]
        answered = [requester.submit(quotes_topic, env) for env in before]
        assert outcomes(before, answered) == {"answered": 300}
        first.kill()
        # Until the group's session times out (10 s), the killed instance's partitions have
        # no reader: their requests time out; the survivor's are answered.
        during = [request(n) for n in range(300, 600)]
        futures = [requester.submit(quotes_topic, env) for env in during]
        seen = outcomes(during, futures)
        assert seen["answered"] > 0 and seen["timed out"] > 0, seen
        # Once the survivor owns every partition, every request is answered again; the
        # late replies to the ones that timed out are dropped, not handed to anyone.
        wait_until(lambda: _all_answered(requester, quotes_topic), timeout=60)


def _all_answered(requester: Requester, topic: str) -> bool:
    asked = [request(random.randrange(10_000, 20_000)) for _ in range(20)]
    futures = [requester.submit(topic, env, timeout=5) for env in asked]
    return outcomes(asked, futures) == {"answered": 20}


def test_exactly_once_writes_each_reply_once_through_a_sigkill(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    procs = serve(2, "--guarantee", "exactly_once")
    reply_topic = f"{app_id}-replies"
    with Requester(kafka_bootstrap, reply_topic=reply_topic, timeout=90) as requester:
        asked = [request(n) for n in range(600)]
        futures = [requester.submit(quotes_topic, env) for env in asked[:300]]
        wait_until(lambda: sum(f.done() for f in futures) >= 100, timeout=60)
        procs[0].kill()  # mid-way: its open transaction is aborted
        futures += [requester.submit(quotes_topic, env) for env in asked[300:]]
        assert outcomes(asked, futures) == {"answered": 600}
    with TopicReader(
        kafka_bootstrap, reply_topic, config={"isolation.level": "read_committed"}
    ) as r:
        wait_until(lambda: (r.poll(), len(r.records) >= 600)[1], timeout=30)
        r.poll(1.0)  # anything written twice would be here by now
        codec = AvroCodec(default_catalog())
        correlations = Counter(
            codec.decode(m.value(), m.headers()).correlation_id for m in r.records
        )
    assert set(correlations) == {env.id for env in asked}
    assert set(correlations.values()) == {1}


def test_the_request_command_prints_each_reply_and_reports_a_refusal_in_one_line(
    kafka_bootstrap: str, serve: Serve, app_id: str, quotes_topic: str
) -> None:
    serve(1)
    lines = [
        {"sku": "tea", "quantity": 3, "customer_id": "c-0001"},
        {"sku": "spoon", "quantity": 1, "customer_id": "c-0002"},
        {"sku": "pot", "quantity": 1, "customer_id": "c-0003"},
    ]
    command = ["request", quotes_topic, "--type", "quote.requested@1"]
    command += ["--reply-to", f"{app_id}-replies", "--key", "sku"]
    requests = "\n".join(json.dumps(line) for line in lines)
    result = streams(*command, stdin=requests, bootstrap=kafka_bootstrap)
    assert result.returncode == 1, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["type"], r["data"]["total_cents"]) for r in replies] == [
        ("quote.given", 3 * 405),  # gold: 10% off
        ("quote.given", 3900),
    ]
    assert replies[0]["key"] == "tea"
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2, result.stderr  # the refused request, then the summary
    request_id = errors[0].split()[1].removesuffix(":")
    assert errors[0] == (
        f"request {request_id}: error reply from step 'quote': "
        f"{QUOTES.stem}.UnknownSku: no price for sku 'spoon' "
        f"(dead-lettered to {app_id}-{quotes_topic}-dlq)"
    )
    assert errors[1] == "error: 1 of 3 request(s) failed: 1 error reply"

    unserved = streams(
        *command[:1], "quotes-nobody-serves", *command[2:], "--wait", "1",
        stdin=json.dumps(lines[0]), bootstrap=kafka_bootstrap,
    )  # fmt: skip
    assert unserved.returncode == 1
    errors = unserved.stderr.strip().splitlines()
    request_id = errors[0].split()[1].removesuffix(":")
    assert errors == [
        f"request {request_id}: no reply within 1 s",  # the id once
        "error: 1 of 1 request(s) failed: 1 no reply",
    ]
