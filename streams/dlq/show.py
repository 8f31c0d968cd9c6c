"""One dead letter as ``streams dlq show`` prints it (``--json``: exactly this view)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.dlq.letters import DeadLetter, DlqContents, printable
from streams.failures.headers import Headers, format_time

Decoder = Callable[[bytes | None, Headers], Any]
"""Turns a record's value and headers into something printable; raises on bad input."""


def describe(
    letter: DeadLetter, contents: DlqContents | None = None, decode: Decoder | None = None
) -> dict[str, Any]:
    """A JSON-able view of one dead letter: coordinates, ids, error, headers, decoded body."""
    failure = letter.failure
    view: dict[str, Any] = {
        "ref": letter.ref,
        "partition": letter.partition,
        "offset": letter.offset,
        "timestamp": format_time(letter.timestamp) if letter.timestamp else None,
        "key": letter.key_text,
        "event_id": letter.event_id,
        "event_type": letter.event_type,
        "error": None
        if failure is None
        else {
            "exception": failure.exception,
            "message": failure.message,
            "stage": failure.stage.value,
            "step": failure.step,
            "attempts": failure.attempts,
            "first_failure": format_time(failure.first_failure),
            "last_failure": format_time(failure.last_failure),
            "app_id": failure.app_id,
            "source": {
                "topic": failure.origin.topic,
                "partition": failure.origin.partition,
                "offset": failure.origin.offset,
            },
            "stacktrace": failure.stacktrace,
            "value_cut": failure.value_cut,
        },
        "header_problem": letter.header_problem,
        "headers": {name: printable(value) for name, value in letter.original_headers},
        "value_size": None if letter.value is None else len(letter.value),
    }
    if decode is not None:
        try:
            view["envelope"] = decode(letter.value, letter.original_headers)
            view["decode_error"] = None
        except Exception as exc:  # any decoder failure is shown, not raised: it's a DLQ
            view["envelope"] = None
            view["decode_error"] = f"{type(exc).__name__}: {exc}"
    if contents is not None:
        view["replays"] = [
            {"to": mark.to, "time": format_time(mark.time)} for mark in contents.replays_of(letter)
        ]
    return view
