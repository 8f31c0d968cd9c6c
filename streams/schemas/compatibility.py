"""The compatibility gate: can one schema version read data written with another?

The rules are Avro's schema-resolution rules (the ones fastavro applies when it reads with
a writer and a reader schema): a reader field missing from the writer needs a default;
writer fields the reader lacks are skipped; int→long→float→double and string↔bytes
promote; record, enum and fixed names match by unqualified name or a reader alias; enum
symbols the reader lacks need a reader default; each writer union branch must be readable.

``check_catalog`` applies each type's declared mode to its versions. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streams.schemas.errors import SchemaError
from streams.schemas.modes import CompatibilityMode

_PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}
_NAMED = {"record", "enum", "fixed", "error"}


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a reader cannot read a writer's data: ``field`` is a dotted path (``items[].sku``)."""

    field: str
    reason: str


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """Version ``reader`` of ``type`` cannot read data written with version ``writer``."""

    type: str
    reader: int
    writer: int
    mode: CompatibilityMode
    field: str
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.type}: v{self.reader} cannot read data written with v{self.writer} "
            f"({self.mode.value}): field '{self.field}': {self.reason}"
        )


class IncompatibleSchemaError(SchemaError):
    """Versions of a type break its declared compatibility mode."""

    def __init__(self, incompatibilities: list[Incompatibility]) -> None:
        self.incompatibilities = incompatibilities
        lines = "\n".join(f"  {i}" for i in incompatibilities)
        super().__init__(f"incompatible schema versions:\n{lines}")


def reader_problems(reader: Any, writer: Any) -> list[Problem]:
    """Every reason ``reader`` cannot resolve data written with ``writer`` (empty: it can).

    Both are schemas as JSON (raw or fastavro-parsed). Recursive types are checked once per
    pair of names.
    """
    checker = _Checker(_named_types(reader), _named_types(writer))
    return list(checker.check(reader, writer, ""))


def check_catalog(catalog: Any) -> list[Incompatibility]:
    """Every break of a declared mode in ``catalog`` (a SchemaCatalog), in type order.

    Each version is checked against the previous one, or every earlier one for the
    ``_TRANSITIVE`` modes: BACKWARD means the newer reads the older, FORWARD the reverse.
    A BACKWARD pair that spans a version the type declares as ``upcast`` is skipped: an
    upcaster function, not Avro, takes older data across that step.
    """
    found: list[Incompatibility] = []
    for type_name in catalog.types():
        event_type = catalog.event_type(type_name)
        mode: CompatibilityMode = event_type.compatibility
        versions = sorted(event_type.versions)
        for i, new in enumerate(versions[1:], start=1):
            olds = versions[:i] if mode.transitive else [versions[i - 1]]
            for old in reversed(olds):
                pairs = []
                upcast_between = any(old < v <= new for v in event_type.upcast)
                if mode.backward and not upcast_between:
                    pairs.append((new, old))
                if mode.forward:
                    pairs.append((old, new))
                for r, w in pairs:
                    r_schema = event_type.versions[r].raw
                    w_schema = event_type.versions[w].raw
                    for p in reader_problems(r_schema, w_schema):
                        found.append(Incompatibility(type_name, r, w, mode, p.field, p.reason))
    return found


def raise_for(incompatibilities: list[Incompatibility]) -> None:
    """Raise IncompatibleSchemaError when the list is not empty."""
    if incompatibilities:
        raise IncompatibleSchemaError(incompatibilities)


def _named_types(schema: Any) -> dict[str, Any]:
    """Named type definitions by full and unqualified name, so string references resolve."""
    found: dict[str, Any] = {}

    def walk(s: Any, namespace: str) -> None:
        if isinstance(s, list):
            for branch in s:
                walk(branch, namespace)
        elif isinstance(s, dict):
            kind = s.get("type")
            if kind in _NAMED:
                name = str(s["name"])
                ns = s.get("namespace", namespace) if "." not in name else name.rpartition(".")[0]
                full = name if "." in name or not ns else f"{ns}.{name}"
                found[full] = s
                found.setdefault(full.rpartition(".")[2], s)
                for f in s.get("fields", ()):
                    walk(f["type"], ns)
            elif kind == "array":
                walk(s["items"], namespace)
            elif kind == "map":
                walk(s["values"], namespace)
            elif isinstance(kind, dict | list):
                walk(kind, namespace)

    walk(schema, "")
    return found


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        inner = schema["type"]
        return inner if isinstance(inner, str) else _kind(inner)
    return str(schema)


