"""``streams run FILE``: run a topology on Kafka until SIGINT/SIGTERM.

One instance runs in this process. ``--instances N`` starts N instances as child
processes of this one (same consumer group), forwards SIGINT/SIGTERM (and SIGUSR1: every
thread's stack) to them and exits with the worst of their exit codes. A child is given
the command as parsed here (``child_params``, written back as a command line by
``command_line``): every option reaches it without being listed again, and its port
options and instance id are its own. The client settings (``-X``, ``--config``,
``$STREAMS_KAFKA_CONFIG``) are the exception: they may hold secrets, and a command line is
there for anyone to read (``ps``), so the parent reads them once and hands them to its
children in a file only its user can read (``handed_settings``), removed when it ends.

Output: logs on stderr (JSON lines off a terminal). With ``--json``: logs as JSON lines
always, and at a clean stop one JSON summary line on stdout per instance (app id,
instance, records consumed, produced, skipped and dropped as duplicates, failure counts,
seconds). A run that fails prints its one error line instead.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer
from typer import _click
from typer.core import TyperArgument, TyperOption

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    HttpHostOpt,
    HttpTokenFileOpt,
    SchemasOpt,
    http_access,
    replication_option,
    use_schemas,
)
from streams.cli.describe import AppIdOpt, FileArg, SetOpt, parse_params
from streams.config import DEFAULT_TIMEOUT, client_settings, redacted

if TYPE_CHECKING:
    from streams.runtime import RuntimeConfig


InstancesOpt = typer.Option(
    1, "--instances", min=1, envvar="STREAMS_INSTANCES", help="Instances to start."
)
BatchOpt = typer.Option(1_000, "--batch-size", min=1, help="Records per consume call.")
ClientOpt = typer.Option(
    [],
    "-X",
    metavar="KEY=VALUE",
    help="librdkafka setting KEY=VALUE for every client; prefix consumer. or producer. "
    "for one kind (repeatable; wins over --config). A command line shows in ps: give "
    "secrets in --config.",
)
GuaranteeOpt = typer.Option(
    None,
    "--guarantee",
    metavar="GUARANTEE",
    help="at_least_once, or exactly_once (transactions); default: the topology's.",
)
StateDirOpt = typer.Option(
    None,
    "--state-dir",
    envvar="STREAMS_APP_STATE_DIR",
    help="Where stores keep local state (default: $STREAMS_STATE_DIR/apps).",
)
InstanceIdOpt = typer.Option(
    None,
    "--instance-id",
    help="Stable name of this instance (state dir, transactional.id, and group.instance.id with "
    "--static-membership); "
    "unique across machines; default: a free slot on this machine; with --instances N, "
    "instance i (from 0) is ID-i.",
)
StaticOpt = typer.Option(
    False,
    "--static-membership/--no-static-membership",
    help="Join the group as a static member named like the instance (classic protocol): a "
    "restart takes its partitions back at once, but a stopped instance's partitions wait "
    "for the session timeout (10 s), and losing the group's coordinator node can stop it.",
)
# --connect-timeout is run's first name for it: still read, not shown (cli/_help.py).
TimeoutOpt = typer.Option(
    DEFAULT_TIMEOUT,
    "--timeout",
    "--connect-timeout",
    min=0.5,
    metavar="SECONDS",
    help="Seconds to wait for the cluster to answer at start.",
)
StallOpt = typer.Option(
    30.0, "--stall-warning", min=0, help="Warn when one record is in hand this long (0: never)."
)
StallAfterOpt = typer.Option(
    60.0,
    "--stall-after",
    min=0,
    metavar="SECONDS",
    help="A partition with lag that has not moved this long is stalled: a WARNING, and "
    "/readyz not ready until it moves (0: never).",
)
WaitOpt = typer.Option(
    False,
    "--wait-for-broker",
    help="Wait (one WARNING) for a cluster that is not up yet, instead of failing.",
)
StatusOpt = typer.Option(
    None, "--status/--no-status", help="Live status line (default: when stderr is a terminal)."
)
MetricsPortOpt = typer.Option(
    None,
    "--metrics-port",
    min=0,
    envvar="STREAMS_METRICS_PORT",
    metavar="PORT",
    help="Serve Prometheus /metrics, /healthz and /readyz on PORT of --http-host (needs the "
    "extra 'metrics'); with --instances N, instance i (from 0) serves PORT+i.",
)
QueryPortOpt = typer.Option(
    None,
    "--query-port",
    min=0,
    envvar="STREAMS_QUERY_PORT",
    metavar="PORT",
    help="Answer /stores/<table>/<key> (and /healthz, /readyz) on PORT of --http-host, "
    "advertised to the group for `streams query` (0: a free port); with --instances N, "
    "instance i serves PORT+i.",
)
AdvertiseOpt = typer.Option(
    None,
    "--advertise",
    metavar="HOST[:PORT]",
    help="How other machines reach the query port (default 127.0.0.1 and the port).",
)
ShareOpt = typer.Option(
    False,
    "--share",
    help="Run on a share group (a work queue, KIP-932): any instance takes any record, no "
    "per-key order; stateless topologies only.",
)
DeliveriesOpt = typer.Option(
    None,
    "--deliveries",
    min=1,
    metavar="N",
    help="With --share: deliveries of a failing record before the DLQ (default: the "
    "topology's, 3).",
)
ConcurrencyOpt = typer.Option(
    None,
    "--concurrency",
    min=1,
    metavar="N",
    help="Records in flight at once awaiting the topology's async steps (default: the "
    "topology's, 1).",
)
# streams.topology.topology.ORDERINGS, written out so help loads no topology code
# (tests/unit/cli/test_tree.py checks they agree).
ORDERINGS_SHOWN = "key|partition|none"
OrderingOpt = typer.Option(
    None,
    "--ordering",
    metavar=ORDERINGS_SHOWN,
    help="What records in flight at once keep in order: one at a time per key (the "
    "default), per partition, or none.",
)
ReplicationOpt = replication_option(
    "Replicas of every topic the app creates (outputs, retry tiers, DLQs, changelogs, "
    "repartition topics); default -1: the cluster's default.replication.factor."
)
JsonRunOpt = typer.Option(
    False,
    "--json",
    help="JSON log lines, and one JSON summary line on stdout at a clean stop.",
)


def run(  # noqa: PLR0917 - a command's options
    ctx: typer.Context,
    file: Path = FileArg,
    app_id: str | None = AppIdOpt,
    params: list[str] = SetOpt,
    bootstrap: str = BootstrapOpt,
    instances: int = InstancesOpt,
    batch_size: int = BatchOpt,
    client: list[str] = ClientOpt,
    status: bool | None = StatusOpt,
    guarantee: str | None = GuaranteeOpt,
    state_dir: str | None = StateDirOpt,
    instance_id: str | None = InstanceIdOpt,
    static_membership: bool = StaticOpt,
    config_file: Path | None = ConfigFileOpt,
    timeout: float = TimeoutOpt,
    stall_warning: float = StallOpt,
    stall_after: float = StallAfterOpt,
    wait_for_broker: bool = WaitOpt,
    schemas: Path | None = SchemasOpt,
    metrics_port: int | None = MetricsPortOpt,
    query_port: int | None = QueryPortOpt,
    advertise: str | None = AdvertiseOpt,
    http_host: str = HttpHostOpt,
    http_token_file: Path | None = HttpTokenFileOpt,
    share: bool = ShareOpt,
    deliveries: int | None = DeliveriesOpt,
    concurrency: int | None = ConcurrencyOpt,
    ordering: str | None = OrderingOpt,
    replication_factor: int = ReplicationOpt,
    as_json: bool = JsonRunOpt,
) -> None:
    """Run a topology until Ctrl-C or SIGTERM: consume its sources, process, write its
    sinks, commit. At-least-once; exactly-once with --guarantee exactly_once or the
    topology's processing_guarantee."""
    from streams.logs import configure_logging
    from streams.runtime.instance import run_instance
    from streams.topology import TopologyError, load_topology

    if as_json:
        configure_logging(logging.getLogger().level, json=True)
    access = http_access(http_host, http_token_file, metrics_port, query_port)
    use_schemas(schemas)  # children inherit it through $STREAMS_SCHEMAS
    topology = load_topology(file, app_id=app_id, params=parse_params(params))
    if share or topology.consumption == "share":
        topology = topology.shared(deliveries)
    elif deliveries is not None:
        raise TopologyError("--deliveries counts the deliveries of a share group: add --share")
    if concurrency is not None or ordering is not None:
        topology = topology.with_concurrency(concurrency or topology.concurrency, ordering)
    handed = handed_settings()
    settings = client_settings(config_file, client) if handed is None else handed
    if instances > 1:
        raise typer.Exit(_supervise(ctx, instances, topology.app_id, settings))
    config = instance_config(
        bootstrap,
        settings,
        timeout,
        wait=wait_for_broker,
        batch_size=batch_size,
        processing_guarantee=guarantee,
        state_dir=state_dir,
        instance_id=instance_id,
        static_membership=static_membership,
        stall_warning_s=stall_warning,
        stall_after_s=stall_after,
        metrics_port=metrics_port,
        query_port=query_port,
        advertise=advertised(advertise, query_port),
        http=access,
        replication_factor=replication_factor,
    )
    started = time.monotonic()
    runtime = run_instance(topology, config, live=status)
    if as_json:
        stats = runtime.stats
        summary = {
            "app_id": topology.app_id,
            "instance_id": instance_id,
            "consumed": stats.consumed,
            "produced": stats.produced,
            "skipped": stats.skipped,
            "duplicates": runtime.duplicates,
            "failures": stats.failures,
            "seconds": round(time.monotonic() - started, 3),
        }
        typer.echo(json.dumps(summary, default=str))


