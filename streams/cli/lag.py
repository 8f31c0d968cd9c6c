"""``streams lag [--group G] [--watch] [--threshold N]``: consumer lag per group and topic.

Record lag (records not yet processed) and time lag (the age of the oldest of them, read
from the record at the group's committed offset; ``time_lag_s`` in ``--json``, null
when it could not be read within ``--timeout``). An app's internal topics (retry tiers,
DLQs, repartition topics) follow the input they serve, named in the ``serves`` column.

Exit status: 0, or 3 when ``--threshold`` is exceeded (1 stays for errors), so a cron
job or a probe can alert on it.
"""

from __future__ import annotations

import time
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
    err_console,
    human_duration,
    option,
    print_json,
)
from streams.cli._tables import Records

if TYPE_CHECKING:
    from streams.replay.lag import TopicLag


THRESHOLD_EXIT = 3
GroupsOpt = option([], "--group", metavar="GROUP", help="Only this group (repeatable).")


def _table(rows: list[TopicLag], threshold: int | None) -> Records:
    from streams.replay.internal import serves_label

    columns = ("group", "topic", "serves", "state", "members", "partitions", "lag")
    table = Records(
        *columns,
        "max/partition",
        "time lag",
        ids=["group", "topic"],
        right=[*columns[4:], "max/partition", "time lag"],
        title=f"consumer lag ({time.strftime('%H:%M:%S')})",
    )
    for r in rows:
        style = "bold red" if threshold is not None and r.lag > threshold else None
        table.add_row(
            r.group, r.topic, serves_label(r.serves, r.internal), r.state, str(r.members),
            str(r.partitions), f"{r.lag:,}", f"{r.max_partition_lag:,}", _age(r.time_lag_s),
            style=style,
        )  # fmt: skip
    if not rows:
        table.caption = "no committed offsets"
    return table


def _age(seconds: float | None) -> str:
    return "?" if seconds is None else human_duration(seconds)


def lag_command(  # noqa: PLR0917 - a command's options
    groups: list[str] = GroupsOpt,
    watch: bool = option(False, "--watch", help="Refresh until Ctrl-C."),
    interval: float = typer.Option(
        2.0, "--interval", min=0.2, metavar="SECONDS", help="Seconds between refreshes."
    ),
    threshold: int | None = typer.Option(
        None,
        "--threshold",
        min=0,
        metavar="N",
        help=f"Exit {THRESHOLD_EXIT} when a group's topic lag is above N.",
    ),
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Lag per consumer group and topic (all groups unless --group)."""
    from rich.live import Live

    from streams.replay.lag import lag, over_threshold

    cluster = command_cluster(bootstrap, timeout, config_file, client)
    if watch and console.is_terminal and not as_json:
        with Live(_table(lag(cluster, groups), threshold), console=console) as live:
            try:
                while True:
                    time.sleep(interval)  # the refresh period the user asked for
                    live.update(_table(lag(cluster, groups), threshold))
            except KeyboardInterrupt:
                return
    while True:
        rows = lag(cluster, groups)
        if as_json:
            print_json([r.as_dict() for r in rows])
        else:
            console.print(_table(rows, threshold))
        if not watch:
            break
        time.sleep(interval)  # without a terminal, --watch prints one table per period
    if threshold is not None:
        above = over_threshold(rows, threshold)
        if above:
            worst = max(above, key=lambda r: r.lag)
            err_console.print(
                f"lag above {threshold:,} on {len(above)} group/topic(s); worst "
                f"{worst.group}/{worst.topic} at {worst.lag:,}",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(THRESHOLD_EXIT)
