"""``Requester``: send a request over a topic and wait for its reply.

    with Requester(bootstrap, reply_topic="shop-replies") as requester:
        reply = requester.request("quotes", Envelope.new("quote.requested", {...}))
        futures = [requester.submit("quotes", env) for env in many]  # all in flight at once
        reply = await requester.request_async("quotes", env)          # asyncio

A request is written to its topic with two headers (``streams.topology.reply``):
``reply-to`` names the requester's reply topic and ``reply-correlation-id`` the correlation
id the reply will carry: the request envelope's (its id when it has none, which is then set
on the request as written). Two requests in flight may not share a correlation id
(ValueError).

Replies: one consumer per requester reads the reply topic, every partition, assigned (no
consumer group: a requester that comes or goes rebalances no one), from the end offsets it
found when it started; its own thread matches each reply to its request by correlation id
and completes the request's future. Replies to requests that timed out, or to another
requester on a shared reply topic, are dropped with a DEBUG line; a record of the reply
topic that is no envelope, with a WARNING.

- ``request``/``request_async`` return the reply envelope; they raise ``ReplyTimeout``
  when none came within ``timeout`` seconds, ``RequestFailed`` when the reply is an error
  reply (the server dead-lettered the request), ``RequestNotSent`` when the broker refused
  the request, ``RequesterClosed`` when the requester closed first.
- The reply topic is created when missing (``partitions``, short retention: replies are
  read within seconds or never).
- Blocking: the constructor waits for the reply topic's metadata (up to
  ``broker_timeout`` seconds a request to the broker); ``request`` for the
  reply; ``submit`` only when the producer's queue is full; ``close`` for writes in flight.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, InvalidStateError
from dataclasses import replace
from typing import Any

from confluent_kafka import OFFSET_END, KafkaError, KafkaException, TopicPartition

from streams.cluster import create_topic
from streams.codec import AvroCodec, Codec, DecodeError
from streams.config import client_config
from streams.envelope import Envelope
from streams.logs import get_logger
from streams.patterns.errors import ReplyTimeout, RequesterClosed, RequestFailed, RequestNotSent
from streams.runtime.clients import Clients, KafkaClients
from streams.schemas import default_catalog
from streams.schemas.builtin import ERROR_TYPE
from streams.topology.reply import request_headers

DEFAULT_TIMEOUT_S = 30.0
REPLY_RETENTION_MS = 3_600_000
_BATCH = 500
_IDLE_S = 0.05  # the reply thread's longest wait: how late a timeout may be noticed

_log = get_logger("streams.patterns.requester")


class Requester:
    """Sends requests and completes each with its reply (see the module docstring).
    Thread-safe: any thread may send; the replies are read on the requester's own."""

    def __init__(
        self,
        bootstrap: str,
        *,
        reply_topic: str,
        settings: Mapping[str, str] | None = None,
        codec: Codec | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        partitions: int = 1,
        clients: Clients | None = None,
        broker_timeout: float = 30.0,
    ) -> None:
        self.reply_topic = reply_topic
        self.timeout = timeout
        self._broker_timeout = broker_timeout
        self._codec = codec or AvroCodec(default_catalog())
        clients = clients or KafkaClients(bootstrap, settings)
        create_topic(
            clients.admin(),
            reply_topic,
            partitions=partitions,
            config={"retention.ms": str(REPLY_RETENTION_MS)},
            exist_ok=True,
            timeout=broker_timeout,
        )
        producer = {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 1,  # a request waits for its reply: send it at once
            "compression.type": "lz4",
            "partitioner": "murmur2_random",  # Java's: a key's requests on one partition
        }
        self._producer = clients.producer(client_config(bootstrap, settings, **producer))
        consumer = {
            "group.id": f"{reply_topic}-requester",  # never joined: partitions are assigned
            "enable.auto.commit": False,
            "isolation.level": "read_committed",  # replies of exactly-once servers: committed
        }
        self._consumer = clients.consumer(client_config(bootstrap, settings, **consumer))
        self._consumer.assign(self._reply_ends())
        self._lock = threading.Lock()
        self._pending: dict[str, Future[Envelope]] = {}
        self._deadlines: list[tuple[float, int, str, Future[Envelope]]] = []
        self._order = itertools.count()  # ties in the heap of deadlines
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="requester-replies", daemon=True)
        self._thread.start()

    def _reply_ends(self) -> list[TopicPartition]:
        """Every partition of the reply topic at its end offset now: a reply written after
        this is read, whenever the consumer first fetches."""
        metadata = self._consumer.list_topics(self.reply_topic, timeout=self._broker_timeout)
        ends = []
        for partition in sorted(metadata.topics[self.reply_topic].partitions):
            tp = TopicPartition(self.reply_topic, partition)
            _low, high = self._consumer.get_watermark_offsets(tp, timeout=self._broker_timeout)
            ends.append(
                TopicPartition(self.reply_topic, partition, high if high >= 0 else OFFSET_END)
            )
        return ends

    # -- sending ---------------------------------------------------------------------------
    def submit(
        self, topic: str, request: Envelope, *, timeout: float | None = None
    ) -> Future[Envelope]:
        """Send ``request`` to ``topic``; the future completes with its reply (or one of
        the errors of the module docstring) within ``timeout`` seconds (default: the
        requester's)."""
        if self._closed.is_set():
            raise RequesterClosed("the requester is closed")
        if request.correlation_id is None:
            request = replace(request, correlation_id=request.id)
        correlation = request.correlation_id
        assert correlation is not None
        value, headers = self._codec.encode(request)
        future: Future[Envelope] = Future()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._lock:
            if correlation in self._pending:
                raise ValueError(f"a request with correlation id {correlation} is in flight")
            self._pending[correlation] = future
            heapq.heappush(self._deadlines, (deadline, next(self._order), correlation, future))

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                self._complete(correlation, future, RequestNotSent(f"{topic}: {err.str()}"))

        key = request.key.encode() if request.key is not None else None
        all_headers: Any = [*headers, *request_headers(self.reply_topic, correlation)]
        while True:
            try:
                self._producer.produce(
                    topic, value, key, on_delivery=delivered, headers=all_headers
                )
                break
            except BufferError:  # the local queue is full: wait for room
                self._producer.poll(0.05)
        return future

    def request(self, topic: str, request: Envelope, *, timeout: float | None = None) -> Envelope:
        """Send ``request`` and wait for its reply (see ``submit``)."""
        return self.submit(topic, request, timeout=timeout).result()

    async def request_async(
        self, topic: str, request: Envelope, *, timeout: float | None = None
    ) -> Envelope:
        """``request`` for asyncio: the event loop is not blocked while the reply comes."""
        return await asyncio.wrap_future(self.submit(topic, request, timeout=timeout))

    @property
    def in_flight(self) -> int:
        """Requests waiting for their reply."""
        with self._lock:
            return len(self._pending)

    # -- replies ---------------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                self._turn()
            except KafkaException as exc:  # the broker away: requests time out meanwhile
                _log.warning("reply consumer error", error=str(exc))
                self._closed.wait(_IDLE_S)
            self._expire(time.monotonic())

    def _turn(self) -> None:
        consumer = self._consumer
        batch = consumer.consume(_BATCH, timeout=0)
        if not batch:
            first = consumer.poll(_IDLE_S)
            batch = [first] if first is not None else []
        for msg in batch:
            if msg.error() is None:
                self._reply(msg)
            elif msg.error().code() != KafkaError._PARTITION_EOF:
                _log.warning("reply consumer error", error=msg.error().str())
        self._producer.poll(0)

    def _reply(self, msg: Any) -> None:
        try:
            env = self._codec.decode(msg.value(), msg.headers(), lazy=True)
        except DecodeError as exc:
            _log.warning(
                "not a reply envelope",
                topic=msg.topic(),
                partition=msg.partition(),
                offset=msg.offset(),
                error=str(exc),
            )
            return
        correlation = env.correlation_id or ""
        with self._lock:
            future = self._pending.get(correlation)
        if future is None:
            _log.debug("late or foreign reply dropped", correlation_id=correlation, id=env.id)
            return
        outcome: Envelope | BaseException = env
        try:
            _ = env.data  # decoded here: the caller gets a whole envelope or an error
        except DecodeError as exc:
            outcome = exc
        else:
            if env.type == ERROR_TYPE:
                outcome = RequestFailed(env)
        self._complete(correlation, future, outcome)

    def _complete(
        self, correlation: str, future: Future[Envelope], outcome: Envelope | BaseException
    ) -> None:
        with self._lock:
            if self._pending.get(correlation) is future:
                del self._pending[correlation]
        try:
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        except InvalidStateError:  # completed already (a reply and a refused write), or cancelled
            pass

    def _expire(self, now: float) -> None:
        expired = []
        with self._lock:
            deadlines = self._deadlines
            while deadlines and deadlines[0][0] <= now:
                _deadline, _n, correlation, future = heapq.heappop(deadlines)
                if not future.done():
                    expired.append((correlation, future))
        for correlation, future in expired:
            self._complete(correlation, future, ReplyTimeout(f"no reply to {correlation} in time"))

    # -- lifecycle -------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> None:
        """Stop reading replies; requests still waiting fail with ``RequesterClosed``."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join()
        with self._lock:
            waiting, self._pending, self._deadlines = self._pending, {}, []
        for correlation, future in waiting.items():
            self._complete(
                correlation, future, RequesterClosed(f"closed before {correlation}'s reply")
            )
        self._producer.flush(timeout)
        self._consumer.close()

    def __enter__(self) -> Requester:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