def instance_config(
    bootstrap: str, settings: dict[str, str], timeout: float, *, wait: bool, **fields: Any
) -> RuntimeConfig:
    """The ``RuntimeConfig`` of an instance a command runs, once the cluster answers
    (``_reach``): the client ``settings`` routed to each kind of client, then ``fields``."""
    from streams.logs import get_logger
    from streams.runtime import RuntimeConfig
    from streams.runtime.config import split_client_overrides

    get_logger("streams.run").debug("client settings", settings=redacted(settings))
    shared, consumer, producer = split_client_overrides(settings)
    _reach(bootstrap, {**shared, **consumer}, timeout, wait=wait)
    return RuntimeConfig(
        bootstrap=bootstrap, client=shared, consumer=consumer, producer=producer, **fields
    )


def _reach(bootstrap: str, settings: dict[str, str], timeout: float, *, wait: bool) -> None:
    """Check the cluster answers before anything starts: one error line (not a stack
    trace after 30 s) when it is away, or, with ``wait``, one WARNING and a wait for it.
    A cluster that refuses us (credentials, TLS) fails at once: waiting would not help."""
    from streams.cluster import Cluster, ClusterError, ClusterRefusedError
    from streams.logs import get_logger

    cluster = Cluster(bootstrap, timeout, settings)  # one client, asked again while waiting
    warned = False
    while True:
        try:
            cluster.check()
            return
        except ClusterRefusedError:
            raise
        except ClusterError as exc:
            if not wait:
                raise
            if not warned:
                get_logger("streams.run").warning("waiting for the cluster", error=str(exc))
                warned = True


