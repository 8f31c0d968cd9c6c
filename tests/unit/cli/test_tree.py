"""One vocabulary across the whole ``streams`` command tree.

Walks every command typer builds (the same ``streams.cli.cli`` that ``--help`` and the
docs page show) and checks what a Kafka user relies on: a command that talks to a cluster
takes -b/--bootstrap-server (and --bootstrap), --config, -X and --timeout with the same
defaults; a command that prints data takes --json; a command that reads schemas takes
--schemas; every command has a help line; help shows no type labels (``<bool>``) and no
reStructuredText markup. Exemptions are listed below, each with its reason.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

import streams.cli
from streams.cli import EXIT_CODES, app
from streams.cli._common import SHORT_OPTIONS
from streams.cli._help import find, walk
from streams.cluster import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT
from streams.errors import StreamsError

CLI: Any = streams.cli.cli
COMMANDS = sorted(" ".join(path) for path in walk(CLI) if path)
LEAVES = [name for name in COMMANDS if not hasattr(find(CLI, tuple(name.split())), "commands")]

# Commands that do not talk to a Kafka cluster as a client.
NOT_CLUSTER_CLIENTS = {
    "broker up": "starts a local broker process (--port, --data-dir)",
    "broker down": "stops the local broker process",
    "broker status": "asks the local broker process (pid file), not a cluster",
    "broker logs": "reads the local broker's log file",
    "demo": "the tour brings its own local broker (or $KAFKA_BOOTSTRAP_SERVERS)",
    "describe": "reads a topology file",
    "schemas check": "reads schema files",
    "schemas list": "reads schema files",
    "schemas show": "reads schema files",
}
# Commands whose output is not data a script would parse.
NO_JSON = {
    "broker up": "an action: one line saying it is up",
    "broker down": "an action: one line saying it stopped",
    "broker logs": "the broker's own log text",
    "demo": "a guided tour for a person",
}
# Commands that read schemas (to encode, decode or run envelopes); the others need none.
READS_SCHEMAS = {
    "consume",
    "describe",
    "dlq show",
    "produce",
    "replay",
    "run",
    "schemas check",
    "schemas list",
    "schemas show",
}
TYPE_LABEL = re.compile(r"<(?:bool|str|int|float|path|list\[[^\]]*\]|[a-z]+ range)>")


def _options(name: str) -> dict[str, Any]:
    """Every option name command ``name`` parses (shown, secondary and hidden aliases) →
    its parameter."""
    command = find(CLI, tuple(name.split()))
    names: dict[str, Any] = {}
    for param in command.params:
        for opt in (*param.opts, *param.secondary_opts, *getattr(param, "hidden_aliases", ())):
            names[opt] = param
    return names


def _parsed(name: str, args: list[str]) -> dict[str, Any]:
    """The values ``streams NAME ARGS`` would run with (required ones may be missing)."""
    command = find(CLI, tuple(name.split()))
    with command.make_context(name, args, resilient_parsing=True) as ctx:
        return dict(ctx.params)


def test_the_tree_holds_the_commands_users_know() -> None:
    for name in ("run", "describe", "replay", "lag", "dlq list", "offsets reset", "schemas list"):
        assert name in LEAVES
    # exemptions name real commands: a renamed one must not silently escape the checks
    for name in (*NOT_CLUSTER_CLIENTS, *NO_JSON, *READS_SCHEMAS):
        assert name in LEAVES or name in {"consume", "produce"}, name


@pytest.mark.parametrize("name", [n for n in LEAVES if n not in NOT_CLUSTER_CLIENTS])
def test_a_command_that_talks_to_a_cluster_takes_the_cluster_flags(name: str) -> None:
    options = _options(name)
    missing = {"-b", "--bootstrap-server", "--bootstrap", "--config", "-X", "--timeout"}
    assert missing - options.keys() == set(), name
    bootstrap = options["--bootstrap-server"]
    assert options["-b"] is bootstrap and options["--bootstrap"] is bootstrap
    assert bootstrap.envvar == "KAFKA_BOOTSTRAP_SERVERS"
    assert bootstrap.default == DEFAULT_BOOTSTRAP
    assert options["--timeout"].default == DEFAULT_TIMEOUT  # one default timeout
    for flag in ("-b", "--bootstrap-server", "--bootstrap"):
        assert _parsed(name, [flag, "kafka-1:9093"])[bootstrap.name] == "kafka-1:9093"


def test_old_option_names_still_parse_but_help_shows_one_name() -> None:
    assert _parsed("run", ["--connect-timeout", "3"])["timeout"] == 3.0
    assert str(_parsed("schemas list", ["--dir", "elsewhere"])["schemas_dir"]) == "elsewhere"
    shown = CliRunner().invoke(app, ["lag", "--help"], env={"COLUMNS": "80"}).output
    assert "--bootstrap-server" in shown and "--bootstrap " not in shown
    assert "--bootstrap-server," not in shown


@pytest.mark.parametrize("name", [n for n in LEAVES if n not in NO_JSON])
def test_a_command_that_prints_data_takes_json(name: str) -> None:
    assert "--json" in _options(name), name


@pytest.mark.parametrize("name", sorted(READS_SCHEMAS))
def test_a_command_that_reads_schemas_takes_schemas(name: str) -> None:
    if name not in LEAVES:
        pytest.skip(f"streams {name} is not in this tree")
    assert "--schemas" in _options(name), name


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_a_help_line(name: str) -> None:
    command = find(CLI, tuple(name.split()))
    assert (command.help or command.short_help or "").strip(), name


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_help_shows_values_a_user_can_type(name: str) -> None:
    result = CliRunner().invoke(app, [*name.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert TYPE_LABEL.search(result.output) is None, result.output
    assert "``" not in result.output, result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert "{" not in usage, result.output


# Every command's --help in one process whose stdout is a pipe, each followed by a line
# NUL, the command, NUL, its exit status (standalone_mode=False returns it).
PIPED_HELP = """
from streams.cli import cli
from streams.cli._help import walk
for path in walk(cli):
    code = cli.main([*path, "--help"], prog_name="streams", standalone_mode=False)
    print(f"\\0{' '.join(path)}\\0{code}", flush=True)