def _describe(schema: Any) -> str:
    kind = _kind(schema)
    if isinstance(schema, dict) and kind in _NAMED:
        return f"{kind} {schema['name']}"
    return kind


class _Checker:
    def __init__(self, reader_names: dict[str, Any], writer_names: dict[str, Any]) -> None:
        self.r_names = reader_names
        self.w_names = writer_names
        self.seen: set[tuple[str, str]] = set()

    def resolve(self, schema: Any, names: dict[str, Any]) -> Any:
        while True:
            if isinstance(schema, str) and schema in names:
                schema = names[schema]
            elif isinstance(schema, dict) and isinstance(schema["type"], dict | list):
                schema = schema["type"]
            elif isinstance(schema, dict) and schema["type"] in names:
                schema = names[schema["type"]]
            else:
                return schema

    def readable(self, reader: Any, writer: Any) -> bool:
        saved = set(self.seen)
        ok = next(iter(self.check(reader, writer, "")), None) is None
        self.seen = saved
        return ok

    def check(self, reader: Any, writer: Any, path: str) -> Iterator[Problem]:
        r = self.resolve(reader, self.r_names)
        w = self.resolve(writer, self.w_names)
        rk, wk = _kind(r), _kind(w)
        here = path or "<root>"
        if wk == "union":
            for branch in w:
                if rk != "union":
                    yield from self.check(r, branch, path)
                elif not any(self.readable(rb, branch) for rb in r):
                    yield from self._closest(r, branch, path, "writer's union branch")
            return
        if rk == "union":
            if not any(self.readable(rb, w) for rb in r):
                yield from self._closest(r, w, path, "writer's type")
            return
        if rk != wk and rk not in _PROMOTIONS.get(wk, set()):
            yield Problem(here, f"type changed from {_describe(w)} to {_describe(r)}")
            return
        if rk in _NAMED:
            yield from self._named(r, w, rk, here, path)
        elif rk == "array":
            yield from self.check(r["items"], w["items"], f"{path}[]")
        elif rk == "map":
            yield from self.check(r["values"], w["values"], f"{path}{{}}")

    def _closest(self, union: list[Any], writer: Any, path: str, what: str) -> Iterator[Problem]:
        """Why no branch of the reader's ``union`` reads ``writer``: the nested problems of
        the branch of the same kind (and name), so the report names the inner field."""
        w = self.resolve(writer, self.w_names)
        w_kind = _kind(w)
        w_short = str(w["name"]).rpartition(".")[2] if w_kind in _NAMED else None
        for branch in union:
            rb = self.resolve(branch, self.r_names)
            r_short = str(rb["name"]).rpartition(".")[2] if _kind(rb) in _NAMED else None
            if _kind(rb) == w_kind and r_short == w_short:
                yield from self.check(rb, w, path)
                return
        yield Problem(path or "<root>", f"{what} {_describe(w)} is not in our union")

    def _named(self, r: Any, w: Any, kind: str, here: str, path: str) -> Iterator[Problem]:
        r_name, w_name = str(r["name"]), str(w["name"])
        w_short = w_name.rpartition(".")[2]
        aliases = {str(a) for a in r.get("aliases", ())}
        if w_short != r_name.rpartition(".")[2] and not {w_name, w_short} & aliases:
            yield Problem(here, f"{kind} name changed from {w_name} to {r_name}")
            return
        if kind == "fixed":
            if r["size"] != w["size"]:
                yield Problem(here, f"fixed size changed from {w['size']} to {r['size']}")
        elif kind == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and "default" not in r:
                yield Problem(here, f"symbol(s) {', '.join(missing)} unknown here and no default")
        else:
            if (r_name, w_name) in self.seen:
                return  # recursive type: this pair is already being checked
            self.seen.add((r_name, w_name))
            w_fields = {f["name"]: f for f in w["fields"]}
            for rf in r["fields"]:
                name = rf["name"]
                field_path = f"{path}.{name}" if path else name
                wf = w_fields.get(name)
                if wf is None:
                    wf = next((w_fields[a] for a in rf.get("aliases", ()) if a in w_fields), None)
                if wf is None:
                    if "default" not in rf:
                        yield Problem(
                            field_path, "missing in the writer's version and has no default"
                        )
                    continue
                yield from self.check(rf["type"], wf["type"], field_path)
