"""The request-reply step of the demo: price quotes asked of ``topology/quotes.py``.

A ``Requester`` sends a few hundred quote requests at once, one of them for a sku the
price list does not know; the topology answers each on the requester's reply topic. Raises
RuntimeError unless every reply matches its request (by correlation id and by price,
computed by the topology's own function) and the unknown sku got an error reply naming it.
"""

from __future__ import annotations

import logging
import tempfile
import time

from streams.demo.context import DemoContext
from streams.demo.running import running
from streams.envelope import Envelope
from streams.examples import example_path
from streams.patterns import Requester, RequestFailed
from streams.runtime import RuntimeConfig
from streams.topology.loader import import_file

SKUS = ("tea", "mug", "pot", "kettle")


def step_requests(ctx: DemoContext, count: int = 300) -> None:
    """Quote requests, all in flight at once -> each its own reply; a refusal at once."""
    topology, source = ctx.example("quotes", "quotes", source="quotes-in", partitions=2)
    quote = import_file(example_path("quotes")).quote

    def asked(n: int, sku: str) -> Envelope:
        data = {"sku": sku, "quantity": 1 + n % 4, "customer_id": f"c-{n:04d}"}
        return Envelope.new("quote.requested", data, key=sku, source="demo")

    requests = [asked(n, SKUS[n % len(SKUS)]) for n in range(count)]
    with tempfile.TemporaryDirectory(prefix="streams-demo-quotes-") as state_dir:
        config = RuntimeConfig(bootstrap=ctx.bootstrap, state_dir=state_dir)
        replies = ctx.topic("quote-replies")
        with (
            running(topology, config, quiet_below=logging.ERROR),  # the refusal: told below
            Requester(ctx.bootstrap, reply_topic=replies) as requester,
        ):
            started = time.monotonic()
            futures = [requester.submit(source, env, timeout=60) for env in requests]
            answers = [future.result() for future in futures]
            seconds = time.monotonic() - started
            try:
                requester.request(source, asked(count, "spoon"), timeout=60)
            except RequestFailed as exc:
                refused = exc
            else:
                raise RuntimeError("request-reply demo: the unknown sku got a quote")
    for env, answer in zip(requests, answers, strict=True):
        if answer.correlation_id != env.id or dict(answer.data) != dict(quote(env).data):
            raise RuntimeError(f"request-reply demo: {env.id} got {answer}")
    if "spoon" not in refused.error["message"]:
        raise RuntimeError(f"request-reply demo: the refusal says {refused.error}")
    ctx.say(
        "request-reply",
        f"`Requester` -> `topology/quotes.py`: {count} quote requests in flight at once, each "
        f"answered with its own price in {seconds:.1f} s; an unknown sku answered at once "
        f"by an error reply ({refused.error['exception'].rsplit('.', 1)[-1]}) and dead-lettered",
    )
