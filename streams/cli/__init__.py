"""The ``streams`` command. Each group of subcommands lives in a module of its own.

``cli`` is the click command typer builds from ``app`` (the object mkdocs-click documents
and the command-tree test walks); ``main`` is the console-script entry point. Exit codes
are one table, ``EXIT_CODES``, shown in ``streams --help`` and in docs/cli.md.

Importing this package builds the whole command tree (every command, option and help
text) but loads nothing a command runs: each command imports the runtime, the Kafka
client, the codecs or rich's tables inside its function, so ``streams --help`` and a
quick ``streams topics list`` pay only for what they use (tests/unit/repository/test_imports.py).
"""

from __future__ import annotations

import logging
import sys
import traceback

import typer

from streams.cli import broker, demo, describe, dlq, groups, run, schemas, topics
from streams.cli import consume as consume_cli
from streams.cli import lag as lag_cli
from streams.cli import offsets as offsets_cli
from streams.cli import produce as produce_cli
from streams.cli import projections as projections_cli
from streams.cli import query as query_cli
from streams.cli import replay as replay_cli
from streams.cli import request as request_cli
from streams.cli._common import fail
from streams.cli._help import StreamsGroup
from streams.errors import StreamsError

# Every exit status a command can end with. Usage errors are click's (unknown option,
# missing argument, a value of the wrong type); a bad value our parsers refuse (a
# position, a time) is an error like any StreamsError.
EXIT_CODES: dict[int, str] = {
    0: "done",
    1: "error",
    2: "usage error",
    lag_cli.THRESHOLD_EXIT: "lag above --threshold (streams lag)",
    130: "interrupted",
}

app = typer.Typer(
    name="streams",
    cls=StreamsGroup,
    help="Event streaming on Apache Kafka: topologies, replay, schemas and a local broker.",
    epilog="Exit status: "
    + ", ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
    + ". Help on any command: streams COMMAND --help.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(broker.app, name="broker")
app.add_typer(dlq.app, name="dlq")
app.add_typer(schemas.app, name="schemas")
app.command("demo")(demo.demo)
app.command("describe")(describe.describe)
app.command("run")(run.run)
app.add_typer(offsets_cli.app, name="offsets")
app.command("replay")(replay_cli.replay_command)
app.command("lag")(lag_cli.lag_command)
app.add_typer(topics.app, name="topics")
app.add_typer(groups.app, name="groups")
app.command("produce")(produce_cli.produce_command)
app.command("consume")(consume_cli.consume_command)
app.command("request")(request_cli.request_command)
app.command("query")(query_cli.query_command)
app.add_typer(projections_cli.app, name="projections")


def _print_version(asked: bool) -> None:
    """``--version``: this package's, and the Kafka client's it talks through (as
    ``kcat -V`` names its librdkafka)."""
    if not asked:
        return
    import platform

    import confluent_kafka

    from streams import __version__

    librdkafka, _ = confluent_kafka.libversion()
    typer.echo(
        f"streams {__version__} (confluent-kafka {confluent_kafka.__version__}, "
        f"librdkafka {librdkafka}, "
        f"Python {platform.python_version()})"
    )
    raise typer.Exit


@app.callback()
def _root(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="-v for DEBUG logs."),
    log_json: bool = typer.Option(
        False, "--log-json", help="JSON log lines even on a terminal.", envvar="STREAMS_LOG_JSON"
    ),
    _version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        expose_value=False,  # not a setting: children of `run --instances` never see it
        help="Print the version (and the Kafka client's) and exit.",
    ),
) -> None:
    from streams.logs import configure_logging

    configure_logging("DEBUG" if verbose else None, json=True if log_json else None)


def __getattr__(name: str) -> object:
    # Built on use, so it holds every command registered above, whatever their order.
    if name == "cli":
        return typer.main.get_command(app)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point: a StreamsError or a Kafka client error becomes one line on stderr and
    exit status 1 (after its traceback with ``-v``)."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        line = _one_line(exc)
        if line is None:
            raise
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            traceback.print_exc()
        fail(line)


def _one_line(exc: Exception) -> str | None:
    """The line a StreamsError or a Kafka client error is told in; None for any other
    error (a bug: its traceback is shown)."""
    if isinstance(exc, StreamsError):
        return str(exc)
    # A Kafka client error means the client is loaded: no need to load it to ask.
    kafka = sys.modules.get("confluent_kafka")
    if kafka is None or not isinstance(exc, kafka.KafkaException):
        return None
    err = exc.args[0] if exc.args else None
    cause = err.str() if isinstance(err, kafka.KafkaError) else str(exc)
    return f"Kafka client error: {cause}"
