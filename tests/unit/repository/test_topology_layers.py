"""A topology's description never imports its execution, and no topology module takes
part in an import cycle.

The description is every module of ``streams/topology/`` itself; the execution is
``streams/topology/execution/`` (the package's ``__init__`` re-exports both for users and
counts as neither). Every import counts, lazy ones inside functions included; only
``if TYPE_CHECKING:`` imports are left out, as they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import streams.topology

PACKAGE = "streams.topology"
EXECUTION = f"{PACKAGE}.execution"
ROOT = Path(streams.topology.__file__).parent


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join((PACKAGE, *parts)).removesuffix(".__init__")


MODULES = {_module(p): p for p in sorted(ROOT.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The ``streams.topology`` modules ``node`` (in ``module``) loads: ``from pkg import
    name`` loads the submodule ``pkg.name`` when there is one, else ``pkg`` itself."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = node.module or ""
    if node.level:  # relative: from the package that holds ``module``
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    found = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return found or {base}


def imports(module: str) -> set[str]:
    """The topology modules ``module`` imports at run time (lazy ones included)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(_targets(module, node))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(MODULES[module].read_text()))
    return {name for name in found if name in MODULES and name != module}


def _is_execution(module: str) -> bool:
    return module == EXECUTION or module.startswith(f"{EXECUTION}.")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_split_is_there() -> None:
    assert f"{PACKAGE}.builder" in MODULES
    assert f"{EXECUTION}.plan" in MODULES
    assert imports(f"{EXECUTION}.plan") >= {f"{PACKAGE}.topology", f"{PACKAGE}.nodes"}


def test_the_description_never_imports_the_execution() -> None:
    description = [m for m in MODULES if not _is_execution(m) and m != PACKAGE]
    wrong = {
        module: sorted(target for target in imports(module) if _is_execution(target))
        for module in description
    }
    assert {module: found for module, found in wrong.items() if found} == {}


def test_no_import_cycle_among_topology_modules() -> None:
    # The package facade re-exports everything, and each module's import of a sibling
    # runs it first: it is the one module every other may reach, so it is left out.
    graph = {m: imports(m) - {PACKAGE} for m in MODULES if m != PACKAGE}
    assert _cycles(graph) == []


def _builder_privates(path: Path) -> list[str]:
    """``builder._x`` (``b._x``, ``self._builder._x``) reads and calls in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if name in {"b", "builder", "_builder"}:
            found.append(f"{path.name}:{node.lineno} {name}.{node.attr}")
    return found


def test_only_the_builder_touches_its_private_members() -> None:
    # The DSL's other modules (tables) add nodes and stores through its public methods.
    outside = [p for m, p in MODULES.items() if m != f"{PACKAGE}.builder"]
    assert [hit for path in outside for hit in _builder_privates(path)] == []


def test_a_lazy_import_counts_and_a_type_checking_one_does_not(tmp_path: Path) -> None:
    MODULES[f"{PACKAGE}._probe_layers"] = tmp_path / "probe.py"
    (tmp_path / "probe.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from streams.topology.execution.context import RecordMeta\n"
        "def f():\n"
        "    from streams.topology.execution import plan\n"
        "    from . import nodes\n"
    )
    try:
        found = imports(f"{PACKAGE}._probe_layers")
    finally:
        del MODULES[f"{PACKAGE}._probe_layers"]
    assert found == {f"{EXECUTION}.plan", f"{PACKAGE}.nodes"}


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