def advertised(advertise: str | None, query_port: int | None) -> str | None:
    """``--advertise`` as ``host:port``: a bare host takes the query port (given, not 0)."""
    if advertise is None or ":" in advertise or not query_port:
        return advertise
    return f"{advertise}:{query_port}"


HANDED_SETTINGS_ENV = "STREAMS_RUN_SETTINGS_FILE"
"""Where a child of ``--instances N`` finds the client settings its parent read: a file
of its own, JSON (not a properties file: a PEM value spans lines), that only their user
can read, and that the child removes once read."""


@contextmanager
def _handing(settings: Mapping[str, str]) -> Iterator[Path]:
    """A file holding ``settings`` for one child, readable by this user only (0600);
    removed when the block ends if the child did not remove it (it died first)."""
    fd, name = tempfile.mkstemp(prefix="streams-run-", suffix=".json")  # created 0600
    path = Path(name)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(dict(settings), out)
        yield path
    finally:
        path.unlink(missing_ok=True)


def handed_settings() -> dict[str, str] | None:
    """The client settings a parent handed this process (``--instances N``), None in a
    process started otherwise. The file is removed once read, and its name taken out of
    the environment, so nothing the topology starts takes them for its own."""
    name = os.environ.pop(HANDED_SETTINGS_ENV, None)
    if name is None:
        return None
    path = Path(name)
    settings: dict[str, str] = json.loads(path.read_text())
    path.unlink()
    return settings


