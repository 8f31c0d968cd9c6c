"""``streams groups list | describe | delete``: a cluster's consumer groups.

What ``kafka-consumer-groups --list | --describe --members | --delete`` do, through the
door (``streams.cluster.Cluster``). ``delete`` is all or none and refuses a group in use,
as Kafka does; a dry run unless ``--execute``, like ``streams topics delete``.
Offsets per partition are ``streams offsets show``'s, lag over time ``streams lag``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    print_json,
)
from streams.cli._tables import Records

if TYPE_CHECKING:
    from streams.cluster import GroupInfo

app = typer.Typer(help="List, describe and delete consumer groups.", no_args_is_help=True)


GroupsArg = typer.Argument(..., metavar="GROUP...", help="The groups to delete.")


def _info_dict(info: GroupInfo) -> dict[str, Any]:
    return {
        "group": info.group,
        "state": info.state,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "instance_id": m.instance_id,
                "partitions": [f"{topic}:{p}" for topic, p in m.partitions],
            }
            for m in info.members
        ],
    }


@app.command("list")
def list_command(
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every consumer group with its state and number of members."""
    cluster = command_cluster(bootstrap, timeout, config_file, client)
    infos = [cluster.describe_group(g) for g in cluster.groups()]
    if as_json:
        print_json([{"group": i.group, "state": i.state, "members": len(i.members)}
                    for i in infos])  # fmt: skip
        return
    table = Records("group", "state", "members", ids=["group"], right=["members"],
                    title=f"{len(infos)} consumer groups")  # fmt: skip
    for i in infos:
        table.add_row(i.group, i.state, str(len(i.members)))
    console.print(table)


@app.command("describe")
def describe_command(  # noqa: PLR0917 - a command's options
    group: str = typer.Argument(..., metavar="GROUP", help="The consumer group."),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """State and members of GROUP (each with its partitions), and its lag per topic.

    Per partition offsets are streams offsets show --group GROUP; lag as it moves,
    streams lag --group GROUP --watch.
    """
    from streams.cluster import ClusterError
    from streams.replay.lag import lag

    cluster = command_cluster(bootstrap, timeout, config_file, client)
    info = cluster.describe_group(group)
    if not info.exists:
        raise ClusterError(f"no consumer group {group!r}")
    lags = lag(cluster, [group])
    if as_json:
        topics = [
            {"topic": r.topic, "lag": r.lag, "max_partition_lag": r.max_partition_lag} for r in lags
        ]
        print_json({**_info_dict(info), "lag": topics})
        return
    members = Records("member", "client", "host", "partitions", ids=["member", "partitions"],
                      title=f"{group}: {info.state}, {len(info.members)} members")  # fmt: skip
    for m in info.members:
        parts = ", ".join(f"{topic}:{p}" for topic, p in m.partitions) or "-"
        members.add_row(m.instance_id or m.member_id, m.client_id, m.host, parts)
    console.print(members)
    table = Records("topic", "lag", "max partition lag", ids=["topic"],
                    right=["lag", "max partition lag"],
                    title="lag (per partition: streams offsets show)")  # fmt: skip
    for r in lags:
        table.add_row(r.topic, f"{r.lag:,}", f"{r.max_partition_lag:,}")
    console.print(table if lags else "no committed offsets")


@app.command("delete")
def delete_command(  # noqa: PLR0917 - a command's options
    groups: list[str] = GroupsArg,
    execute: bool = execute_option("Delete them"),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete consumer groups with their committed offsets.

    All or none: a group that does not exist, or that has members (stop its consumers
    first), is an error and nothing is deleted. A dry run unless --execute.
    """
    from streams.cluster.groups import check_deletable

    cluster = command_cluster(bootstrap, timeout, config_file, client)
    names = check_deletable(cluster, groups)  # refused in a dry run too
    if execute:
        cluster.delete_groups(names)
    if as_json:
        print_json({"deleted": names if execute else [], "executed": execute})
    elif execute:
        console.print(f"deleted group {', '.join(names)}")
    else:
        console.print(
            f"dry run: would delete group {', '.join(names)} and its committed offsets; "
            "pass --execute to delete"
        )
