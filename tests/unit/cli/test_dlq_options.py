"""``streams dlq`` refuses bad options with one line on stderr, before touching a broker."""

from __future__ import annotations

import logging

import pytest
from cli_runner import Run, streams
from confluent_kafka import KafkaError, KafkaException

from streams import cli


def dlq(*args: str) -> Run:
    """``streams dlq ARGS``, on a port nothing listens on: these must fail before any
    connection is tried."""
    return streams("dlq", *args, env={"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "app-t-dlq", "--record", "3"], "--record expects PARTITION:OFFSET, got '3'"),
        (["replay", "app-t-dlq", "--record", "a:1"], "--record expects PARTITION:OFFSET"),
        (["list", "app-t-dlq", "--since", "yesterday"], "--since: not a time or a duration"),
        (["show", "app-t-dlq", "--until", "-5m"], "--until: not a time or a duration"),
        # A time without a zone names a different instant on every machine: refused.
        (["list", "app-t-dlq", "--since", "2026-11-30T10:00"], "has no zone: add Z or +01:00"),
    ],
)
def test_bad_selections_are_one_line_errors(args: list[str], message: str) -> None:
    result = dlq(*args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_names_the_dry_run_default() -> None:
    result = dlq("replay", "--help")
    assert result.returncode == 0
    assert "--execute" in result.stdout
    assert "dry run" in result.stdout


@pytest.mark.parametrize("text", ["[bold]3", "[/data/in.csv]"])
def test_error_lines_print_what_they_quote_as_it_is(text: str) -> None:
    # rich markup would eat the first and raise MarkupError on the second
    result = dlq("show", "app-t-dlq", "--record", text)
    assert result.returncode == 1
    # (a MarkupError would escape ``main`` and fail this test: the runner raises it)
    assert f"--record expects PARTITION:OFFSET, got {text!r}" in result.stderr


def test_a_kafka_client_error_is_one_line_and_its_traceback_only_with_v(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken() -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))

    monkeypatch.setattr(cli, "app", broken)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 1
    assert capsys.readouterr().err.strip() == "error: Kafka client error: Broker transport failure"

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)  # what -v sets
    try:
        with pytest.raises(SystemExit):
            cli.main()
    finally:
        root.setLevel(level)
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().endswith("Broker transport failure")
