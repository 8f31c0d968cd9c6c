"""``streams broker up | down | status | logs``: a local Apache Kafka broker or cluster.

These manage processes on this machine; they are not clients of a cluster, so they take
``--port``/``--data-dir`` rather than ``-b``. ``up --nodes N`` starts an N-node cluster
(client ports PORT, PORT+1, ...; data under the state dir in ``cluster-PORT``); one node is
the single broker (``broker-PORT``). The other commands find which of the two runs at
``--port`` by themselves, wherever its ``--data-dir`` is (``--nodes`` forces it).
``up --node ID`` and ``down --node ID`` (``--kill``: SIGKILL, ``--pause``: SIGSTOP) act on
one node of a cluster, for failure drills. ``status`` exits 1 when the broker, or every
node of the cluster, is down (after its JSON with ``--json``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from streams.cli._common import JsonOpt, console, fail, human_duration, option, print_json
from streams.config import BOOTSTRAP_ENV, DEFAULT_PORT, external_bootstrap

if TYPE_CHECKING:
    from streams.broker import LocalBroker, LocalCluster

    Target = LocalBroker | LocalCluster


app = typer.Typer(
    help="Run Apache Kafka 4.x (KRaft) on this machine: one broker, or a cluster of nodes "
    "(--nodes N).",
    no_args_is_help=True,
)

PortOpt = typer.Option(
    DEFAULT_PORT,
    "--port",
    envvar="STREAMS_BROKER_PORT",
    metavar="PORT",
    help="Client port on 127.0.0.1 (a cluster's nodes: PORT, PORT+1, ...).",
)
DataDirOpt = typer.Option(
    None,
    "--data-dir",
    metavar="DIR",
    help="Where topics and logs live (default: per port, under the state dir).",
)
NodesOpt = typer.Option(
    None,
    "--nodes",
    min=1,
    metavar="N",
    help="How many nodes (default: what runs, or was last formatted, at --port; else 1).",
)
OneNodeOpt = typer.Option(
    None, "--node", min=1, metavar="ID", help="Only this node of the cluster (1, 2, ...)."
)


def _target(port: int, data_dir: Path | None, nodes: int | None, *, up: bool = False) -> Target:
    """The broker or cluster the command is about: the one running at ``--port`` when no
    ``--data-dir`` is given, wherever its data dir is; otherwise ``nodes`` when given, or
    the cluster of ``--port`` when one of its nodes runs, or (for all but ``up``, which
    starts the single broker then) when it is the only one ever formatted there."""
    from streams.broker import LocalBroker, LocalCluster

    if data_dir is None and nodes is None and (running := _running_at(port)) is not None:
        return running
    if nodes is None:
        nodes = _stored_nodes(port, data_dir, up=up)
    if nodes == 1:
        return LocalBroker(port=port, data_dir=data_dir)
    return LocalCluster(nodes, port=port, data_dir=data_dir)


def _running_at(port: int) -> Target | None:
    """The broker, or the cluster one of whose nodes, serves ``port`` now (started with
    any ``--data-dir``); None when nothing of ours does."""
    from streams.broker import LocalBroker, LocalCluster
    from streams.broker.cluster import stored_size
    from streams.broker.node import serving

    found = serving(port)
    if found is None:
        return None
    folder, node_id = found
    size = stored_size(folder.parent)
    if size is None or folder.name != f"node-{node_id}":
        return LocalBroker(port=port, data_dir=folder)
    # A cluster's nodes serve PORT, PORT+1, ... in node order (``up --nodes``).
    return LocalCluster(size, port=port - node_id + 1, data_dir=folder.parent)


def _stored_nodes(port: int, data_dir: Path | None, *, up: bool) -> int:
    from streams.broker import LocalBroker, LocalCluster
    from streams.broker.cluster import default_cluster_dir, stored_size
    from streams.broker.local import default_data_dir

    size = stored_size(data_dir or default_cluster_dir(port))
    if size is None:
        return 1
    if data_dir is not None:
        return size
    if LocalCluster(size, port=port).status().alive:
        return size
    if up or LocalBroker(port=port).status().running or default_data_dir(port).exists():
        return 1
    return size


def _cluster(port: int, data_dir: Path | None, nodes: int | None) -> LocalCluster:
    from streams.broker import LocalCluster

    target = _target(port, data_dir, nodes)
    if not isinstance(target, LocalCluster):
        fail(
            f"no cluster at port {port} (only the single broker): "
            "`streams broker up --nodes 3` starts one"
        )
    return target


def _external_note(target: Target, as_json: bool = False) -> bool:
    # KAFKA_BOOTSTRAP_SERVERS naming this very broker's address is the local broker itself
    # (a test or a script points every command at it): manage it then.
    external = external_bootstrap()
    if not external or external in (target.bootstrap, target.bootstrap.split(",")[0]):
        return False
    if as_json:
        print_json({"managed": False, "bootstrap": external})
    else:
        console.print(
            f"{BOOTSTRAP_ENV} is set ({external}): Streams uses that cluster; "
            "no local broker is managed."
        )
    return True


def _noun(target: Target) -> str:
    from streams.broker import LocalBroker

    return "broker" if isinstance(target, LocalBroker) else f"{target.size}-node cluster"


@app.command()
def up(
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    nodes: int | None = NodesOpt,
    node: int | None = OneNodeOpt,
    fresh: bool = typer.Option(False, "--fresh", help="Wipe the data dir first."),
) -> None:
    """Start the broker, or a cluster with --nodes N (idempotent: never started twice)."""
    from streams.broker import LocalBroker

    if node is not None:
        cluster = _cluster(port, data_dir, nodes)
        with console.status(f"starting node {node}"):
            done = cluster.start(node)
        address = cluster.node_bootstrap(node)
        console.print(f"node {node} up at {address}" if done else f"node {node} is running")
        return
    target = _target(port, data_dir, nodes, up=True)
    if _external_note(target):
        return
    with console.status(f"starting Apache Kafka {target.version} on {target.bootstrap}"):
        if isinstance(target, LocalBroker):
            _broker_up(target, fresh)
        else:
            _cluster_up(target, fresh)


def _broker_up(broker: LocalBroker, fresh: bool) -> None:
    result = broker.up(fresh=fresh)
    st = result.status
    if result.already_running:
        console.print(f"broker already running at {st.bootstrap} (pid {st.pid})")
    else:
        console.print(
            f"broker up at {st.bootstrap} (Apache Kafka {st.version}, pid {st.pid}, "
            f"ready in {result.seconds:.1f} s)"
        )


def _cluster_up(cluster: LocalCluster, fresh: bool) -> None:
    result = cluster.up(fresh=fresh)
    if result.already_running:
        console.print(f"{_noun(cluster)} already running at {cluster.bootstrap}")
        return
    done = [f"started node {n}" for n in result.started if len(result.started) < cluster.size]
    done += [f"continued paused node {n}" for n in result.resumed]
    started = f" ({', '.join(done)})" if done else ""
    console.print(
        f"{_noun(cluster)} up at {cluster.bootstrap}{started} (Apache Kafka "
        f"{cluster.version}, ready in {result.seconds:.1f} s)"
    )
    _print_nodes(cluster)


@app.command()
def down(
    *,
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    nodes: int | None = NodesOpt,
    node: int | None = OneNodeOpt,
    kill: bool = typer.Option(False, "--kill", help="With --node: SIGKILL, as a crash would."),
    pause: bool = typer.Option(
        False, "--pause", help="With --node: SIGSTOP, a frozen machine (up --node continues it)."
    ),
) -> None:
    """Stop the broker, or every node of the cluster, cleanly (SIGTERM, wait, then SIGKILL)."""
    from streams.broker import LocalBroker

    if kill and pause:
        fail("--kill and --pause exclude each other")
    if node is not None:
        _node_down(_cluster(port, data_dir, nodes), node, kill=kill, pause=pause)
        return
    if kill or pause:
        fail("--kill and --pause act on one node: give --node ID")
    target = _target(port, data_dir, nodes)
    if _external_note(target):
        return
    what = "broker" if isinstance(target, LocalBroker) else "cluster"
    if target.down():
        console.print(f"{what} at {target.bootstrap} stopped")
    else:
        console.print(f"no {what} running at {target.bootstrap}")


def _node_down(cluster: LocalCluster, node: int, *, kill: bool, pause: bool) -> None:
    if kill:
        done, did = cluster.kill(node), "killed"
    elif pause:
        done, did = cluster.pause(node), "paused"
    else:
        done, did = cluster.stop(node), "stopped"
    console.print(f"node {node} {did}" if done else f"node {node} is not running")


@app.command()
def status(
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    nodes: int | None = NodesOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Show pid, address, version and uptime of the broker or of each node; exit 1 when down."""
    from streams.broker import LocalCluster

    target = _target(port, data_dir, nodes)
    if _external_note(target, as_json):
        return
    if isinstance(target, LocalCluster):
        _cluster_status(target, as_json)
        return
    st = target.status()
    if as_json:
        print_json(
            {
                "managed": True,
                "running": st.running,
                "bootstrap": st.bootstrap,
                "pid": st.pid,
                "version": st.version,
                "uptime_s": None if st.uptime is None else round(st.uptime, 1),
                "data_dir": str(st.data_dir),
                "stale_pid": st.stale_pid,
            }
        )
    if not st.running:
        if st.stale_pid is not None and not as_json:
            console.print(f"stale pid file: process {st.stale_pid} is gone")
        fail(f"broker is down ({st.bootstrap}, data dir {st.data_dir})")
    if as_json:
        return
    uptime = human_duration(st.uptime or 0.0)
    console.print(f"running   pid {st.pid}")
    console.print(f"bootstrap {st.bootstrap}")
    console.print(f"version   Apache Kafka {st.version}")
    console.print(f"uptime    {uptime}")
    console.print(f"data dir  {st.data_dir}")


