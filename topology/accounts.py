"""Accounts, event-sourced: the ``balances`` projection folds each account's events.

Reads ``input`` (default ``accounts``), one topic of three event types keyed by account id
(``account.opened``, ``account.deposited``, ``account.withdrawn``, each v1), and folds
each account's events in offset order into an ``account.balance`` v1 kept in the table
``balances`` (a changelog-backed store; query it with ``streams query`` or
``Runtime.query``). ``fee_cents`` (default 0) is charged on every withdrawal: change it and
``streams projections rebuild`` builds the projection anew under the new fold.

    streams run topology/accounts.py --app-id accounts --set input=accounts --query-port 8081
    streams query accounts balances a-0001
    streams projections rebuild topology/accounts.py --name accounts --set fee_cents=25
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from streams.envelope import Envelope
from streams.topology import Topology, TopologyBuilder

EVENTS = {"account.opened": 1, "account.deposited": 1, "account.withdrawn": 1}


def new_balance() -> dict[str, Any]:
    return {"account_id": "", "owner": None, "currency": None, "balance_cents": 0, "events": 0}


def fold(fee_cents: int) -> Callable[[dict[str, Any], Envelope], dict[str, Any]]:
    """The balance after one more event (``fee_cents`` taken with each withdrawal)."""

    def apply(balance: dict[str, Any], env: Envelope) -> dict[str, Any]:
        d = env.data
        after = {**balance, "account_id": d["account_id"], "events": balance["events"] + 1}
        if env.type == "account.opened":
            after.update(owner=d["owner"], currency=d["currency"])
        elif env.type == "account.deposited":
            after["balance_cents"] += d["amount_cents"]
        else:
            after["balance_cents"] -= d["amount_cents"] + fee_cents
        return after

    return apply


def build(app_id: str = "accounts", input: str = "accounts", fee_cents: str = "0") -> Topology:
    builder = TopologyBuilder(app_id, description="account balances, folded from their events")
    events = builder.source(input, types=EVENTS, name="events")
    events.group_by_key().aggregate(
        new_balance, fold(int(fee_cents)), type="account.balance", version=1, name="balances"
    )
    return builder.build()


def sample_events(count: int, *, accounts: int = 20, seed: int = 3) -> Iterator[Envelope]:
    """``count`` events of ``accounts`` accounts, each account's first one its opening,
    keyed by account id. Same seed, same events."""
    rng = random.Random(seed)
    opened: set[str] = set()
    for _ in range(count):
        account = f"a-{rng.randrange(accounts):04d}"
        if account not in opened:
            opened.add(account)
            data: dict[str, Any] = {"account_id": account, "owner": f"owner of {account}"}
            yield Envelope.new(
                "account.opened", {**data, "currency": "EUR"}, key=account, source="bank"
            )
            continue
        kind = "account.deposited" if rng.random() < 0.6 else "account.withdrawn"
        amount = {"account_id": account, "amount_cents": rng.randrange(100, 10_000)}
        yield Envelope.new(kind, amount, key=account, source="bank")


def replayed(events: list[Envelope], fee_cents: int = 0) -> dict[str, dict[str, Any]]:
    """The projection computed by hand: each account's events folded in order."""
    apply, out = fold(fee_cents), {}
    for env in events:
        key = env.key or ""
        out[key] = apply(out.get(key) or new_balance(), env)
    return out
