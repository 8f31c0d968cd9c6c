"""Importing a light module stays light: the public API is re-exported lazily (PEP 562).

Each import runs in a fresh interpreter, since this one has long loaded everything.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import streams

# What no low-layer import may load: the layers above and the heavy dependencies.
HEAVY = frozenset(
    {
        "streams.runtime",
        "streams.state",
        "streams.testing",
        "streams.pipeline",
        "streams.topology",
        "streams.replay",
        "streams.cli",
        "streams.broker",
        "rocksdict",
        "rich",
        "typer",
        "structlog",
        "confluent_kafka",
    }
)
WIRE = frozenset({"streams.codec", "streams.schemas", "fastavro"})

# What `streams` may not load before a command runs: each command imports the layers and
# dependencies it runs inside its function (streams/cli/__init__.py), so that `--help`
# and a quick command start in a fraction of a second.
# (The schemas package and its errors are light: commands name those errors.)
CLI_RUNS = (HEAVY - {"streams.cli", "typer", "rich", "structlog"}) | {
    "streams.codec",
    "streams.schemas.catalog",
    "fastavro",
    "streams.cluster",
    "streams.dlq",
    "streams.patterns",
    "streams.tools.topics",
    "streams.tools.consume",
    "streams.tools.produce",
    "confluent_kafka",
    "rich.progress",
    "rich.live",
}

LAZY_PACKAGES = ["streams", "streams.codec", "streams.schemas", "streams.failures"]


def loaded_by(statement: str) -> set[str]:
    """The modules (and their parent packages) a fresh interpreter has after ``statement``."""
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {part for name in out.split() for part in _prefixes(name)}


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@pytest.mark.parametrize(
    ("statement", "forbidden"),
    [
        ("import streams.envelope", HEAVY | WIRE | {"streams.failures"}),
        ("import streams", HEAVY | WIRE | {"streams.envelope", "streams.failures"}),
        ("import streams.config", HEAVY | WIRE),
        ("import streams.errors", HEAVY | WIRE),
        ("import streams.codec.errors, streams.codec.headers", HEAVY | {"fastavro"}),
        ("import streams.schemas.modes, streams.schemas.errors", HEAVY | {"fastavro"}),
        ("from streams.failures import RetryPolicy", HEAVY | {"fastavro"}),
        ("import streams.failures", HEAVY | WIRE),
    ],
)
def test_a_light_import_loads_no_layer_above_and_no_heavy_dependency(
    statement: str, forbidden: frozenset[str]
) -> None:
    assert loaded_by(statement) & forbidden == set()


def test_the_command_tree_loads_nothing_a_command_runs() -> None:
    # The whole tree: every command, option and help text, as --help and the docs see it.
    loaded = loaded_by("import streams.cli\nstreams.cli.cli")
    assert loaded & (CLI_RUNS | {"structlog", "rich.table"}) == set()


@pytest.mark.parametrize("args", [["--help"], ["topics", "list", "--help"], ["consume", "--help"]])
def test_streams_help_loads_nothing_a_command_runs(args: list[str]) -> None:
    # Run as a user runs it; -X importtime names every module the process imported.
    trace = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "streams", *args],
        capture_output=True, text=True, check=True, timeout=60,
    ).stderr  # fmt: skip
    imported = {
        part
        for line in trace.splitlines()
        if line.startswith("import time:") and "|" in line
        for part in _prefixes(line.rsplit("|", 1)[1].strip())
    }
    assert "streams.cli" in imported
    assert imported & CLI_RUNS == set()


def test_a_public_name_loads_its_package_on_first_use() -> None:
    loaded = loaded_by("from streams import Envelope, RetryPolicy")
    assert {"streams.envelope", "streams.failures.policy"} <= loaded
    assert loaded & (HEAVY | {"streams.dlq"}) == set()


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves_and_dir_lists_it(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_all_names_exactly_what_the_package_exports_lazily(package: str) -> None:
    # In a fresh interpreter nothing is resolved yet: dir() beyond the module's own
    # namespace is the lazy table, which must be __all__, no more, no less.
    code = f"import {package} as p\nprint(sorted(set(dir(p)) - set(vars(p))) == sorted(p.__all__))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "True"


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = streams.Nope  # type: ignore[attr-defined]
    from streams.failures import headers  # noqa: PLC0415 - a submodule, not an export

    assert headers.__name__ == "streams.failures.headers"
