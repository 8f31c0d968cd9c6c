"""``python -m streams.bench [--quick] [--records N] [--only SECTION]``.

Runs on ``KAFKA_BOOTSTRAP_SERVERS`` when set, else on a fresh local broker started for the
run (its start time is the first figure).
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from streams import speedups
from streams.bench import (
    bare_client,
    cluster,
    codec,
    concurrency,
    failures,
    peers,
    pipeline,
    request_reply,
    restart,
    retry_routing,
    share,
    state,
    throughput,
)
from streams.bench import dedup as dedup_bench
from streams.bench import faust as faust_bench
from streams.bench import replay as replay_bench
from streams.bench import windows as windows_bench
from streams.bench.core import BenchContext, Row, peak_rss_mb
from streams.broker import LocalBroker, free_port
from streams.config import external_bootstrap

# Each issue that adds a figure adds its section here.
SECTIONS: dict[str, Callable[[BenchContext], list[Row]]] = {
    "bare": bare_client.run,
    "cluster": cluster.run,
    "codec": codec.run,
    "concurrency": concurrency.run,
    "state": state.run,
    "dedup": dedup_bench.run,
    "failures": failures.run,
    "faust": faust_bench.run,
    "pipeline": pipeline.run,
    "replay": replay_bench.run,
    "request_reply": request_reply.run,
    "restart": restart.run,
    "retry_routing": retry_routing.run,
    "share": share.run,
    "throughput": throughput.run,
    "peers": peers.run,
    "windows": windows_bench.run,
}


def _print(rows: list[Row], console: Console) -> None:
    table = Table(title="Streams bench", show_lines=False)
    for col in ("section", "figure", "value", "baseline", "ratio", "target", "note"):
        table.add_column(col, justify="right" if col in {"value", "baseline", "ratio"} else "left")
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}"
        target = "" if r.target is None else f">= {r.target:.2f}"
        base = "" if r.baseline is None else f"{r.baseline:,.0f} {r.unit}"
        table.add_row(r.section, r.name, f"{r.value:,.1f} {r.unit}", base, ratio, target, r.note)
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(prog="streams-bench")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS))
    args = parser.parse_args()
    console = Console(width=150)
    records = 20_000 if args.quick else args.records
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="streams-bench-") as data_dir:
        bootstrap = external_bootstrap()
        broker: LocalBroker | None = None
        broker_pid: int | None = None  # an external cluster's CPU is not this machine's
        if bootstrap is None:
            broker = LocalBroker(port=free_port(), data_dir=data_dir)
            result = broker.up()
            bootstrap, broker_pid = broker.bootstrap, result.status.pid
            rows.append(Row("broker", "start to first metadata", result.seconds, "s"))
        try:
            ctx = BenchContext(
                bootstrap=bootstrap, records=records, quick=args.quick, broker_pid=broker_pid
            )
            for name, section in SECTIONS.items():
                if args.only and name not in args.only:
                    continue
                with console.status(f"bench: {name}"):
                    try:
                        rows.extend(section(ctx))
                    finally:
                        ctx.cleanup()
        finally:
            if broker is not None:
                broker.down()
    rows.append(Row("process", "peak RSS of the bench process", peak_rss_mb(), "MB"))
    _print(rows, console)
    # every figure depends on it: say whether the record path ran compiled (streams.speedups)
    names = speedups.COMPILED
    plain = [n for n in names if not speedups.compiled(importlib.import_module(n))]
    console.print(
        f"record path: {len(names) - len(plain)} of {len(names)} modules compiled with Cython"
        + (f"; plain Python: {', '.join(plain)}" if plain else "")
    )


if __name__ == "__main__":
    main()
