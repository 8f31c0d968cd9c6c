"""``streams query APP TABLE KEY``: the value of KEY in a table of a running topology.

Asks the instances of APP that serve a query port (``streams run --query-port``) for
``/stores/TABLE/KEY``, on the instance that owns the key's partition
(``streams.patterns.queries``), and prints the value as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SettingOpt,
    TimeoutOpt,
    fail,
    print_json,
)
from streams.config import client_settings


def query_command(  # noqa: PLR0917 - a command's options
    app: str = typer.Argument(
        ..., metavar="APP", help="The app id (or a projection's name: its current app)."
    ),
    table: str = typer.Argument(..., metavar="TABLE", help="The table: its step's name."),
    key: str = typer.Argument(..., metavar="KEY", help="The record key to look up."),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the value of KEY in TABLE of the running app APP, asked of the instance that
    owns the key; exit 1 when the key has none."""
    from streams.cluster import Cluster
    from streams.patterns.projections import current_app
    from streams.patterns.queries import query

    cluster = Cluster(bootstrap, timeout, client_settings(config_file, client))
    app_id = current_app(cluster, app)
    value = query(cluster, app_id, table, key, timeout=timeout)
    if value is None:
        fail(f"{table} of {app_id} has no value for {key!r}")
    if as_json:
        print_json({"app_id": app_id, "table": table, "key": key, "value": value})
        return
    typer.echo(json.dumps(value, ensure_ascii=False))
