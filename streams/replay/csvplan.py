"""Reset plans as CSV, in the shape of Kafka's ``kafka-consumer-groups --export``.

One group: ``topic,partition,offset`` per line, no header. Several groups:
``group,topic,partition,offset``. Files written here load in Kafka's
``--reset-offsets --from-file`` and the other way round.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from streams.coordinates import TP
from streams.replay.errors import PlanFileError

# Kafka writes its CSV with Jackson, which quotes any value longer than 24 characters
# without looking at it; doing the same keeps our files byte-identical to Kafka's.
_JACKSON_MAX_QUOTE_CHECK = 24


def _cell(text: str) -> str:
    if len(text) > _JACKSON_MAX_QUOTE_CHECK or any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def dump_plan(offsets: Mapping[TP, int]) -> str:
    """``topic,partition,offset`` lines, sorted, as Kafka's single-group export."""
    return "".join(
        f"{_cell(topic)},{partition},{offset}\n"
        for (topic, partition), offset in sorted(offsets.items())
    )


def write_plan(path: Path, offsets: Mapping[TP, int]) -> None:
    path.write_text(dump_plan(offsets))


def parse_plan(text: str, group: str, source: str = "plan") -> dict[TP, int]:
    """The offsets for ``group`` in a plan of either shape. Raises ``PlanFileError``."""
    offsets: dict[TP, int] = {}
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    for n, row in enumerate(rows, 1):
        cells = [c.strip() for c in row]
        if len(cells) == 4:
            row_group, *cells = cells
            if row_group != group:
                continue
        if len(cells) != 3:
            raise PlanFileError(f"{source} line {n}: expected topic,partition,offset, got {row}")
        topic, partition, offset = cells
        try:
            tp, value = (topic, int(partition)), int(offset)
        except ValueError:
            raise PlanFileError(
                f"{source} line {n}: partition and offset must be integers"
            ) from None
        if not topic or tp[1] < 0 or value < 0:
            raise PlanFileError(f"{source} line {n}: bad topic, partition or offset: {row}")
        offsets[tp] = value
    if not offsets:
        raise PlanFileError(f"{source} has no offsets for group {group!r}")
    return offsets


def read_plan(path: Path, group: str) -> dict[TP, int]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise PlanFileError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_plan(text, group, str(path))
