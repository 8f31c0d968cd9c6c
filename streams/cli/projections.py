"""``streams projections``: which app serves a projection, and building one anew.

``show NAME`` prints the app serving projection NAME now. ``rebuild FILE --name NAME``
runs the topology FILE under a new app id from the earliest offsets while the current app
goes on answering queries, points NAME at the new app once it has caught up, and runs on
as an instance of it until Ctrl-C or SIGTERM (``streams.patterns.projections``).
Without ``--execute`` it prints the plan and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    HttpHostOpt,
    HttpTokenFileOpt,
    JsonOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    console,
    execute_option,
    http_access,
    option,
    print_json,
    use_schemas,
)
from streams.cli.describe import FileArg, SetOpt, parse_params
from streams.cli.run import (
    AdvertiseOpt,
    GuaranteeOpt,
    QueryPortOpt,
    StateDirOpt,
    StatusOpt,
    advertised,
    instance_config,
)
from streams.config import client_settings

if TYPE_CHECKING:
    from streams.patterns.projections import RebuildPlan


app = typer.Typer(help="Event-sourced projections: which app serves one, and rebuilding it.")

NameOpt = typer.Option(..., "--name", metavar="NAME", help="The projection's name.")


@app.command()
def show(  # noqa: PLR0917 - a command's options
    name: str = typer.Argument(..., metavar="NAME", help="The projection's name."),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the app id serving projection NAME now."""
    from streams.patterns.projections import current_app

    cluster = command_cluster(bootstrap, timeout, config_file, client)
    serving = current_app(cluster, name)
    if as_json:
        print_json({"projection": name, "app_id": serving})
        return
    console.print(f"{name} is served by app {serving}")


@app.command()
def rebuild(  # noqa: PLR0917 - a command's options
    file: Path = FileArg,
    name: str = NameOpt,
    app_id: str | None = option(None, "--app-id", help="The new app id (default: <name>-g<N+1>)."),
    params: list[str] = SetOpt,
    execute: bool = execute_option("Start the new app, and switch NAME to it once caught up"),
    query_port: int | None = QueryPortOpt,
    advertise: str | None = AdvertiseOpt,
    http_host: str = HttpHostOpt,
    http_token_file: Path | None = HttpTokenFileOpt,
    state_dir: str | None = StateDirOpt,
    guarantee: str | None = GuaranteeOpt,
    status: bool | None = StatusOpt,
    schemas: Path | None = SchemasOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Build projection NAME anew from FILE under a new app id, beside the app serving it;
    point NAME at the new app once it caught up, then run on as its instance."""
    from streams.cluster import Cluster
    from streams.logs import get_logger
    from streams.patterns.projections import (
        caught_up,
        current_app,
        next_app,
        plan_rebuild,
        switch,
    )
    from streams.pipeline.stats import Stats
    from streams.runtime.instance import run_instance
    from streams.topology import load_topology

    access = http_access(http_host, http_token_file, query_port)
    use_schemas(schemas)
    settings = client_settings(config_file, client)
    cluster = Cluster(bootstrap, timeout, settings)
    new_app = app_id or next_app(name, current_app(cluster, name))
    topology = load_topology(file, app_id=new_app, params=parse_params(params))
    plan = plan_rebuild(cluster, name, topology)
    _show(plan, as_json)
    if not execute:
        if not as_json:
            console.print("dry run: nothing started; pass --execute to rebuild")
        return
    config = instance_config(
        bootstrap,
        settings,
        timeout,
        wait=False,
        processing_guarantee=guarantee,
        state_dir=state_dir,
        query_port=query_port,
        advertise=advertised(advertise, query_port),
        http=access,
    )
    log = get_logger("streams.projections", projection=name, app=new_app)
    switched = False

    def switch_when_caught_up(_stats: Stats) -> None:
        nonlocal switched
        if not switched and caught_up(cluster, topology):
            switch(cluster, name, new_app)
            switched = True
            log.info("projection switched", previous=plan.current)

    run_instance(topology, config, live=status, on_tick=switch_when_caught_up)


def _show(plan: RebuildPlan, as_json: bool) -> None:
    if as_json:
        print_json(plan.as_dict())
        return
    inputs = ", ".join(f"{topic} ({n:,} records)" for topic, n in plan.records.items())
    console.print(
        f"rebuild {plan.name}: {plan.app_id} reads {inputs} from the earliest offset into "
        f"{', '.join(plan.tables) or 'no table'}; {plan.current} answers queries until "
        f"{plan.app_id} has caught up, then {plan.name} points at {plan.app_id}"
    )
