"""``streams broker up | down | status | logs``: the local Apache Kafka broker.

These manage a broker process on this machine; they are not clients of a cluster, so they
take ``--port``/``--data-dir`` rather than ``-b``. ``status`` exits 1 when the broker is
down (after its JSON with ``--json``)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from streams.broker import LocalBroker
from streams.broker.local import DEFAULT_PORT
from streams.cli._common import JsonOpt, console, fail, human_duration, print_json
from streams.config import BOOTSTRAP_ENV, external_bootstrap

app = typer.Typer(
    help="Run a local Apache Kafka 4.x broker (KRaft, one node).", no_args_is_help=True
)

PortOpt = typer.Option(
    DEFAULT_PORT,
    "--port",
    "-p",
    envvar="STREAMS_BROKER_PORT",
    metavar="PORT",
    help="Client port on 127.0.0.1.",
)
DataDirOpt = typer.Option(
    None,
    "--data-dir",
    metavar="DIR",
    help="Where topics and logs live (default: per port, under the state dir).",
)


def _external_note(broker: LocalBroker, as_json: bool = False) -> bool:
    # KAFKA_BOOTSTRAP_SERVERS naming this very broker's address is the local broker itself
    # (a test or a script points every command at it): manage it then.
    external = external_bootstrap()
    if external and external != broker.bootstrap and as_json:
        print_json({"managed": False, "bootstrap": external})
        return True
    if external and external != broker.bootstrap:
        console.print(
            f"{BOOTSTRAP_ENV} is set ({external}): Streams uses that cluster; "
            "no local broker is managed."
        )
        return True
    return False


@app.command()
def up(
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    fresh: bool = typer.Option(False, "--fresh", help="Wipe the data dir first."),
) -> None:
    """Start the broker (idempotent: a running broker is reported, never started twice)."""
    broker = LocalBroker(port=port, data_dir=data_dir)
    if _external_note(broker):
        return
    with console.status(f"starting Apache Kafka {broker.version} on {broker.bootstrap}"):
        result = broker.up(fresh=fresh)
    st = result.status
    if result.already_running:
        console.print(f"broker already running at {st.bootstrap} (pid {st.pid})")
    else:
        console.print(
            f"broker up at {st.bootstrap} (Apache Kafka {st.version}, pid {st.pid}, "
            f"ready in {result.seconds:.1f} s)"
        )


@app.command()
def down(port: int = PortOpt, data_dir: Path | None = DataDirOpt) -> None:
    """Stop the broker cleanly (SIGTERM, wait, then SIGKILL)."""
    broker = LocalBroker(port=port, data_dir=data_dir)
    if _external_note(broker):
        return
    if broker.down():
        console.print(f"broker at {broker.bootstrap} stopped")
    else:
        console.print(f"no broker running at {broker.bootstrap}")


@app.command()
def status(
    port: int = PortOpt, data_dir: Path | None = DataDirOpt, as_json: bool = JsonOpt
) -> None:
    """Show pid, bootstrap address, Kafka version and uptime. Exit 1 when down."""
    broker = LocalBroker(port=port, data_dir=data_dir)
    if _external_note(broker, as_json):
        return
    st = broker.status()
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


@app.command()
def logs(
    port: int = PortOpt,
    data_dir: Path | None = DataDirOpt,
    lines: int = typer.Option(
        50, "--lines", "-n", metavar="N", help="How many lines from the end."
    ),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
) -> None:
    """Print the end of the broker's log."""
    broker = LocalBroker(port=port, data_dir=data_dir)
    if not broker.log_file.exists():
        fail(f"no log at {broker.log_file}: the broker has never run with this data dir")
    typer.echo(broker.tail(lines))
    if follow:
        with open(broker.log_file, "rb") as fh:
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
