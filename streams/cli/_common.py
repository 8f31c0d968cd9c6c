"""Small helpers every command module shares."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from streams.config import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT, client_settings
from streams.errors import StreamsError
from streams.http_access import LOOPBACK, TOKEN_ENV, HttpAccess, read_token
from streams.timespec import parse_instant_or_ago

if TYPE_CHECKING:
    from streams.cluster import Cluster

# One meaning per short option in every command, kcat's or Kafka's tools' where they have
# one (-t topic, -c count, -f format): an option gets its short name only from this table,
# through ``option``, so no command can give a short option another meaning.
# tests/unit/cli/test_tree.py holds the whole command tree to it.
SHORT_OPTIONS: dict[str, str] = {
    "--app-id": "-a",
    "--bootstrap-server": "-b",
    "--count": "-c",
    "--schemas": "-d",
    "--error-type": "-e",
    "--format": "-f",
    "--follow": "-F",
    "--group": "-g",
    "--header": "-H",
    "--key": "-k",
    "--key-separator": "-K",
    "--lines": "-n",
    "--partitions": "-p",
    "--replication-factor": "-r",
    "--set": "-s",
    "--topic": "-t",
    "--verbose": "-v",
    "--watch": "-w",
}


def option(default: Any, name: str, *aliases: str, **settings: Any) -> Any:
    """``typer.Option`` called ``name`` (old names in ``aliases``) with the short option
    ``SHORT_OPTIONS`` gives ``name``, if any."""
    short = SHORT_OPTIONS.get(name)
    return typer.Option(default, name, *aliases, *([short] if short else []), **settings)


def execute_option(action: str, *aliases: str) -> Any:
    """``--execute``: a command that changes a cluster (offsets, records, topics, a
    projection) is a dry run without it, as Kafka's ``kafka-consumer-groups
    --reset-offsets``; ``action`` says what it does with it."""
    return typer.Option(
        False, "--execute", *aliases, help=f"{action} (default: a dry run; nothing changes)."
    )


# One vocabulary for every command that talks to a cluster: the same names, defaults and
# help text, so a flag learnt on one command works on the next.
BootstrapOpt = option(
    DEFAULT_BOOTSTRAP,
    "--bootstrap-server",
    "--bootstrap",
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
SchemasOpt = option(
    None,
    "--schemas",
    "--dir",
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
    help="librdkafka setting KEY=VALUE for every client (repeatable; wins over files). "
    "A command line shows in ps: give secrets in --config.",
)

# The HTTP ports an instance serves (streams.http_access): this machine only unless told,
# and a token from a file or the environment, never from the command line.
HttpHostOpt = typer.Option(
    LOOPBACK,
    "--http-host",
    envvar="STREAMS_HTTP_HOST",
    metavar="HOST",
    help=f"The address the metrics and query ports bind (default {LOOPBACK}: this machine "
    "only); any other, such as 0.0.0.0 (every interface), needs a token.",
)


def http_token_option(help: str) -> Any:
    """``--http-token-file FILE``: the token of the HTTP ports is read from FILE, else from
    ``$STREAMS_HTTP_TOKEN``; never given on the command line, where every user of the
    machine can read it. ``help`` says what it is for here."""
    return typer.Option(
        None,
        "--http-token-file",
        envvar="STREAMS_HTTP_TOKEN_FILE",
        metavar="FILE",
        help=f"{help} (Authorization: Bearer TOKEN), read from FILE; default: "
        f"${TOKEN_ENV}, when set.",
    )


HttpTokenFileOpt = http_token_option("The token every request to the ports must then carry")


def http_access(host: str, token_file: Path | None, *ports: int | None) -> HttpAccess:
    """The access to the ports a command serves (``streams.http_access``): ``host``, and
    the token of ``token_file``, else of ``$STREAMS_HTTP_TOKEN``. Checked now when it
    serves any of ``ports``: another host than 127.0.0.1 without a token is one error line
    before the command reaches the cluster."""
    access = HttpAccess(host, read_token(token_file))
    if any(port is not None for port in ports):
        access.check("the metrics and query ports")
    return access


console = Console(markup=False)
err_console = Console(stderr=True, markup=False)


def _replicas(value: int) -> int:
    if value == 0 or value < -1:
        raise typer.BadParameter("a count of replicas (1 or more), or -1 for the cluster's default")
    return value


def replication_option(help: str) -> Any:
    """``--replication-factor N`` (``-r``): -1, the default, is the cluster's
    ``default.replication.factor``; 0 and other negatives are refused."""
    return option(-1, "--replication-factor", metavar="N", callback=_replicas, help=help)


def command_cluster(
    bootstrap: str, timeout: float, config_file: Path | None, client: list[str]
) -> Cluster:
    """The door a command talks to the cluster through, from its common options
    (``--bootstrap``, ``--timeout``, ``--config``, ``-X``)."""
    from streams.cluster import Cluster  # on use: ``streams --help`` loads no cluster code

    return Cluster(bootstrap, timeout, client_settings(config_file, client))


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


T = TypeVar("T")


def parse_flag(flag: str, parse: Callable[[str], T], text: str) -> T:
    """``parse(text)``; a value it refuses is one line naming the flag it was given with
    (``--from: not a position: ...``), so a command with several positions or times says
    which one is wrong."""
    try:
        return parse(text)
    except StreamsError as exc:
        fail(f"{flag}: {exc}")


def parse_time_flag(flag: str, text: str | None) -> datetime | None:
    """An instant or a duration ago (``streams.timespec``) given with ``flag``, None when
    not given; refused (out of range too) in one line naming the flag."""
    return None if text is None else parse_flag(flag, parse_instant_or_ago, text)


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
