"""Request-reply on the serving side, in the TestDriver: replies go to the topic a request
names with its correlation id, failed requests get an error reply beside their dead letter,
and a record that is no request goes to the DLQ."""

from __future__ import annotations

from streams.envelope import Envelope
from streams.examples import example_path
from streams.failures.headers import parse_failure_headers
from streams.schemas.builtin import ERROR_TYPE
from streams.testing import TestDriver
from streams.topology import ProcessorContext, TopologyBuilder, load_topology
from streams.topology.reply import request_headers

QUOTES = "quotes"
REPLIES = "caller-replies"


def request(sku: str, quantity: int = 2, customer: str = "c-0007", **fields: str) -> Envelope:
    data = {"sku": sku, "quantity": quantity, "customer_id": customer}
    return Envelope.new("quote.requested", data, key=sku, source="caller", **fields)


def given(env: Envelope) -> Envelope:
    d = env.data
    data = {"sku": d["sku"], "quantity": d["quantity"], "unit_price_cents": 1}
    return env.follow("quote.given", {**data, "total_cents": d["quantity"]})


def quotes_driver(retry: str = "1s") -> TestDriver:
    topology = load_topology(example_path("quotes"), params={"input": QUOTES, "retry": retry})
    return TestDriver(topology)


def test_a_reply_goes_to_the_topic_the_request_names_with_its_correlation_id() -> None:
    with quotes_driver() as d:
        asked = request("tea", 3)
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, asked.id))
        (reply,) = d.read(REPLIES)
        assert reply.type == "quote.given"
        assert reply.data["total_cents"] == 3 * 450
        assert reply.correlation_id == asked.id
        assert reply.causation_id == asked.id
        assert d.dead_letters == []


def test_the_reply_carries_the_correlation_id_the_request_header_names() -> None:
    with quotes_driver() as d:
        asked = request("mug", correlation_id="checkout-17")
        # One business correlation id; the requester asks for replies under its own.
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, "request-1"))
        (reply,) = d.read(REPLIES)
        assert reply.correlation_id == "request-1"


def test_a_refused_request_gets_an_error_reply_beside_its_dead_letter() -> None:
    with quotes_driver() as d:
        asked = request("spoon")
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, asked.id))
        (dead,) = d.dead_letters
        assert parse_failure_headers(dead.headers).error_type == "UnknownSku"
        (error,) = d.read(REPLIES)
        assert error.type == ERROR_TYPE
        assert error.correlation_id == asked.id
        assert error.causation_id == asked.id
        assert error.key == "spoon"
        assert error.data["exception"].endswith("UnknownSku")
        assert error.data["message"] == "no price for sku 'spoon'"
        assert error.data["step"] == "quote"
        assert error.data["dead_letter_topic"] == dead.topic
        assert (error.data["topic"], error.data["offset"]) == (QUOTES, 0)


def test_a_retried_request_gets_its_error_reply_only_after_the_last_tier() -> None:
    attempts = []

    def unavailable(env: Envelope) -> Envelope:
        attempts.append(env.id)
        raise TimeoutError("price service did not answer")

    b = TopologyBuilder("svc", retry="1s, 1s")
    b.source(QUOTES, type="quote.requested", version=1).map(unavailable, name="ask").reply()
    with TestDriver(b.build()) as d:
        asked = request("tea")
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, asked.id))
        assert d.read(REPLIES) == []  # in retry tier 1: it may still succeed
        d.advance_time(1_000)
        assert d.read(REPLIES) == []  # tier 2
        d.advance_time(1_000)
        assert len(attempts) == 3
        (error,) = d.read(REPLIES)
        assert error.type == ERROR_TYPE
        assert error.data["attempts"] == 3
        assert error.data["exception"] == "TimeoutError"
        assert len(d.dead_letters) == 1


def test_a_record_that_is_no_request_goes_to_the_dlq_and_the_partition_moves_on() -> None:
    with quotes_driver() as d:
        d.pipe(QUOTES, request("tea"))  # no reply-to header
        later = request("pot")
        d.pipe(QUOTES, later, headers=request_headers(REPLIES, later.id))
        (dead,) = d.dead_letters
        info = parse_failure_headers(dead.headers)
        assert info.error_type == "NotARequestError"
        assert info.step == "reply"
        (reply,) = d.read(REPLIES)
        assert reply.correlation_id == later.id


def test_a_processor_replies_with_ctx_reply_and_forwards_too() -> None:
    def answer(env: Envelope, ctx: ProcessorContext) -> Envelope:
        ctx.reply(given(env))
        return env

    b = TopologyBuilder("svc")
    b.source(QUOTES, type="quote.requested", version=1).process(answer).to(
        "audit", type="quote.requested", version=1
    )
    with TestDriver(b.build()) as d:
        asked = request("tea")
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, asked.id))
        assert [e.id for e in d.read("audit")] == [asked.id]
        (reply,) = d.read(REPLIES)
        assert (reply.type, reply.correlation_id) == ("quote.given", asked.id)


def test_a_failed_attempt_sends_no_reply() -> None:
    def reply_then_fail(env: Envelope, ctx: ProcessorContext) -> None:
        ctx.reply(given(env))
        raise RuntimeError("after the reply")

    b = TopologyBuilder("svc", on_error="dlq")
    b.source(QUOTES, type="quote.requested", version=1).process(reply_then_fail).to(
        "audit", type="quote.requested", version=1
    )
    with TestDriver(b.build()) as d:
        asked = request("tea")
        d.pipe(QUOTES, asked, headers=request_headers(REPLIES, asked.id))
        (only,) = d.read(REPLIES)  # the error reply, not the reply the attempt made
        assert only.type == ERROR_TYPE
        assert only.data["message"] == "after the reply"
