"""Small helpers every command module shares."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from streams.config import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT

# One vocabulary for every command that talks to a cluster: the same names, defaults and
# help text, so a flag learnt on one command works on the next.
BootstrapOpt = typer.Option(
    DEFAULT_BOOTSTRAP,
    "--bootstrap-server",
    "--bootstrap",
    "-b",
    envvar="KAFKA_BOOTSTRAP_SERVERS",
    metavar="HOST:PORT",
    help="Kafka bootstrap servers (default $KAFKA_BOOTSTRAP_SERVERS, else 127.0.0.1:9092).",
)
TimeoutOpt = typer.Option(
    DEFAULT_TIMEOUT,
    "--timeout",
    min=0.5,
    metavar="SECONDS",
    help="Seconds to wait for each broker request.",
)
SchemasOpt = typer.Option(
    None,
    "--schemas",
    metavar="DIR",
    help="The schemas folder (default $STREAMS_SCHEMAS, else the schemas/ of the nearest "
    "folder upwards with a pyproject.toml).",
)
JsonOpt = typer.Option(False, "--json", help="Print JSON for machines instead of tables.")

# No markup: what commands print quotes records, errors and paths ("[bold]", "[/data]"),
# which rich would otherwise style or refuse. Styled text is built with ``styled``.
ConfigFileOpt = typer.Option(
    None,
    "--config",
    metavar="FILE",
    help="Client settings file, Java properties (security.protocol, sasl.*, ssl.*, ...), for "
    "every client the command makes; $STREAMS_KAFKA_CONFIG names one for every command.",
)
SettingOpt = typer.Option(
    [],
    "-X",
    metavar="KEY=VALUE",
    help="librdkafka setting KEY=VALUE for every client (repeatable; wins over files).",
)

console = Console(markup=False)
err_console = Console(stderr=True, markup=False)


def _replicas(value: int) -> int:
    if value == 0 or value < -1:
        raise typer.BadParameter("a count of replicas (1 or more), or -1 for the cluster's default")
    return value


def replication_option(help: str) -> Any:
    """``--replication-factor N`` (``-r``): -1, the default, is the cluster's
    ``default.replication.factor``; 0 and other negatives are refused."""
    return typer.Option(
        -1, "--replication-factor", "-r", metavar="N", callback=_replicas, help=help
    )


def print_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, sort_keys=False))


def use_schemas(folder: Path | None) -> Path:
    """The schemas folder a command uses (see ``streams.schemas.schemas_dir``), exported as
    ``$STREAMS_SCHEMAS`` so every catalog the command loads, in this process or in the
    instances it starts, reads the same folder."""
    from streams.schemas.catalog import SCHEMAS_DIR_ENV, schemas_dir

    chosen = schemas_dir(folder).resolve()
    os.environ[SCHEMAS_DIR_ENV] = str(chosen)
    return chosen


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain strings and ``(text, style)`` pairs, never read as markup."""
    return Text.assemble(*parts)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line (or short) error for a person and exit non-zero."""
    err_console.print(styled(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True)
    sys.exit(code)


def confirm_delete(question: str, what: str) -> None:
    """Ask ``question`` on the terminal before deleting ``what`` (topics, groups); exit 1
    on "no", or when there is no terminal to ask (a script says ``--yes``)."""
    if not sys.stdin.isatty():
        fail(f"refusing to delete {what} without confirmation: no terminal to ask; pass --yes")
    if not typer.confirm(question, default=False):
        fail("not confirmed; nothing was deleted")


def human_duration(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"