"""
# What makes rich take a pipe for a terminal.
TERMINAL_HINTS = ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TTY_COMPATIBLE", "COLUMNS")


def test_help_piped_wraps_and_cuts_nothing_for_every_command() -> None:
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_HINTS}
    result = subprocess.run(
        [sys.executable, "-c", PIPED_HELP],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    parts = re.split(r"\0([^\0]*)\0(\d+)\n", result.stdout)
    *chunks, rest = parts  # help, command, status, help, ..., what follows the last status
    assert rest == ""
    helps = {
        name: (text, int(code))
        for text, name, code in zip(chunks[0::3], chunks[1::3], chunks[2::3], strict=True)
    }
    assert sorted(helps) == ["", *COMMANDS]
    for name, (text, code) in helps.items():
        assert code == 0, (name, text)
        assert "…" not in text, text  # rich's mark of a cut
        assert max(len(line) for line in text.splitlines()) <= 80, text
        command = find(CLI, tuple(name.split()))
        for param in (p for p in command.params if not getattr(p, "hidden", False)):
            for opt in (o for o in (*param.opts, *param.secondary_opts) if o.startswith("-")):
                assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), (name, opt)
        flat = " ".join(text.split())
        for sub in getattr(command, "commands", {}).values():  # listed by a whole paragraph
            summary = inspect.cleandoc(sub.help or "").split("\n\n")[0]
            assert " ".join(summary.split()) in flat, (name, sub.name)


def test_help_and_usage_errors_name_values_as_users_type_them() -> None:
    result = CliRunner().invoke(app, ["replay", "--help"], env={"COLUMNS": "200"})
    assert "Usage: streams replay [OPTIONS] SOURCE" in result.output
    for metavar in ("HOST:PORT", "POSITION", "KEY=VALUE", "SECONDS", "FILE"):
        assert metavar in result.output
    missing = CliRunner().invoke(app, ["describe"], env={"COLUMNS": "200"})
    assert missing.exit_code == 2  # a usage error
    assert "Missing argument 'FILE'" in missing.output


def test_the_root_help_lists_the_exit_codes() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    flat = " ".join(result.output.split())
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {meaning}" in flat


def test_run_shows_the_orderings_the_topology_knows() -> None:
    # Written out in streams.cli.run so that help loads no topology code.
    from streams.cli.run import ORDERINGS_SHOWN  # noqa: PLC0415 - next to its check
    from streams.topology.topology import ORDERINGS  # noqa: PLC0415

    assert "|".join(ORDERINGS) == ORDERINGS_SHOWN


def test_demo_only_names_the_steps_there_are_when_one_is_not() -> None:
    # Raised before any broker is looked for; `streams` prints it as one line (main()).
    result = CliRunner().invoke(app, ["demo", "--only", "topology,nope"])
    assert isinstance(result.exception, StreamsError)
    said = str(result.exception)
    assert "no demo step 'nope' (steps: round-trip, schemas, shell, topology," in said
    assert "work-queue, concurrency, replay, cluster, testing)" in said


def test_version_names_streams_and_its_kafka_client() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"streams {streams.__version__} (confluent-kafka ")


def _named_options(name: str) -> list[tuple[list[str], list[str]]]:
    """Every option of command ``name`` as (its short names, its long names)."""
    command = find(CLI, tuple(name.split()))
    out = []
    for param in command.params:
        names = [*param.opts, *param.secondary_opts, *getattr(param, "hidden_aliases", ())]
        if any(n.startswith("-") for n in names):
            out.append(
                (
                    [n for n in names if not n.startswith("--")],
                    [n for n in names if n.startswith("--")],
                )
            )
    return out


def test_a_short_option_means_one_thing_in_every_command() -> None:
    meanings: dict[str, set[str]] = {}
    for name in ["", *COMMANDS]:
        for shorts, longs in _named_options(name):
            for short in shorts:
                meanings.setdefault(short, set()).add(longs[0] if longs else short)
                if longs:  # given by the table, not by the command
                    assert SHORT_OPTIONS.get(longs[0]) == short, (name, short, longs)
    assert {short: names for short, names in meanings.items() if len(names) > 1} == {}
    # the names users know from kcat and Kafka's tools
    assert {meanings[s].pop() for s in ("-b", "-t", "-c", "-f", "-g")} == {
        "--bootstrap-server", "--topic", "--count", "--format", "--group"
    }  # fmt: skip


def test_old_names_of_a_count_still_parse() -> None:
    assert _parsed("consume", ["t", "--max", "3"])["max_records"] == 3
    assert _parsed("consume", ["t", "-c", "3"])["max_records"] == 3
    assert _parsed("dlq show", ["t", "--limit", "3"])["limit"] == 3
    assert _parsed("topics delete", ["t", "--yes"])["execute"] is True


# Commands that write to a cluster by purpose, as Kafka's console producer does; every
# other command that changes a cluster is a dry run unless --execute.
WRITES_BY_PURPOSE = {
    "produce": "writing records is what it is for (--dry-run previews the envelopes)",
    "request": "sends a request and waits for its reply",
    "run": "runs a topology, which writes its outputs",
    "topics create": "creating is what it is for (--if-not-exists)",
}
CHANGES_A_CLUSTER = {
    "dlq replay",
    "groups delete",
    "offsets reset",
    "projections rebuild",
    "replay",
    "topics delete",
}


@pytest.mark.parametrize("name", sorted(CHANGES_A_CLUSTER))
def test_a_command_that_changes_a_cluster_is_a_dry_run_unless_execute(name: str) -> None:
    options = _options(name)
    assert "--execute" in options and options["--execute"].default is False
    assert "--dry-run" not in options  # one rule: no command writes unless told


def test_every_command_that_writes_is_listed() -> None:
    writers = {n for n in LEAVES if "--execute" in _options(n)}
    assert writers == CHANGES_A_CLUSTER
    for name in WRITES_BY_PURPOSE:
        assert name in LEAVES


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["consume", "t", "--from", "yesterday"], "--from: not a position"),
        (["consume", "t", "--to", "soon"], "--to: not a position"),
        (["replay", "t", "--from", "earliest", "--to", "x"], "--to: not a position"),
        (["consume", "t:x"], "TOPIC: bad partition list"),
        (["offsets", "reset", "-g", "g", "-t", "t", "--to", "nope"], "--to: not a position"),
        (["dlq", "list", "t-dlq", "--since", "then"], "--since:"),
        (["replay", "t", "--from", "earliest", "-H", "novalue"], "--header expects NAME=VALUE"),
    ],
)
def test_a_value_refused_names_its_flag(args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code != 0
    shown = result.output + str(result.exception or "")
    assert said in shown, shown


def test_json_and_another_format_are_refused() -> None:
    for args in (
        ["consume", "t", "--json", "--format", "table"],
        ["describe", "f.py", "--json", "-f", "mermaid"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1
        assert "--json and --format" in result.output
    assert _parsed("consume", ["t", "--json", "--format", "json"])["as_json"] is True


def test_a_type_the_schemas_do_not_know_is_refused_before_reading() -> None:
    result = CliRunner().invoke(
        app,
        ["consume", "orders", "--type", "order.plaecd", "--schemas", "streams/examples/schemas"],
    )
    assert result.exit_code == 1
    assert "--type order.plaecd: no schemas for type 'order.plaecd' (known:" in result.output
    assert len(result.output.strip().splitlines()) == 1
