"""``streams run --instances N``: each child is given every option of the command as parsed.

The parent writes a child's options back as a command line (``command_line``) from what
click parsed, not from a list of its own; these tests parse that command line again and
compare. ``EVERY_OPTION`` sets each option of ``streams run`` to a value other than its
default, and the first test fails when an option is added without a value here, so a new
option is always checked on its way to the children. The client settings are the
exception: a command line is for anyone to read (``ps``), so they go to a child in a file
of its own (``handed_settings``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer import _click

import streams.cli
from streams.cli.run import (
    HANDED_SETTINGS_ENV,
    _handing,
    child_params,
    command_line,
    handed_settings,
)

CLI: Any = streams.cli.cli
RUN: _click.Command = CLI.commands["run"]

EVERY_OPTION = [
    "--app-id=billing",
    "--set=input=orders",
    "-s",
    "limit=-1",  # a value that starts with '-'
    "-b",
    "broker-1:9092,broker-2:9092",
    "--instances=3",
    "--batch-size=10",
    "-X",
    "sasl.password=-hunter2",
    "-Xconsumer.fetch.min.bytes=1",
    "--status",
    "--guarantee=exactly_once",
    "--state-dir=/var/lib/streams",
    "--instance-id=east",
    "--static-membership",
    "--config=client.properties",
    "--connect-timeout=3.5",  # run's first name for --timeout
    "--stall-warning=5",
    "--stall-after=7",
    "--wait-for-broker",
    "--schemas=schemas",
    "--metrics-port=9100",
    "--query-port=0",
    "--advertise=host.example",
    "--http-host=0.0.0.0",
    "--http-token-file=/run/secrets/streams-http-token",  # a path: the token is not on argv
    "--share",
    "--deliveries=4",
    "--concurrency=8",
    "--ordering=partition",
    "--replication-factor=3",
    "--json",
    "topology/orders.py",
]


def parse(args: list[str], parent: _click.Context | None = None) -> _click.Context:
    """``streams run ARGS`` parsed (nothing runs)."""
    return RUN.make_context("run", list(args), parent=parent)


def test_every_option_of_run_is_given_a_value_here() -> None:
    ctx = parse(EVERY_OPTION)
    unset = [
        param.name
        for param in RUN.params
        if ctx.get_parameter_source(param.name or "") is not _click.core.ParameterSource.COMMANDLINE
    ]
    assert unset == [], "a new option of `streams run`: give it a value in EVERY_OPTION"


def test_a_child_is_given_every_option_of_the_parent_and_its_own_ports_and_id() -> None:
    parent = parse(EVERY_OPTION).params
    for i in (0, 2):
        args = command_line(RUN, child_params(parent, i, "billing-7"))
        assert parse(args).params == {
            **parent,
            "instances": 1,
            "status": False,
            "app_id": "billing-7",
            "metrics_port": 9100 + i,
            "query_port": 0,  # 0: each child a free port
            "instance_id": f"east-{i}",
            "client": [],  # handed over in a file
            "config_file": None,
        }
        assert not any("hunter2" in a or "client.properties" in a for a in args)


def test_a_child_reads_the_settings_handed_to_it_once_from_a_private_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = {"sasl.password": "-hunter2", "ssl.key.pem": "-----BEGIN\nKEY\n-----END\n"}
    with _handing(settings) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text()) == settings
        monkeypatch.setenv(HANDED_SETTINGS_ENV, str(path))
        assert handed_settings() == settings
        # read once: the file is gone, and nothing the child starts finds it named
        assert not path.exists() and HANDED_SETTINGS_ENV not in os.environ
    assert handed_settings() is None  # a process no parent handed settings to


def test_a_file_its_child_never_read_is_removed_by_the_parent() -> None:
    with _handing({"sasl.password": "hunter2"}) as path:
        handed: Path = path
    assert not handed.exists()


def test_options_left_to_their_defaults_stay_defaults_in_a_child() -> None:
    parent = parse(["topology/orders.py"]).params
    args = command_line(RUN, child_params(parent, 1, "orders"))
    child = parse(args).params
    assert child == {**parent, "instances": 1, "status": False, "app_id": "orders"}
    assert not any(a.startswith(("--metrics-port", "--query-port", "--instance-id")) for a in args)


def test_the_options_of_streams_itself_reach_a_child() -> None:
    root = CLI.make_context("streams", ["-vv", "--log-json", "run"])
    again = CLI.make_context("streams", [*command_line(CLI, root.params), "run"])
    assert again.params == root.params == {"verbose": 2, "log_json": True}
