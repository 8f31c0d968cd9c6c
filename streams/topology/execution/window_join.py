"""Stream-stream joins within a time window: both sides buffered in the step's store.

``left.join_within(right, fn, within=300)`` pairs each record with every record of the
other stream that has the same key and an event time at most ``within`` seconds away, and
hands on ``fn(left, right)`` for each pair, once, when the second of the two arrives (an
inner join, as Kafka Streams' ``join`` with ``JoinWindows``). The two streams must be
co-partitioned (their topics: as many partitions, keyed alike), as for a stream-table join.

Each side has its own stream time (its largest event time, kept in the store): the two
topics are read side by side, and one may run ahead of the other. A record whose time
plus ``within`` plus ``grace`` its own side's stream time has passed is late: to the
dead-letter topic with a ``LateRecordError`` (never dropped in silence). A side's records
wait until the *other* side's stream time is so far on that no record of it that is not
late could meet them (``keep_ms``).

``left.left_join_within(right, fn, ...)`` also hands on ``fn(left, None)`` for each left
record that met no right one, once none can come any more: when it leaves the store (the
right side's stream time passed it by ``keep_ms``), as Kafka Streams' ``leftJoin`` does
when its window closes.

Store layout: side (``l``/``r``) + 2-byte length + key -> the side's buffered records of
that key (event time, offset, the envelope as the codec writes it; a left record that met
a right one, in a left join: the offset's complement, negative); ``tl``/``tr`` -> each
side's stream time; ``o`` + side -> its expiry buckets in use; ``x`` + side + bucket end +
side key -> nothing, so a bucket's keys are one range scan when it expires (nothing per
key in memory).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from streams.envelope import Envelope
from streams.topology.errors import TopologyError
from streams.topology.execution.calls import Run
from streams.topology.execution.checks import key_of, output
from streams.topology.execution.joins import sides
from streams.topology.execution.store_layout import (
    Triple,
    pack_starts,
    pack_triples,
    read_stream_time,
    unpack_starts,
    unpack_triples,
    window_start,
    write_stream_time,
)
from streams.topology.policy import StepFailed, dead_letter
from streams.topology.windows import LateRecordError

if TYPE_CHECKING:
    from streams.topology.execution.plan import Plan
    from streams.topology.nodes import StepNode

_LENGTH = struct.Struct(">H")
_SIDES = (b"l", b"r")
_TIMES = (b"tl", b"tr")  # each side's stream time
_OPEN = b"o"  # + side: the expiry buckets in use
_BUCKETS = b"x"  # + side + bucket end + side key


def build_window_join(plan: Plan, node: StepNode, outs: dict[str, Run]) -> Run:
    spec = node.window_join
    store = plan.store_of(node, spec.store if spec is not None else None)
    codec = plan.codec
    assert spec is not None  # a windowed join always has one (builder)
    if codec is None:
        raise TopologyError(f"join {node.name!r} keeps envelopes: its plan needs the codec")
    left, _right = sides(plan, node)
    within, grace, keep, outer = spec.within_ms, spec.grace_ms, spec.keep_ms, spec.left_outer
    bucket_ms = max(keep, 1000)
    fn, nxt, name, policy = node.fn, outs[node.outputs[0]], node.name, node.on_error
    current = plan.current

    def side_key(side: int, key: bytes) -> bytes:
        return _SIDES[side] + _LENGTH.pack(len(key)) + key

    def expire(tx: Any, side: int, stream_time: int) -> None:
        """Drop ``side``'s records the other side can no longer meet, a bucket of keys at a
        time: its records at most ``keep`` before ``stream_time`` (the other side's)."""
        listed = _OPEN + _SIDES[side]
        buckets = unpack_starts(tx.get(listed))
        due = [b for b in buckets if b <= stream_time]
        if not due:
            return
        part = store.partition()
        for end in due:
            low = _BUCKETS + _SIDES[side] + window_start(end)
            for index, _ in part.range(low, _BUCKETS + _SIDES[side] + window_start(end + 1)):
                tx.delete(index)
                skey = index[len(low) :]
                buffered = unpack_triples(tx.get(skey))
                kept = [i for i in buffered if i[0] + keep > stream_time]
                if outer and side == 0:
                    alone([i for i in buffered if i[0] + keep <= stream_time and i[1] >= 0])
                if kept:
                    tx.set(skey, pack_triples(kept))
                else:
                    tx.delete(skey)
        tx.set(listed, pack_starts([b for b in buckets if b > stream_time]))

    def hand_on(left_env: Envelope, right_env: Envelope | None) -> None:
        try:
            out = output(fn(left_env, right_env), "a join")
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed(name, exc, policy) from exc
        if out is not None:
            nxt(out)

    def pair(env: Envelope, side: int, others: list[Triple]) -> list[int]:
        """Hand on ``env`` with each of ``others`` (the other side's records of its key)
        within the window; returns which of them it met."""
        time_ms = env.time_ms
        met = []
        for i, (other_time, _offset, other) in enumerate(others):
            if abs(other_time - time_ms) <= within:
                met.append(i)
                partner = codec.decode(other, lazy=True)
                if side == 0:
                    hand_on(env, partner)
                else:
                    hand_on(partner, env)
        return met

    def alone(lonely: list[Triple]) -> None:
        """A left join's left records that met nothing, handed on with None."""
        for _time, _offset, raw in lonely:
            hand_on(codec.decode(raw, lazy=True), None)

    def join_step(env: Envelope) -> None:
        record = current.record
        side = 0 if record.origin_topic in left else 1
        raw_key = key_of(env, name, f"join {name!r} pairs records by key").encode()
        time_ms = env.time_ms
        tx = store.transaction()
        clock = _TIMES[side]
        stream_time = read_stream_time(tx, clock)
        if stream_time is not None and time_ms + within + grace <= stream_time:
            late = LateRecordError(
                f"join {name!r}: the record came after its window closed (event time "
                f"{env.time.isoformat()}, within {within / 1000:g} s, grace "
                f"{grace / 1000:g} s)"
            )
            raise StepFailed(name, late, dead_letter)
        mine, theirs = side_key(side, raw_key), side_key(1 - side, raw_key)
        others = unpack_triples(tx.get(theirs))
        met = pair(env, side, others)
        offset = record.offset
        if outer and met:  # a left record that met: never alone; right ones: their partners
            if side == 0:
                offset = ~offset
            else:
                for i in met:
                    t, o, v = others[i]
                    others[i] = (t, ~o if o >= 0 else o, v)
                tx.set(theirs, pack_triples(others))
        buffered = unpack_triples(tx.get(mine))
        value, _headers = codec.encode(env)
        buffered.append((time_ms, offset, value))
        tx.set(mine, pack_triples(buffered))
        bucket = (time_ms + keep) // bucket_ms * bucket_ms + bucket_ms  # expired by then
        tx.set(_BUCKETS + _SIDES[side] + window_start(bucket) + mine, b"")
        listed = _OPEN + _SIDES[side]
        opened = unpack_starts(tx.get(listed))
        if bucket not in opened:
            tx.set(listed, pack_starts(sorted([*opened, bucket])))
        if stream_time is None or time_ms > stream_time:
            write_stream_time(tx, time_ms, clock)
            expire(tx, 1 - side, time_ms)

    return join_step
