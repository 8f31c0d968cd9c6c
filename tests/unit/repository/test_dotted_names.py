"""Every dotted ``streams.…`` name the docs and the code's prose mention exists.

Scanned: the docstrings and comments of ``streams/**/*.py``, and the Markdown of the docs
site and the README (backticked names, ``::: streams.x`` directives, cross-references).
A name resolves when its longest importable prefix imports and the rest are attributes of
it. Names Streams writes on the wire rather than Python names (headers such as
``streams.failure.attempts``, the ``streams.error`` event type, logger names) are the
string literals of the code that resolve to nothing: a mention of one, or of a prefix of
one (``streams.failure``), is not a Python name and is left alone.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import streams

PACKAGE = Path(streams.__file__).resolve().parent
ROOT = PACKAGE.parent
# not part of a longer word, path or dotted name: ``mystreams.x``, ``docs/streams.md``
DOTTED = re.compile(r"(?<![\w./-])streams(?:\.[A-Za-z_]\w*)+")


@cache
def resolves(name: str) -> bool:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        break
    for attr in parts[split:]:
        if not hasattr(found, attr):
            return False
        found = getattr(found, attr)
    return True


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def prose(path: Path) -> Iterator[str]:
    """A module's docstrings (module, classes, functions) and comments."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        documented = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        if isinstance(node, documented) and (doc := ast.get_docstring(node, clean=False)):
            yield doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string


@cache
def wire_names() -> frozenset[str]:
    """The dotted ``streams.…`` string literals of the code that are not Python names."""
    found = set()
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and DOTTED.fullmatch(value) and not resolves(value):
                found.add(value)
    return frozenset(found)


def is_wire_name(name: str) -> bool:
    return any(wire == name or wire.startswith(f"{name}.") for wire in wire_names())


def unresolved(texts: dict[str, list[str]]) -> list[str]:
    return sorted(
        f"{where}: {name}"
        for where, parts in texts.items()
        for text in parts
        for name in dict.fromkeys(DOTTED.findall(text))
        if not is_wire_name(name) and not resolves(name)
    )


def test_every_dotted_name_in_the_codes_prose_resolves() -> None:
    texts = {f"{path.relative_to(ROOT)}": list(prose(path)) for path in _sources()}
    assert unresolved(texts) == []


def test_every_dotted_name_in_the_docs_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts = {f"{page.relative_to(ROOT)}": [page.read_text()] for page in pages}
    assert unresolved(texts) == []


def test_the_check_tells_stale_names_from_wire_names() -> None:
    assert "streams.failure.attempts" in wire_names()  # a header the code writes
    assert unresolved(
        {
            "here": [
                "``streams.pipeline.chain.build_chain`` and ``streams.failure.attempts``,"
                " the ``streams.failure`` headers; ::: streams.pipeline",
                "``streams.pipeline.chain.built_chain``, ``streams.pipelines.chain``",
            ]
        }
    ) == ["here: streams.pipeline.chain.built_chain", "here: streams.pipelines.chain"]