def child_params(params: Mapping[str, Any], i: int, app_id: str) -> dict[str, Any]:
    """The options of child ``i`` of ``--instances N``: the parent's ``params`` (a
    ``Context.params`` of ``run``), as one instance of the app the parent loaded,
    without a live status line and without client settings (``-X``, ``--config``: the
    parent hands them over privately, ``handed_settings``); each port option given is
    ``port + i`` (0: each a free port), an instance id given is ``<id>-<i>``."""
    own: dict[str, Any] = {
        "instances": 1,
        "status": False,
        "app_id": app_id,
        "client": [],
        "config_file": None,
    }
    for name in ("metrics_port", "query_port"):
        port = params[name]
        own[name] = None if port is None else port + i if port else 0
    if params["instance_id"] is not None:
        own["instance_id"] = f"{params['instance_id']}-{i}"
    return {**params, **own}


def command_line(command: _click.Command, params: Mapping[str, Any]) -> list[str]:
    """``params`` of ``command`` (a ``Context.params``) as the arguments that parse
    back to them: every option and argument the command declares, so none is left out.
    Options left unset (None, an empty list, a flag's default) are left out."""
    options: list[str] = []
    arguments: list[str] = []
    for param in command.params:
        value: Any = params.get(param.name or "")
        if isinstance(param, TyperArgument):
            arguments += [str(v) for v in value] if param.multiple else [str(value)]
        elif isinstance(param, TyperOption) and value is not None:
            options += _option(param, value)
    return [*options, "--", *arguments] if arguments else options


def _option(option: TyperOption, value: Any) -> list[str]:
    name = next((o for o in option.opts if o.startswith("--")), option.opts[0])
    if option.count:
        return [name] * value
    if option.is_flag:
        return [name] if value else option.secondary_opts[:1]
    # --name=value, -Xvalue: a value that starts with '-' is never read as an option.
    glue = "=" if name.startswith("--") else ""
    return [f"{name}{glue}{v}" for v in (value if option.multiple else [value])]


def _supervise(ctx: typer.Context, instances: int, app_id: str, settings: Mapping[str, str]) -> int:
    """Start ``instances`` children, each running the command of ``ctx`` with its
    ``child_params`` (and the options of ``streams`` itself, e.g. ``-v``) and the client
    ``settings`` in a private file; forward stop signals and stack-dump requests
    (SIGUSR1) to them."""
    from streams.runtime.signals import STACK_DUMP

    cmd = [sys.executable, "-m", "streams"]
    if ctx.parent is not None:
        cmd += command_line(ctx.parent.command, ctx.parent.params)
    cmd.append(ctx.info_name or "run")

    def start(i: int, handed: Path) -> subprocess.Popen[bytes]:
        args = command_line(ctx.command, child_params(ctx.params, i, app_id))
        env = {**os.environ, HANDED_SETTINGS_ENV: str(handed)}
        return subprocess.Popen([*cmd, *args], env=env)

    with ExitStack() as files:
        children = [start(i, files.enter_context(_handing(settings))) for i in range(instances)]

        def forward(signum: int, _frame: FrameType | None) -> None:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

        for s in (signal.SIGINT, signal.SIGTERM, STACK_DUMP):
            signal.signal(s, forward)
        return max(child.wait() for child in children)
