"""Error headers: KIP-1034 names, our own, and a lossless round trip."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.coordinates import Coordinates
from streams.failures import headers as h
from streams.failures.errors import FailureHeaderError
from streams.failures.headers import (
    FailureInfo,
    Stage,
    describe_exception,
    failure_headers,
    parse_failure_headers,
    strip_failure_headers,
    with_failure_headers,
)
from streams.topology.loader import import_file

T0 = datetime(2026, 11, 29, 16, 0, 0, 123000, tzinfo=UTC)


def info(**changes: object) -> FailureInfo:
    base: dict[str, object] = {
        "exception": "myapp.errors.PaymentDeclined",
        "message": "card expired",
        "stacktrace": "Traceback (most recent call last):\n  ...\n",
        "origin": Coordinates("orders", 3, 1042),
        "attempts": 2,
        "first_failure": T0,
        "last_failure": T0 + timedelta(seconds=1),
        "app_id": "billing",
        "stage": Stage.PROCESS,
        "step": "charge",
        "tier": 2,
        "due": T0 + timedelta(seconds=31),
    }
    base.update(changes)
    return FailureInfo(**base)  # type: ignore[arg-type]


def test_the_kip_1034_names_are_kafka_streams_ones() -> None:
    # As in org.apache.kafka.streams.errors.ExceptionHandlerUtils (Kafka 4.2+).
    assert h.KIP_1034_HEADERS == (
        "__streams.errors.exception",
        "__streams.errors.message",
        "__streams.errors.stacktrace",
        "__streams.errors.topic",
        "__streams.errors.partition",
        "__streams.errors.offset",
    )


def test_headers_are_utf8_text_with_the_source_position() -> None:
    built = dict(failure_headers(info()))
    assert built["__streams.errors.exception"] == b"myapp.errors.PaymentDeclined"
    assert built["__streams.errors.topic"] == b"orders"
    assert built["__streams.errors.partition"] == b"3"
    assert built["__streams.errors.offset"] == b"1042"
    assert built[h.ATTEMPTS] == b"2"
    assert built[h.FIRST_TIME] == b"2026-11-29T16:00:00.123Z"
    assert built[h.DUE_TIME] == b"2026-11-29T16:00:31.123Z"
    assert built[h.APP_ID] == b"billing"
    assert built[h.STEP] == b"charge"


def test_a_dead_letter_has_no_tier_nor_due_time() -> None:
    names = {name for name, _ in failure_headers(info(tier=None, due=None, step=None))}
    assert h.TIER not in names
    assert h.DUE_TIME not in names
    assert h.STEP not in names


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
_infos = st.builds(
    FailureInfo,
    exception=_text.filter(bool),
    message=_text,
    stacktrace=_text,
    origin=st.builds(Coordinates, _text, st.integers(-1, 10_000), st.integers(-1, 2**63 - 1)),
    attempts=st.integers(1, 1000),
    first_failure=_times,
    last_failure=_times,
    app_id=_text,
    stage=st.sampled_from(Stage),
    step=st.none() | _text,
    tier=st.none() | st.integers(1, 20),
    due=st.none() | _times,
)


@given(_infos)
def test_parse_reads_back_what_build_wrote(written: FailureInfo) -> None:
    assert parse_failure_headers(failure_headers(written)) == written


@given(
    original=st.lists(
        st.tuples(st.sampled_from(["ce_id", "ce_type", "trace", "x"]), st.none() | st.binary()),
        max_size=6,
    ),
    rounds=st.integers(1, 4),
)
def test_original_headers_survive_any_number_of_failures_untouched(
    original: list[tuple[str, bytes | None]], rounds: int
) -> None:
    headers: list[tuple[str, bytes | None]] = list(original)
    for attempt in range(1, rounds + 1):
        headers = with_failure_headers(headers, info(attempts=attempt))
    assert strip_failure_headers(headers) == original
    assert [name for name, _ in headers].count(h.EXCEPTION) == 1
    parsed = parse_failure_headers(headers)
    assert parsed is not None
    assert parsed.attempts == rounds


def test_a_record_that_never_failed_has_no_failure_info() -> None:
    assert parse_failure_headers([("ce_id", b"1")]) is None
    assert parse_failure_headers(None) is None


def test_headers_written_by_kafka_streams_are_read_too() -> None:
    parsed = parse_failure_headers(
        [
            ("__streams.errors.exception", b"java.lang.NullPointerException"),
            ("__streams.errors.message", b"boom"),
            ("__streams.errors.topic", b"payments"),
            ("__streams.errors.partition", b"0"),
            ("__streams.errors.offset", b"7"),
        ]
    )
    assert parsed is not None
    assert parsed.error_type == "NullPointerException"
    assert parsed.origin == Coordinates("payments", 0, 7)
    assert parsed.attempts == 1


@pytest.mark.parametrize(
    "bad",
    [
        [(h.EXCEPTION, b"X"), (h.PARTITION, b"three")],
        [(h.EXCEPTION, b"X"), (h.DUE_TIME, b"tomorrow")],
        [(h.EXCEPTION, b"\xff\xfe")],
        [(h.EXCEPTION, b"X"), (h.STAGE, b"compile")],
    ],
)
def test_corrupt_error_headers_raise_a_clear_error(bad: list[tuple[str, bytes]]) -> None:
    with pytest.raises(FailureHeaderError):
        parse_failure_headers(bad)


class ChargeFailedError(Exception):
    pass


def test_an_exception_is_described_by_its_qualified_class_message_and_traceback() -> None:
    try:
        raise ChargeFailedError("declined")
    except ChargeFailedError as exc:
        name, message, stack = describe_exception(exc)
    assert name == f"{__name__}.ChargeFailedError"
    assert message == "declined"
    assert "raise ChargeFailedError" in stack
    assert stack.rstrip().endswith("ChargeFailedError: declined")
    assert describe_exception(ValueError("x"))[0] == "ValueError"


def test_huge_messages_and_tracebacks_are_clipped_keeping_the_useful_end() -> None:
    _, message, stack = describe_exception(RuntimeError("m" * 5000 + "END"))
    assert len(message) == h.MAX_MESSAGE_CHARS
    assert len(stack) <= h.MAX_STACKTRACE_CHARS
    assert stack.rstrip().endswith("END")


def test_a_topology_files_exception_is_named_by_the_files_stem(tmp_path: Path) -> None:
    """Two files with one stem both load, each its own module, both shown as the stem."""
    source = (
        "from dataclasses import dataclass\n"
        "class CheckError(Exception):\n    pass\n"
        "@dataclass\nclass Order:\n    id: str\n"
        "WHICH = {which!r}\n"
    )
    modules = []
    for which in ("a", "b"):
        (tmp_path / which).mkdir()
        path = tmp_path / which / "orders.py"
        path.write_text(source.format(which=which))
        modules.append(import_file(path))
    first, second = modules
    assert first.CheckError is not second.CheckError
    for module, which in ((first, "a"), (second, "b")):
        assert h.exception_name(module.CheckError("no")) == "orders.CheckError"
        assert which == sys.modules[module.Order.__module__].WHICH  # neither replaced
    assert import_file(tmp_path / "a" / "orders.py").__name__ == first.__name__  # reloaded
