"""A test suite that uses the TestDriver is quiet by default: until a process configures
logging, Streams' lines go to stdlib ``logging`` at its level (WARNING), not to stdout at
every level (structlog's defaults), so a store's restore lines never flood a test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import logging, sys
    from streams.examples import example_path
    from streams.testing import TestDriver
    from streams.topology import load_topology
    from streams.topology.loader import import_file

    if sys.argv[1:] == ["debug"]:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    revenue = load_topology(example_path("revenue"))
    orders = import_file(example_path("orders")).sample_orders(20)
    with TestDriver(revenue, partitions=2) as driver:  # restores two store partitions
        driver.pipe("orders", orders)
    """
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, check=True
    )


def test_the_driver_logs_nothing_below_warning_unless_asked() -> None:
    quiet = run()
    assert (quiet.stdout, quiet.stderr) == ("", "")
    asked = run("debug")  # the process's own logging decides, as for any library
    assert asked.stdout == ""
    assert "restoring store partition" in asked.stderr
