"""A time out of range on the command line is one error line naming its flag, on every
command that reads times, before any broker is asked (``streams.timespec``'s range)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from streams.cli import app

BEFORE_1970 = "before 1970-01-01T00:00:00Z, where Kafka's timestamps begin"
AFTER_9999 = "after 9999-12-31T23:59:59.999Z, the last time Streams can name"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["replay", "orders", "--from", "@99999999999999999"],
            f"--from: time '@99999999999999999' is {AFTER_9999}",
        ),
        (
            ["replay", "orders", "--from", "2h", "--to", "@99999999999999999999"],
            f"--to: time '@99999999999999999999' is {AFTER_9999}",
        ),
        # 99999 days ago is in 1753: a negative timestamp the broker would refuse.
        (["replay", "orders", "--from", "99999d"], f"--from: '99999d' ago is {BEFORE_1970}"),
        (
            ["consume", "orders", "--from", "1900-01-01T00:00:00Z"],
            f"--from: time '1900-01-01T00:00:00Z' is {BEFORE_1970}",
        ),
        (
            ["offsets", "reset", "99999d", "--group", "g", "--topic", "t"],
            f"POSITION: '99999d' ago is {BEFORE_1970}",
        ),
        (
            ["dlq", "list", "app-dlq", "--since", "999999999d"],
            f"--since: '999999999d' ago is {BEFORE_1970}",
        ),
        (
            ["dlq", "show", "app-dlq", "--until", "0001-01-01T00:00:00+01:00"],
            f"--until: time '0001-01-01T00:00:00+01:00' is {BEFORE_1970}",
        ),
        (
            ["query", "app", "counts", "k", "--from", "@99999999999999999999"],
            f"--from: time '@99999999999999999999' is {AFTER_9999}",
        ),
        (["query", "app", "counts", "k", "--to", "99999d"], f"--to: '99999d' ago is {BEFORE_1970}"),
    ],
)
def test_a_time_out_of_range_is_one_line_naming_its_flag(args: list[str], line: str) -> None:
    # A port nothing listens on: the refusal must come before any connection is tried.
    env = {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "COLUMNS": "200"}
    result = CliRunner().invoke(app, [*args, "--timeout", "1"], env=env)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {line}")  # a duration ago adds its limit
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
