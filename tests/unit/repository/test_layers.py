"""Dependencies point one way: no module imports from a layer above its own.

The layers, lowest first, are ``streams._layers.LAYERS`` (docs/architecture.md, "Layers",
shows the same table: ``test_architecture_doc.py`` checks it): what a record is on the
wire; the stores, failure-routing decisions and the broker; what to run (topologies); the
record path (``streams.pipeline``); the runtime; what runs topologies for you (the test
kit, replay, the DLQ tools); and the commands on top. Product code on the test kit's
layer or below never imports the test kit. Every import counts, lazy ones inside
functions and ``TYPE_CHECKING`` ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import streams
from streams._layers import PER_MODULE, TEST_KIT, layer_of, part_of

LAYER = layer_of()
ROOT = Path(streams.__file__).parent


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("streams.")}


def _module(relative: Path) -> str:
    return ".".join(("streams", *relative.with_suffix("").parts)).removesuffix(".__init__")


def test_every_package_has_a_layer() -> None:
    # a module's name, whether its file is the source or a compiled copy (envelope.cpython-...so)
    parts = {p.name.split(".")[0] if p.is_file() else p.name for p in ROOT.iterdir()}
    parts = {p for p in parts if not p.startswith((".", "__pycache__")) and p != "__init__"}
    parts.discard("py")  # py.typed
    assert parts - LAYER.keys() == set()
    modules = {
        part_of(_module(p.relative_to(ROOT)))
        for name in PER_MODULE
        for p in (ROOT / name).glob("*.py")
    }
    assert modules - LAYER.keys() == set()


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative == Path("__init__.py"):
            continue  # the package's lazy table names the whole public API
        own = part_of(_module(relative))
        for target in _imports(path):
            if LAYER[part_of(target)] > LAYER[own]:
                upward.append(f"streams/{relative} imports {target}")
    assert upward == []


def test_the_test_kit_is_imported_only_from_the_layers_above_it() -> None:
    """The layer rule lets a part import its neighbours on the same layer; the test kit is
    the exception: a tool beside it (replay, the DLQ tools, Faust interop) that imported it
    would ship the test kit's helpers as product code."""
    crossing = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative == Path("__init__.py"):
            continue  # the package's lazy table names the whole public API
        own = part_of(_module(relative))
        if own == TEST_KIT or LAYER[own] > LAYER[TEST_KIT]:
            continue
        crossing += [
            f"streams/{relative} imports {target}"
            for target in sorted(_imports(path))
            if part_of(target) == TEST_KIT
        ]
    assert crossing == []


# What builds a Kafka client: confluent-kafka's client classes, and the cluster's door to
# its admin client. Types and constants (``Message``, ``TopicPartition``, ``KafkaError``)
# build nothing.
CLIENTS = frozenset(
    {
        "Consumer",
        "Producer",
        "AdminClient",
        "ShareConsumer",
        "DeserializingConsumer",
        "DeserializingShareConsumer",
        "SerializingProducer",
        "admin_client",
    }
)


def _clients_built(path: Path) -> list[str]:
    """The client classes (or builders) ``path`` imports or calls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("confluent_kafka", "streams.cluster")
        ):
            found += [f"imports {alias.name}" for alias in node.names if alias.name in CLIENTS]
        elif isinstance(node, ast.Call):
            called = node.func
            name = getattr(called, "id", None) or getattr(called, "attr", None)
            if name in CLIENTS:
                found.append(f"calls {name}()")
    return found


def test_the_client_check_sees_the_clients_a_tool_builds() -> None:
    assert {"imports Consumer", "calls Consumer()", "calls admin_client()"} <= set(
        _clients_built(ROOT / "dlq" / "read.py")
    )


@pytest.mark.parametrize("package", ["pipeline", "failures"])
def test_the_record_path_and_failure_routing_build_no_kafka_client(package: str) -> None:
    """The runtime hands these modules confluent-kafka clients and the TestDriver in-memory
    ones, so a driver test proves the runtime: a step or a router that built its own client
    would escape the driver (and put cluster I/O below the tools, where ``streams.dlq``
    and ``streams.replay`` live). ``failures/`` creates its topics through the
    ``streams.cluster.Topics`` it is handed."""
    built = {
        f"streams/{path.relative_to(ROOT)}": uses
        for path in sorted((ROOT / package).rglob("*.py"))
        if (uses := _clients_built(path))
    }
    assert built == {}
