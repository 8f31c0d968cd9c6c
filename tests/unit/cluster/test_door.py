"""Nothing calls admin but the door: every admin request Streams sends goes through
``streams.cluster``, where its timeouts, retries and errors are decided once.

The rule, for every module of ``streams/`` outside ``streams/cluster/`` (and the in-memory
fake of the admin client, ``streams/testing/memory/``):

- it constructs no ``AdminClient``;
- from ``confluent_kafka.admin`` (or its submodules) it imports only ``AdminClient``, to
  annotate a client it was handed, and ``ConfigSource``, to read an answer; never the
  types a request is built of (``NewTopic``, ``ConfigResource``, ``OffsetSpec``, ...);
- it calls nothing on an admin client: no method through a name or attribute called
  ``admin``/``_admin``/``kafka_admin``, nor on what ``x.admin()`` returns. Handing the
  client to a function of ``streams.cluster`` is how it is used.

Tests are outside the rule: they check what the broker holds with their own client.
"""

from __future__ import annotations

import ast
from pathlib import Path

import streams

ROOT = Path(streams.__file__).parent
DOOR = (ROOT / "cluster", ROOT / "testing" / "memory")
ADMIN_NAMES = {"admin", "_admin", "kafka_admin"}
MAY_IMPORT = {"AdminClient", "ConfigSource"}  # a handed client's type; an answer's enum


def _outside_the_door() -> list[Path]:
    return [
        path
        for path in sorted(ROOT.rglob("*.py"))
        if not any(path.is_relative_to(door) for door in DOOR)
    ]


def _is_admin(node: ast.expr) -> bool:
    """``admin``, ``x.admin``, ``x._admin``, or ``x.admin()``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id in ADMIN_NAMES
    return isinstance(node, ast.Attribute) and node.attr in ADMIN_NAMES


def _violations(path: Path) -> list[str]:
    found = []
    where = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "confluent_kafka.admin"
        ):
            found += [
                f"{where}:{node.lineno} imports {alias.name} from {node.module}"
                for alias in node.names
                if alias.name not in MAY_IMPORT
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"{where}:{node.lineno} imports {alias.name}"
                for alias in node.names
                if alias.name.startswith("confluent_kafka.admin")
            ]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "AdminClient":
                found.append(f"{where}:{node.lineno} constructs an AdminClient")
            elif isinstance(func, ast.Attribute) and _is_admin(func.value):
                found.append(f"{where}:{node.lineno} calls admin.{func.attr}")
    return found


def test_nothing_outside_the_door_calls_admin() -> None:
    assert [v for path in _outside_the_door() for v in _violations(path)] == []


def test_the_rule_sees_each_way_past_the_door(tmp_path: Path) -> None:
    # Each line below is one way around the door; the rule must name every one.
    module = tmp_path / "sneaky.py"
    module.write_text(
        "from confluent_kafka.admin import AdminClient, NewTopic\n"
        "import confluent_kafka.admin\n"
        "a = AdminClient({})\n"
        "cluster.admin.list_topics()\n"
        "self._admin.describe_configs([])\n"
        "clients.admin().create_topics([])\n"
        "admin.delete_topics([])\n"
        "create_topic(cluster.admin, 'fine')\n"  # handed to the door: allowed
    )
    found = _violations(module)
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports NewTopic from confluent_kafka.admin",
        "imports confluent_kafka.admin",
        "constructs an AdminClient",
        "calls admin.list_topics",
        "calls admin.describe_configs",
        "calls admin.create_topics",
        "calls admin.delete_topics",
    ]
