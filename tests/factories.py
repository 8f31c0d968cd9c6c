"""The envelopes tests send, made one way for every suite (unit, integration, container,
cluster): ``tests/`` is on pytest's ``pythonpath``, so a test module writes
``from factories import order``.

Each factory makes a payload valid for the bundled schemas (``schemas/order.placed``,
``schemas/payment.captured``) with what tests vary as arguments and the rest fixed, so a
test names only what it is about. A module whose orders all share a variant (another
customer, a fixed total) fixes it once, with ``functools.partial`` or a one-line function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import Any, Final, Literal

from streams.envelope import Envelope

ORDER_PLACED: Final = "order.placed"
PAYMENT_CAPTURED: Final = "payment.captured"


class _Same(Enum):
    """The default of ``order(key=...)``: keyed by its customer (``None`` is no key)."""

    CUSTOMER = "customer"


def order(
    number: int | str,
    customer: str = "c",
    *,
    key: str | Literal[_Same.CUSTOMER] | None = _Same.CUSTOMER,
    total_cents: int | None = None,
    items: Sequence[Mapping[str, Any]] = (),
    version: int = 2,
    currency: str = "EUR",
    time: datetime | None = None,
    source: str | None = None,
) -> Envelope:
    """An ``order.placed`` event. ``number`` n is the order ``o-n`` of n cents; a string
    is the order id as written, of 0 cents. Keyed by ``customer`` unless ``key`` says
    otherwise; version 1 has no ``currency``; ``time`` is its event time (else now)."""
    data: dict[str, Any] = {
        "order_id": f"o-{number}" if isinstance(number, int) else number,
        "customer_id": customer,
        "items": [dict(item) for item in items],
        "total_cents": _total(number, total_cents),
    }
    if version >= 2:
        data["currency"] = currency
    env = Envelope.new(
        ORDER_PLACED,
        data,
        version=version,
        key=customer if key is _Same.CUSTOMER else key,
        source=source,
    )
    return env if time is None else replace(env, time=time)


def _total(number: int | str, total_cents: int | None) -> int:
    if total_cents is not None:
        return total_cents
    return number if isinstance(number, int) else 0


def orders(numbers: Iterable[int], *, customers: int, customer: str = "c-{}") -> list[Envelope]:
    """``order(n)`` for each n, spread over ``customers`` customers: n's customer (and key)
    is the ``customer`` template filled with ``n % customers``."""
    return [order(n, customer.format(n % customers)) for n in numbers]


def payment(
    payment_id: str,
    order_id: str = "o-1",
    amount_cents: int = 100,
    *,
    key: str | None = None,
    source: str | None = None,
) -> Envelope:
    """A ``payment.captured`` event of a card payment in EUR, keyed by its order unless
    ``key`` says otherwise."""
    data = {
        "payment_id": payment_id,
        "order_id": order_id,
        "amount_cents": amount_cents,
        "currency": "EUR",
        "method": "CARD",
    }
    return Envelope.new(PAYMENT_CAPTURED, data, key=order_id if key is None else key, source=source)