def _cluster_status(cluster: LocalCluster, as_json: bool) -> None:
    st = cluster.status()
    if as_json:
        print_json(
            {
                "managed": True,
                "running": st.running,
                "bootstrap": st.bootstrap,
                "version": st.version,
                "data_dir": str(st.data_dir),
                "nodes": [_node_json(n) for n in st.nodes],
            }
        )
    else:
        console.print(f"cluster   {_counts(cluster)}")
        console.print(f"bootstrap {st.bootstrap}")
        console.print(f"version   Apache Kafka {st.version}")
        console.print(f"data dir  {st.data_dir}")
        _print_nodes(cluster)
    if not st.alive:
        fail(f"cluster is down ({st.bootstrap}, data dir {st.data_dir})")


def _node_json(node: Any) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "state": node.state.value,
        "pid": node.pid,
        "bootstrap": node.bootstrap,
        "uptime_s": None if node.uptime is None else round(node.uptime, 1),
        "data_dir": str(node.data_dir),
        "stale_pid": node.stale_pid,
    }


def _counts(cluster: LocalCluster) -> str:
    states = [n.state.value for n in cluster.status().nodes]
    counted = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states))
    return f"{cluster.size} nodes: {counted}"


def _print_nodes(cluster: LocalCluster) -> None:
    from rich.table import Table

    table = Table("node", "state", "pid", "address", "uptime", box=None, pad_edge=False)
    for node in cluster.status().nodes:
        table.add_row(
            str(node.node_id),
            node.state.value,
            "" if node.pid is None else str(node.pid),
            node.bootstrap,
            "" if node.uptime is None else human_duration(node.uptime),
        )
    console.print(table)


@app.command()
def logs(
    *,
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    nodes: int | None = NodesOpt,
    node: int = typer.Option(1, "--node", help="Whose log, in a cluster.", metavar="ID"),
    lines: int = option(50, "--lines", metavar="N", help="How many lines from the end."),
    follow: bool = option(False, "--follow", help="Keep printing new lines."),
) -> None:
    """Print the end of the broker's log (a cluster's: of --node ID)."""
    from streams.broker import LocalBroker

    target = _target(port, data_dir, nodes)
    log_file = target.log_file if isinstance(target, LocalBroker) else target.node(node).log_file
    if not log_file.exists():
        fail(f"no log at {log_file}: the broker has never run with this data dir")
    typer.echo(target.tail(lines) if isinstance(target, LocalBroker) else target.tail(node, lines))
    if follow:
        with open(log_file, "rb") as fh:
            fh.seek(0, 2)
            try:
                while True:
                    chunk = fh.readline()
                    if chunk:
                        typer.echo(chunk.decode(errors="replace"), nl=False)
                    else:
                        time.sleep(0.2)
            except KeyboardInterrupt:
                return
