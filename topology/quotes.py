"""Price quotes by request-reply: each request is answered on its requester's reply topic.

Reads ``quote.requested`` v1 from ``input`` (default ``quotes``), each a request a
``streams.patterns.Requester`` sent, and replies with ``quote.given`` v1: the price of the
quantity asked for, gold customers (an id ending in 0 or 1) 10% off. A sku the price list
does not know is refused (``UnknownSku``, never retried): the request goes to
``<app>-<input>-dlq`` and its requester gets an error reply (``streams.error``) at once.
Other errors are retried (``retry``, default ``1s``) before they do the same.

    streams run topology/quotes.py --app-id pricing --set input=quotes
    streams request quotes --type quote.requested@1 --reply-to pricing-replies \\
        '{"sku": "tea", "quantity": 3, "customer_id": "c-0001"}'
"""

from __future__ import annotations

from streams.envelope import Envelope
from streams.failures import RetryPolicy
from streams.topology import Topology, TopologyBuilder

PRICES_CENTS = {"tea": 450, "mug": 1200, "pot": 3900, "kettle": 5400}


class UnknownSku(Exception):  # noqa: N818 - named for what the caller asked
    """The price list has no such sku (a request that no retry makes right)."""


def quote(env: Envelope) -> Envelope:
    d = env.data
    price = PRICES_CENTS.get(d["sku"])
    if price is None:
        raise UnknownSku(f"no price for sku {d['sku']!r}")
    if d["customer_id"][-1:] in "01":
        price = price * 9 // 10
    quantity = d["quantity"]
    data = {"sku": d["sku"], "quantity": quantity, "unit_price_cents": price}
    return env.follow("quote.given", {**data, "total_cents": price * quantity})


def build(app_id: str = "quotes", input: str = "quotes", retry: str = "1s") -> Topology:
    policy = RetryPolicy.parse(retry, non_retryable=(UnknownSku,))
    builder = TopologyBuilder(app_id, retry=policy, description="price quotes, by request-reply")
    requests = builder.source(input, type="quote.requested", version=1, name="requests")
    requests.map(quote, name="quote").reply(name="reply")
    return builder.build()
