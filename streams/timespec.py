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

**Range.** An instant lies between ``1970-01-01T00:00:00Z`` (epoch 0: Kafka's timestamps
are never negative, and -1 and -2 mean "latest" and "earliest" to its offset look-ups) and
``9999-12-31T23:59:59.999Z`` (the last a ``datetime`` holds); a duration is at most that
span (2932897d); a duration *ago* (``--since 2h``, ``--from 2h``) must land at or after
1970 at the time it is read. Anything outside parses as far as its form and is then
refused with ``TimeRangeError`` (a ``TimeSpecError``), never an ``OverflowError`` or a
negative timestamp sent to the broker.

Replay positions (``streams.replay.positions``), retry delays
(``streams.failures.policy``), ``streams dlq --since/--until``, ``streams query
--from/--to`` and the query port's ``?from=&to=`` all read times with these functions.
Parsing is pure (a duration ago reads the clock); every refusal is a ``TimeSpecError``
that quotes the text and shows the accepted forms. The ``format_*`` functions write what the parsers
read back to the same value.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from streams.errors import StreamsError


class TimeSpecError(StreamsError, ValueError):
    """A time or a duration that does not parse: no zone, no unit, unknown form."""


class TimeRangeError(TimeSpecError):
    """A time or a duration of a valid form outside the range (see the module docstring):
    before 1970, after 9999, or longer than that span."""


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

FIRST_MS = 0
"""The first instant, ``1970-01-01T00:00:00.000Z``: where Kafka's timestamps begin."""
LAST_MS = 253_402_300_799_999
"""The last instant, ``9999-12-31T23:59:59.999Z``: the last millisecond a datetime holds."""
MAX_DURATION_MS = LAST_MS + 1 - FIRST_MS
"""The longest duration, the whole span (2932897 days): longer reaches past every instant."""
_LAST = _EPOCH + timedelta(milliseconds=LAST_MS)
_SHOWN_CHARS = 40  # of a value refused out of range: it may be thousands of digits
_BEGIN = "before 1970-01-01T00:00:00Z, where Kafka's timestamps begin"
_END = "after 9999-12-31T23:59:59.999Z, the last time Streams can name"


def _quoted(text: str) -> str:
    """``text`` quoted as the refusals quote it, cut short when long."""
    return repr(text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}...")


def _ms(number: str, unit_ms: int) -> Fraction:
    try:
        return Fraction(number) * unit_ms
    except ValueError:  # more digits than Python reads as an int (4300)
        raise TimeRangeError(f"not a duration: a number of {len(number)} digits") from None


def parse_duration_ms(text: str) -> int:
    """Milliseconds of a duration (see the module docstring). Raises ``TimeSpecError``;
    ``TimeRangeError`` beyond ``MAX_DURATION_MS``."""
    ms = _duration_ms(text)
    if ms > MAX_DURATION_MS:
        raise TimeRangeError(
            f"duration {_quoted(text)} is longer than {format_duration(MAX_DURATION_MS)}, "
            "from 1970 to the end of the year 9999"
        )
    return ms


def _duration_ms(text: str) -> int:
    """``parse_duration_ms`` before its range is checked: any length."""
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
    ``TimeSpecError``, with a hint when only the zone is missing; ``TimeRangeError``
    before 1970 or after 9999."""
    raw = text.strip()
    epoch = _EPOCH_MS.fullmatch(raw)
    if epoch:
        digits = epoch.group(1).lstrip("0") or "0"
        if len(digits) > len(str(LAST_MS)) or int(digits) > LAST_MS:
            raise TimeRangeError(f"time {_quoted(text)} is {_END}")
        return _EPOCH + timedelta(milliseconds=int(digits))
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise TimeSpecError(f"not a time: {text!r} ({INSTANT_FORMS})") from None
    if when.tzinfo is None:
        example = raw if "T" in raw or " " in raw else f"{raw}T00:00:00"
        raise TimeSpecError(
            f"time {text!r} has no zone: add Z or +01:00 (e.g. {example}Z), or give @EPOCH_MS"
        )
    try:
        utc = when.astimezone(UTC)
    except OverflowError:  # the year 1 or 9999, moved past its end by its offset
        raise TimeRangeError(f"time {text!r} is {_BEGIN if when.year == 1 else _END}") from None
    if utc < _EPOCH or utc > _LAST:
        raise TimeRangeError(f"time {text!r} is {_BEGIN if utc < _EPOCH else _END}")
    return utc


def parse_instant_ms(text: str) -> int:
    """An instant as epoch milliseconds (to the nearest). Raises ``TimeSpecError``."""
    micros = (parse_instant(text) - _EPOCH) // timedelta(microseconds=1)
    return round(Fraction(micros, 1000))


def looks_like_instant(text: str) -> bool:
    """Whether ``text`` is written as an instant (``@...`` or starting with a date), so a
    caller that also takes other forms knows which error to report."""
    raw = text.strip()
    return raw.startswith("@") or _DATE.match(raw) is not None


def parse_ago_ms(text: str, now: datetime | None = None) -> int:
    """A duration before ``now`` (default: the clock), as its milliseconds: what
    ``--from 2h`` means. Raises ``TimeSpecError``; ``TimeRangeError`` when, counted back
    from ``now``, it lands before 1970 (counted back from any later moment, one that
    passed lands after it)."""
    ms = _duration_ms(text)
    now_ms = ((now or datetime.now(UTC)) - _EPOCH) // timedelta(milliseconds=1)
    if ms > now_ms - FIRST_MS:
        days = (now_ms - FIRST_MS) // _UNIT_MS["d"]
        raise TimeRangeError(f"{_quoted(text)} ago is {_BEGIN} (at most {days}d ago)")
    return ms


def parse_instant_or_ago(text: str, now: datetime | None = None) -> datetime:
    """An instant, or a duration before ``now`` (default: the clock), as an aware UTC
    datetime: what ``--since 2h`` and ``--since 2026-11-30T10:00:00Z`` both mean. Raises
    ``TimeSpecError``; ``TimeRangeError`` out of range (see the module docstring)."""
    if looks_like_instant(text):
        return parse_instant(text)
    at = now if now is not None else datetime.now(UTC)
    try:
        ago = parse_ago_ms(text, at)
    except TimeRangeError:
        raise
    except TimeSpecError:
        raise TimeSpecError(
            f"not a time or a duration: {text!r} ({INSTANT_FORMS}, or a duration ago such "
            "as 2h, 30m or PT2H)"
        ) from None
    return at - timedelta(milliseconds=ago)


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
