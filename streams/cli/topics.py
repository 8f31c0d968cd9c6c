"""``streams topics list | describe | create | delete``: manage a cluster's topics.

A thin layer over ``streams.tools.topics``. ``delete`` asks on a terminal unless
``--yes``, and refuses without a terminal (a script must say ``--yes``).
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
    print_json,
    replication_option,
)
from streams.cli._tables import Records

if TYPE_CHECKING:
    pass


app = typer.Typer(
    help="List, describe, create and delete topics.",
    no_args_is_help=True,
)

TopicArg = typer.Argument(..., metavar="TOPIC", help="The topic's name.")
TopicsArg = typer.Argument(..., metavar="TOPIC...", help="The topics to delete.")
TopicConfigOpt = typer.Option(
    [],
    "--topic-config",
    metavar="KEY=VALUE",
    help="A topic config, e.g. cleanup.policy=compact or retention.ms=86400000 (repeatable).",
)


@app.command("list")
def list_command(  # noqa: PLR0917 - a command's options
    include_internal: bool = typer.Option(
        False, "--all", help="Include Kafka's internal topics (__consumer_offsets, ...)."
    ),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every topic with its partitions and replication factor."""
    from streams.tools import topics as tools

    rows = tools.list_topics(
        command_cluster(bootstrap, timeout, config_file, client), internal=include_internal
    )
    if as_json:
        print_json([r.as_dict() for r in rows])
        return
    table = Records("topic", "partitions", "replication", ids=["topic"],
                    right=["partitions", "replication"], title=f"{len(rows)} topics")  # fmt: skip
    for r in rows:
        table.add_row(r.name, str(r.partitions), str(r.replication_factor))
    console.print(table)


@app.command("describe")
def describe_command(  # noqa: PLR0917 - a command's options
    topic: str = TopicArg,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Partitions, offsets and configs of TOPIC.

    Each partition with its leader, replicas, in-sync replicas, start and end offsets and
    record count; then the topic's configs that are not Kafka's defaults, with where each
    comes from (the topic itself, or the cluster's defaults).
    """
    from streams.tools import topics as tools

    info = tools.describe_topic(command_cluster(bootstrap, timeout, config_file, client), topic)
    if as_json:
        print_json(info.as_dict())
        return
    columns = ("partition", "leader", "replicas", "isr", "start", "end", "records")
    table = Records(
        *columns,
        ids=["partition"],
        right=columns,
        title=f"{info.name}: {len(info.partitions)} partitions, replication factor "
        f"{info.replication_factor}, {info.records:,} records",
    )
    for p in info.partitions:
        table.add_row(
            str(p.partition), str(p.leader), ",".join(map(str, p.replicas)),
            ",".join(map(str, p.isr)), str(p.start), str(p.end), f"{p.records:,}",
        )  # fmt: skip
    console.print(table)
    if not info.configs:
        console.print("configs: all Kafka's defaults")
        return
    configs = Records(
        "config", "value", "set by", ids=["config"], title="configs (not Kafka's defaults)"
    )
    for c in info.configs:
        configs.add_row(c.name, "(secret)" if c.value is None else c.value, c.source)
    console.print(configs)


@app.command("create")
def create_command(  # noqa: PLR0917 - a command's options
    topic: str = TopicArg,
    partitions: int = option(1, "--partitions", min=1, help="Number of partitions."),
    replication_factor: int = replication_option(
        "Replicas of each partition (default -1: the cluster's default.replication.factor)."
    ),
    topic_configs: list[str] = TopicConfigOpt,
    if_not_exists: bool = typer.Option(
        False, "--if-not-exists", help="Succeed when the topic exists already (it is not changed)."
    ),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create TOPIC and wait until the brokers serve it.

    Creating a topic that exists is an error unless --if-not-exists; with it, the topic
    is left as it is, even when its partitions or configs differ from the options.
    """
    from streams.tools import topics as tools

    created = tools.create(
        command_cluster(bootstrap, timeout, config_file, client),
        topic,
        partitions=partitions,
        replication_factor=replication_factor,
        configs=tools.parse_topic_configs(topic_configs),
        if_not_exists=if_not_exists,
    )
    if as_json:
        print_json({"topic": topic, "created": created})
    elif created:
        console.print(f"created topic {topic} ({partitions} partitions)")
    else:
        console.print(f"topic {topic} exists already; left as it is")


@app.command("delete")
def delete_command(  # noqa: PLR0917 - a command's options
    topics: list[str] = TopicsArg,
    execute: bool = execute_option("Delete them", "--yes"),
    if_exists: bool = typer.Option(
        False, "--if-exists", help="Skip topics that do not exist instead of failing."
    ),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Delete topics with all their records (a dry run unless --execute).

    A topic that does not exist is an error (nothing is deleted) unless --if-exists.
    """
    from streams.tools import topics as tools

    cluster = command_cluster(bootstrap, timeout, config_file, client)
    if execute:
        deleted = tools.delete(cluster, topics, if_exists=if_exists)
    else:
        deleted = tools.deletable(cluster, topics, if_exists=if_exists)
    if as_json:
        print_json({"deleted": deleted, "executed": execute})
    elif not deleted:
        console.print("nothing to delete")
    elif execute:
        console.print(f"deleted {', '.join(deleted)}")
    else:
        console.print(
            f"dry run: would delete {', '.join(deleted)} and every record in them; "
            "pass --execute to delete"
        )
