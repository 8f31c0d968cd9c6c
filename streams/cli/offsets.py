"""``streams offsets show | reset``: a consumer group's offsets, and moving them safely.

``show`` lists each input before the internal topics that serve it (``serves``).
``reset`` is a dry run unless ``--execute``; it refuses while the group has members.
Plans import and export in the CSV shape of Kafka's ``kafka-consumer-groups``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    console,
    execute_option,
    option,
    parse_flag,
    print_json,
)
from streams.cli._tables import Records
from streams.cli.replay import POSITIONS_HELP

if TYPE_CHECKING:
    from streams.replay import ResetPlan


app = typer.Typer(help="Show and reset consumer-group offsets.", no_args_is_help=True)

GroupOpt = option(..., "--group", metavar="GROUP", help="Consumer group.")
TopicsOpt = option([], "--topic", metavar="TOPIC", help="Topic, or topic:0,2 (repeatable).")
ExportOpt = typer.Option(
    None,
    "--export",
    metavar="FILE",
    help="Write the plan as Kafka's CSV (topic,partition,offset).",
)
FromFileOpt = typer.Option(
    None, "--from-file", metavar="FILE", help="Take the offsets from a CSV plan (ours or Kafka's)."
)


def _dash(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


@app.command()
def show(  # noqa: PLR0917 - a command's options
    group: str = GroupOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Committed offset, log end offset and lag per partition, and the group's members."""

    from streams.replay import group_offsets
    from streams.replay.internal import serves_label

    offsets = group_offsets(command_cluster(bootstrap, timeout, config_file, client), group)
    if as_json:
        print_json(offsets.as_dict())
        return
    table = Records(
        "topic", "partition", "serves", "committed", "log end", "lag", "member",
        ids=["topic", "partition"], right=["partition", "committed", "log end", "lag"],
        title=f"group {group} ({offsets.state}, {len(offsets.members)} members)",
    )  # fmt: skip
    for p in offsets.partitions:
        table.add_row(
            p.topic, str(p.partition), serves_label(p.serves, p.internal), _dash(p.committed),
            _dash(p.log_end), _dash(p.lag), p.member or "-",
        )  # fmt: skip
    console.print(table)
    for m in offsets.members:
        held = ", ".join(f"{t}:{p}" for t, p in m.partitions) or "nothing"
        console.print(f"member {m.member_id} ({m.client_id}@{m.host}) holds {held}")
    console.print(f"total lag {offsets.lag:,}")


def _print_plan(plan: ResetPlan) -> None:
    columns = ("topic", "partition", "current", "new", "log start", "log end")
    table = Records(*columns, ids=columns[:2], right=columns[1:],
                    title=f"reset plan for group {plan.group}")  # fmt: skip
    for c in plan.changes:
        table.add_row(
            c.topic, str(c.partition), _dash(c.current), f"{c.new:,}", f"{c.log_start:,}",
            f"{c.log_end:,}",
        )  # fmt: skip
    console.print(table)


@app.command()
def reset(  # noqa: PLR0917 - a command's options
    position: str | None = typer.Argument(
        None, metavar="POSITION", help=f"Where to move: {POSITIONS_HELP}."
    ),
    group: str = GroupOpt,
    to: str | None = typer.Option(
        None,
        "--to",
        metavar="POSITION",
        help="The position as an option (handy for shifts: --to -100).",
    ),
    topics: list[str] = TopicsOpt,
    execute: bool = execute_option("Apply the plan"),
    export: Path | None = ExportOpt,
    from_file: Path | None = FromFileOpt,
    new_group: bool = typer.Option(
        False, "--new-group", help="Allow a group the cluster does not know yet."
    ),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Plan (and with --execute, apply) new committed offsets for a stopped group."""
    from streams.replay import (
        execute_reset,
        parse_position_spec,
        parse_topic_selection,
        plan_from_offsets,
        plan_reset,
        read_plan,
        write_plan,
    )
    from streams.replay.errors import ReplayError

    if position is not None and to is not None:
        raise ReplayError("give the position once: as an argument or with --to")
    position = position if position is not None else to
    cluster = command_cluster(bootstrap, timeout, config_file, client)
    if from_file is not None:
        if position is not None or topics:
            raise ReplayError("--from-file takes the topics and offsets from the file alone")
        plan = plan_from_offsets(cluster, group, read_plan(from_file, group), allow_new=new_group)
    else:
        if position is None or not topics:
            raise ReplayError("give a POSITION and at least one --topic (or --from-file)")
        plan = plan_reset(
            cluster,
            group,
            [parse_flag("--topic", parse_topic_selection, t) for t in topics],
            parse_flag("--to" if to is not None else "POSITION", parse_position_spec, position),
            allow_new=new_group,
        )
    if export is not None:
        write_plan(export, plan.offsets())
    if execute:
        execute_reset(cluster, plan)
    if as_json:
        print_json({**plan.as_dict(), "executed": execute})
        return
    _print_plan(plan)
    if export is not None:
        console.print(f"plan written to {export}")
    if execute:
        console.print(f"applied: group {group} now starts from the new offsets")
    else:
        console.print("dry run: nothing changed; pass --execute to apply")
