"""``streams replay SOURCE --from POS [--to POS] --into TARGET``: copy a range of history.

A thin layer over ``streams.replay``: plan (resolve positions), then copy or count.
Also holds the options ``streams offsets`` and ``streams lag`` share.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    console,
    execute_option,
    option,
    parse_flag,
    print_json,
    use_schemas,
)
from streams.cli._tables import Records
from streams.cli.describe import parse_params

if TYPE_CHECKING:
    from rich.progress import Progress

    from streams.replay import ReplayPlan, ReplayResult
    from streams.replay.through import ThroughResult
    from streams.topology import Topology


TypesOpt = typer.Option(
    [], "--type", metavar="TYPE", help="Copy only this envelope type, ce_type (repeatable)."
)
KeysOpt = option([], "--key", metavar="KEY", help="Copy only this key (repeatable).")
HeadersOpt = option(
    [], "--header", metavar="NAME=VALUE", help="Copy only records with this header."
)
ThroughOpt = typer.Option(
    None,
    "--through",
    metavar="FILE",
    help="Reprocess through this topology file instead of copying.",
)
ThroughAppIdOpt = option(
    None,
    "--app-id",
    metavar="APP_ID",
    help="With --through: the new app id (default APP-replay-UTCTIME).",
)
ThroughSetOpt = option(
    [],
    "--set",
    metavar="KEY=VALUE",
    help="With --through: a parameter of the file's build() (repeatable).",
)

# The forms of streams.replay.positions, whose times and durations are streams.timespec's.
# Positions without a consumer group (consume) and with one (replay, offsets: +N/-N).
ABSOLUTE_POSITIONS_HELP = (
    "earliest, latest, an OFFSET, a time with a zone (2026-11-30T10:00:00Z, @EPOCH_MS), or a "
    "duration ago (2h, 30m, PT2H); per partition: 0=100,2=earliest"
)
POSITIONS_HELP = f"{ABSOLUTE_POSITIONS_HELP}; +N/-N: from --group's commit"


def _plan_table(plan: ReplayPlan, result: ReplayResult | None, dry_run: bool) -> Records:
    columns = ["partition", "start", "end", "offsets"]
    if result is not None:
        columns += ["read", "would copy" if dry_run else "copied"]
    title = f"replay {plan.topic} from {plan.start} to {plan.end or 'latest'}"
    table = Records(*columns, ids=["partition"], right=columns, title=title)
    counts = {p.partition: p for p in result.partitions} if result else {}
    for r in plan.ranges:
        row = [str(r.partition), str(r.start), str(r.end), f"{r.size:,}"]
        if result is not None:
            c = counts[r.partition]
            row += [f"{c.read:,}", f"{c.copied:,}"]
        table.add_row(*row)
    return table


def _progress(total: int) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]replay"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


@contextmanager
def _progress_bar(total: int, show: bool) -> Iterator[Callable[[int], None] | None]:
    """A rich bar with rate and ETA on a terminal (``advance(n)``); None otherwise."""
    if not show or total <= 0:
        yield None
        return
    with _progress(total) as bar:
        task = bar.add_task("replay", total=total, rate="")

        def advance(n: int) -> None:
            bar.advance(task, n)
            speed = bar.tasks[0].speed
            bar.update(task, rate=f"{speed:,.0f} rec/s" if speed else "")

        yield advance


def _load_through(path: Path, app_id: str | None, params: list[str]) -> Topology:
    from streams.topology import load_topology

    topology = load_topology(path, params=parse_params(params))
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
    return topology.with_app_id(app_id or f"{topology.app_id}-replay-{stamp}")


def _print_through(plan: ReplayPlan, path: Path, result: ThroughResult) -> None:
    console.print(_plan_table(plan, None, dry_run=False))
    console.print(
        f"reprocessed {result.processed:,} records of {plan.topic} through {path} as app id "
        f"{result.app_id} in {result.seconds:.2f} s"
    )
    if result.tables:
        console.print(f"  tables read first: {_per_topic(result.tables)}")
    if result.internal:
        console.print(f"  internal topics drained: {_per_topic(result.internal)}")
    outputs = _per_topic(result.outputs) if result.outputs else "none"
    console.print(f"  outputs, all acknowledged: {outputs}")
    console.print("its group is committed at the end of the range and of its internal topics")


def _per_topic(counts: dict[str, int]) -> str:
    return ", ".join(f"{topic} {n:,}" for topic, n in sorted(counts.items()))


def replay_command(  # noqa: PLR0917 - a command's options
    source: str = typer.Argument(
        ..., metavar="SOURCE", help="Topic to read, or topic:0,2 for some partitions."
    ),
    start: str = typer.Option(
        ..., "--from", metavar="POSITION", help=f"Where to start: {POSITIONS_HELP}."
    ),
    end: str | None = typer.Option(
        None,
        "--to",
        metavar="POSITION",
        help="Where to stop (exclusive; default: the log end). Same forms.",
    ),
    into: str | None = typer.Option(
        None, "--into", metavar="TOPIC", help="Target topic (must exist)."
    ),
    group: str | None = option(
        None, "--group", metavar="GROUP", help="Group whose commits +N/-N move."
    ),
    types: list[str] = TypesOpt,
    keys: list[str] = KeysOpt,
    headers: list[str] = HeadersOpt,
    keep_partition: bool = typer.Option(
        False, "--keep-partition", help="Copy to the same partition number (default: by key)."
    ),
    keep_timestamps: bool = typer.Option(
        False, "--keep-timestamps", help="Copies keep the original timestamps."
    ),
    execute: bool = execute_option("Copy (--into) or reprocess (--through)"),
    force: bool = typer.Option(False, "--force", help="Allow the target to be the source."),
    through: Path | None = ThroughOpt,
    app_id: str | None = ThroughAppIdOpt,
    params: list[str] = ThroughSetOpt,
    schemas: Path | None = SchemasOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Copy a range of SOURCE into another topic, keeping keys and headers.

    Every copy carries a streams.replay.of=<topic>/<partition>/<offset> header. Success is
    reported only after the target acknowledged every copy.
    """
    from streams.replay import (
        RecordFilter,
        parse_position_spec,
        parse_topic_selection,
        plan_replay,
        replay,
    )
    from streams.replay.errors import ReplayError
    from streams.replay.through import replay_through

    if through is not None and into is not None:
        raise ReplayError("give --into (copy) or --through (reprocess), not both")
    if execute and into is None and through is None:
        raise ReplayError("--execute needs --into TARGET or --through TOPOLOGY")
    dry_run = not execute
    flt = RecordFilter.of(types, keys, headers)
    if through is not None and not flt.everything:
        raise ReplayError("--type/--key/--header filter copies; --through reprocesses all")
    if through is not None:
        use_schemas(schemas)
    topology = _load_through(through, app_id, params) if through is not None else None
    cluster = command_cluster(bootstrap, timeout, config_file, client)
    plan = plan_replay(
        cluster,
        parse_flag("SOURCE", parse_topic_selection, source),
        parse_flag("--from", parse_position_spec, start),
        parse_flag("--to", parse_position_spec, end) if end is not None else None,
        group=group,
    )
    show_bar = console.is_terminal and not as_json
    if topology is not None and through is not None and not dry_run:
        with _progress_bar(plan.size, show_bar) as advance:
            done = replay_through(cluster, plan, topology, progress=advance)
        if as_json:
            print_json({"plan": plan.as_dict(), "through": done.as_dict()})
        else:
            _print_through(plan, through, done)
        return
    with _progress_bar(plan.size, show_bar) as advance:
        result = replay(cluster, plan, into, record_filter=flt, keep_partition=keep_partition,
                        keep_timestamps=keep_timestamps, dry_run=dry_run, force=force,
                        progress=advance)  # fmt: skip
    if as_json:
        print_json({"plan": plan.as_dict(), "result": result.as_dict()})
        return
    console.print(_plan_table(plan, result, dry_run))
    rate = result.read / result.seconds if result.seconds else 0.0
    if dry_run and topology is not None:
        console.print(
            f"dry run: would reprocess {result.read:,} records through {through} as app id "
            f"{topology.app_id}; nothing was written; pass --execute to reprocess"
        )
    elif dry_run:
        console.print(
            f"dry run: would copy {result.copied:,} of {result.read:,} records "
            f"(filter: {result.filter}); nothing was written; pass --execute to copy"
        )
    else:
        console.print(
            f"copied {result.copied:,} of {result.read:,} records from {plan.topic} into "
            f"{into}, all acknowledged, in {result.seconds:.2f} s ({rate:,.0f} rec/s read)"
        )
