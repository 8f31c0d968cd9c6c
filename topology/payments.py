"""Payments with failure routing: a flaky card network, retry tiers and a dead-letter topic.

Reads ``payment.captured`` v1 from ``input`` (default ``payments``) and writes each payment
that settles to ``<app>-settled``. The ``settle`` step stands in for a call to a card
network: payments whose id starts with ``flaky-`` time out on their first two attempts in
this process, then settle; a negative amount is refused every time (``ValueError``) unless
``fixed`` is set. Failures go through ``<app>-<input>-retry-1`` and ``-retry-2`` (``retry``,
default ``1s, 1s``; ``none`` turns routing off) to ``<app>-<input>-dlq``; later payments of
the same order wait behind a retrying one.

    streams run topology/payments.py --app-id pay --set input=payments
    streams dlq list pay-payments-dlq
    streams run topology/payments.py --app-id pay --set input=payments --set fixed=1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder, owned

_attempts: Counter[str] = Counter()


class CardNetworkTimeout(Exception):  # noqa: N818 - named for what the network says
    """The card network did not answer in time (worth retrying)."""


def settle(fixed: bool) -> Callable[[Envelope], Envelope]:
    def settle_payment(env: Envelope) -> Envelope:
        pid = env.data["payment_id"]
        if pid.startswith("flaky-"):
            _attempts[pid] += 1
            if _attempts[pid] <= 2:
                raise CardNetworkTimeout(f"card network timed out for {pid}")
        if env.data["amount_cents"] < 0 and not fixed:
            raise ValueError(f"payment {pid}: negative amount")
        return env

    return settle_payment


def build(
    app_id: str = "payments",
    input: str = "payments",
    retry: str = "1s, 1s",
    fixed: str | bool = False,
) -> Topology:
    is_fixed = fixed not in {False, "", "0", "false", "no"}
    policy = None if retry == "none" else retry  # "none": no routing, failures stop the run
    builder = TopologyBuilder(app_id, retry=policy, description="settle payments, with retries")
    payments = builder.source(input, type="payment.captured", version=1, name="payments")
    payments.map(settle(is_fixed), name="settle").to(
        owned("settled"), type="payment.captured", version=1
    )
    return builder.build()


def payment(payment_id: str, order_id: str, amount_cents: int = 1_000) -> Envelope:
    """A ``payment.captured`` envelope keyed by its order (the order of a key is kept)."""
    data = {
        "payment_id": payment_id,
        "order_id": order_id,
        "amount_cents": amount_cents,
        "currency": "EUR",
        "method": "CARD",
    }
    return Envelope.new("payment.captured", data, key=order_id, source="shop")
