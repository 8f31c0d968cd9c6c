"""Times and durations as people type them: one grammar for every command and policy.

An **instant** is an ISO 8601 time with a zone, or epoch milliseconds after ``@``:

==============================  ==============================================
``2026-11-30T10:00:00Z``        UTC (fractions of a second allowed: ``.250Z``)
``2026-11-30T11:00:00+01:00``   any offset
``@1795946400000``              epoch milliseconds (``@`` so a number never
                                reads as an offset or a count)
==============================  ==============================================

A time without a zone is refused with a hint (``add Z or +01:00``): it names a different
instant on every machine, and a replay from the wrong hour is a silent, costly mistake.

A **duration** is ISO 8601 (``PT2H``, ``P1DT30M``, ``PT1.5S``; days at most, like Java's
``Duration.parse``, since years and months have no fixed length) or short (``2h``,
``90s``, ``1h30m``, ``500ms``, ``1.5s``, ``1d``). Letters may be any case; a fraction is
allowed on any part. Durations are whole milliseconds, Kafka's unit of time (finer
fractions round to the nearest). Never negative.

Replay positions (``streams.replay.positions``), retry delays
(``streams.failures.policy``) and ``streams dlq --since/--until`` all read times with
these functions. Parsing is pure; every refusal is a ``TimeSpecError`` that quotes the
text and shows the accepted forms. The ``format_*`` functions write what the parsers
read back to the same value.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from streams.errors import StreamsError


class TimeSpecError(StreamsError, ValueError):
    """A time or a duration that does not parse: no zone, no unit, unknown form."""


INSTANT_FORMS = "an ISO 8601 time with a zone such as 2026-11-30T10:00:00Z, or @EPOCH_MS"
DURATION_FORMS = "e.g. 2h, 90s, 1h30m, 500ms, 1.5s, 1d, PT2H, P1DT30M"

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_NUMBER = r"\d+(?:\.\d+)?"
_SHORT = re.compile(rf"(?:\s*{_NUMBER}\s*(?:ms|[smhd]))+\s*", re.IGNORECASE)
_SHORT_PART = re.compile(rf"({_NUMBER})\s*(ms|[smhd])", re.IGNORECASE)
_ISO = re.compile(
    rf"P(?:(?P<d>{_NUMBER})D)?"
    rf"(?:T(?:(?P<h>{_NUMBER})H)?(?:(?P<m>{_NUMBER})M)?(?:(?P<s>{_NUMBER})S)?)?",
    re.IGNORECASE,
)
_ISO_CALENDAR = re.compile(rf"P(?:{_NUMBER}[YMW])", re.IGNORECASE)
_EPOCH_MS = re.compile(r"@(\d+)")
_BARE_NUMBER = re.compile(_NUMBER)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(number: str, unit_ms: int) -> Fraction:
    return Fraction(number) * unit_ms


def parse_duration_ms(text: str) -> int:
    """Milliseconds of a duration (see the module docstring). Raises ``TimeSpecError``."""
    raw = text.strip()
    iso = _ISO.fullmatch(raw)
    if iso and any(iso.groupdict().values()) and not raw.upper().endswith("T"):
        parts = iso.groupdict()
        total = sum(
            (_ms(parts[k], _UNIT_MS[k]) for k in "dhms" if parts[k] is not None), Fraction(0)
        )
        return round(total)
    if _SHORT.fullmatch(raw):
        total = sum(
            (_ms(n, _UNIT_MS[unit.lower()]) for n, unit in _SHORT_PART.findall(raw)), Fraction(0)
        )
        return round(total)
    if _ISO_CALENDAR.match(raw):
        raise TimeSpecError(
            f"not a duration: {text!r} (years, months and weeks have no fixed length "
            "in Kafka's terms: give days, e.g. P30D)"
        )
    if _BARE_NUMBER.fullmatch(raw):
        raise TimeSpecError(f"not a duration: {text!r} has no unit (e.g. {raw}s or {raw}ms)")
    raise TimeSpecError(f"not a duration: {text!r} ({DURATION_FORMS})")


def parse_duration(text: str) -> timedelta:
    """A duration as a ``timedelta`` (whole milliseconds). Raises ``TimeSpecError``."""
    return timedelta(milliseconds=parse_duration_ms(text))


def parse_instant(text: str) -> datetime:
    """An instant (see the module docstring) as an aware UTC datetime. Raises
    ``TimeSpecError``, with a hint when only the zone is missing."""
    raw = text.strip()
    epoch = _EPOCH_MS.fullmatch(raw)
    if epoch:
        return _EPOCH + timedelta(milliseconds=int(epoch.group(1)))
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise TimeSpecError(f"not a time: {text!r} ({INSTANT_FORMS})") from None
    if when.tzinfo is None:
        example = raw if "T" in raw or " " in raw else f"{raw}T00:00:00"
        raise TimeSpecError(
            f"time {text!r} has no zone: add Z or +01:00 (e.g. {example}Z), or give @EPOCH_MS"
        )
    return when.astimezone(UTC)


def parse_instant_ms(text: str) -> int:
    """An instant as epoch milliseconds (to the nearest). Raises ``TimeSpecError``."""
    micros = (parse_instant(text) - _EPOCH) // timedelta(microseconds=1)
    return round(Fraction(micros, 1000))


def looks_like_instant(text: str) -> bool:
    """Whether ``text`` is written as an instant (``@...`` or starting with a date), so a
    caller that also takes other forms knows which error to report."""
    raw = text.strip()
    return raw.startswith("@") or _DATE.match(raw) is not None


def parse_instant_or_ago(text: str, now: datetime | None = None) -> datetime:
    """An instant, or a duration before ``now`` (default: the clock), as an aware UTC
    datetime: what ``--since 2h`` and ``--since 2026-11-30T10:00:00Z`` both mean."""
    if looks_like_instant(text):
        return parse_instant(text)
    try:
        ago = parse_duration(text)
    except TimeSpecError:
        raise TimeSpecError(
            f"not a time or a duration: {text!r} ({INSTANT_FORMS}, or a duration ago such "
            "as 2h, 30m or PT2H)"
        ) from None
    return (now if now is not None else datetime.now(UTC)) - ago


def format_duration(duration: timedelta | int) -> str:
    """The shortest short form (``90s``, ``1500ms``, ``2h``) that ``parse_duration`` reads
    back to the same duration, to the millisecond; an int is milliseconds."""
    ms = duration if isinstance(duration, int) else round(duration / timedelta(milliseconds=1))
    if ms == 0:
        return "0s"
    for unit in ("d", "h", "m", "s"):
        if ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"


def format_iso_duration(duration: timedelta | int) -> str:
    """ISO 8601 (``P1DT2H30M``, ``PT1.5S``, ``PT0S``) for the same duration, to the
    millisecond; an int is milliseconds."""
    ms = duration if isinstance(duration, int) else round(duration / timedelta(milliseconds=1))
    days, rest = divmod(ms, _UNIT_MS["d"])
    hours, rest = divmod(rest, _UNIT_MS["h"])
    minutes, rest = divmod(rest, _UNIT_MS["m"])
    seconds, millis = divmod(rest, _UNIT_MS["s"])
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or millis:
        clock += f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "S"
    text = "P" + (f"{days}D" if days else "") + (f"T{clock}" if clock else "")
    return "PT0S" if text == "P" else text


def format_instant(when: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` (``2026-11-30T10:00:00.000Z``), the form
    of every time Streams writes; ``when`` must be aware."""
    if when.tzinfo is None:
        raise TimeSpecError(f"cannot format {when!r}: a time without a zone")
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_instant_ms(ms: int) -> str:
    """``format_instant`` of epoch milliseconds."""
    return format_instant(_EPOCH + timedelta(milliseconds=ms))
