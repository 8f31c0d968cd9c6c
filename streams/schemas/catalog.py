"""The schema catalog: every ``.avsc`` of a schemas folder, parsed once, looked up by version.

Layout::

    schemas/envelope.avsc              the envelope (must equal the built-in one)
    schemas/<type>/v<N>.avsc           payload schema of <type>, version N (N >= 1)
    schemas/<type>/type.json           optional: {"compatibility": "FULL", "doc": "...",
                                                  "upcast": [3]}

A type's ``doc`` is type.json's, else the ``doc`` of its latest ``.avsc``.

``upcast`` lists versions reached from the previous one by an upcaster function (a step
Avro cannot express): the gate does not ask them to read older data by Avro's rules.

Every catalog also has the built-in types (``streams.schemas.builtin``: ``streams.error``,
the payload of error replies); a folder may not define one of them.

``SchemaCatalog.load`` reads and parses the whole folder up front (it blocks on file I/O
once); lookups afterwards are dict reads. Every problem found is reported together, each
with its path and reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

from streams.schemas import builtin
from streams.schemas.compatibility import check_catalog, raise_for
from streams.schemas.envelope_schema import ENVELOPE_SCHEMA
from streams.schemas.errors import (
    CatalogLoadError,
    SchemaFileError,
    SchemaNotFoundError,
    SchemasFolderNotFoundError,
)
from streams.schemas.modes import DEFAULT_MODE, CompatibilityMode

SCHEMAS_DIR_ENV = "STREAMS_SCHEMAS"
_LEGACY_SCHEMAS_DIR_ENV = "STREAMS_SCHEMAS_DIR"  # its first name, still read
PROJECT_FILE = "pyproject.toml"
TYPE_FILE = "type.json"
ENVELOPE_FILE = "envelope.avsc"
_VERSION_FILE = re.compile(r"^v([1-9][0-9]*)\.avsc$")
_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$")


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One payload schema: ``raw`` is the JSON as written, ``parsed`` fastavro's form."""

    type: str
    version: int
    path: Path
    raw: Any
    parsed: Any = field(repr=False)

    @property
    def ref(self) -> str:
        return f"{self.type}@{self.version}"


@dataclass(frozen=True, slots=True)
class EventType:
    """A type's versions (ascending) and its declared compatibility mode."""

    name: str
    versions: Mapping[int, SchemaVersion]
    compatibility: CompatibilityMode = DEFAULT_MODE
    doc: str = ""
    upcast: frozenset[int] = frozenset()


def parse_schema_file(path: Path) -> tuple[Any, Any]:
    """Read and parse one ``.avsc``: ``(raw JSON, fastavro parsed schema)``.

    Raises SchemaFileError naming the path when it cannot be read, is not JSON, or is not
    a valid Avro schema.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaFileError(path, f"not JSON: {exc.msg} at line {exc.lineno}") from exc
    try:
        parsed = fastavro.parse_schema(raw, _write_hint=True)
    except Exception as exc:  # fastavro raises several unrelated types for bad schemas
        raise SchemaFileError(path, f"not a valid Avro schema: {exc}") from exc
    return raw, parsed


class SchemaCatalog:
    """Payload schemas by (type, version), plus the envelope schema. Immutable once loaded."""

    def __init__(
        self,
        types: Mapping[str, EventType],
        root: Path | None = None,
    ) -> None:
        self.root = root
        self._types = dict(sorted({**_BUILTIN_TYPES, **types}.items()))
        self.envelope_raw: Any = ENVELOPE_SCHEMA
        self.envelope: Any = fastavro.parse_schema(ENVELOPE_SCHEMA, _write_hint=True)
        self._parsed: dict[tuple[str, int], Any] = {
            (t.name, v): s.parsed for t in self._types.values() for v, s in t.versions.items()
        }

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str = "schemas", *, check: bool = True) -> SchemaCatalog:
        """Load every schema under ``path``.

        Raises CatalogLoadError listing every missing or malformed file, and (when ``check``)
        IncompatibleSchemaError when a type's versions break its declared compatibility.
        """
        root = Path(path)
        if not root.is_dir():
            raise SchemasFolderNotFoundError(root)
        problems: list[SchemaFileError] = []
        envelope_file = root / ENVELOPE_FILE
        if envelope_file.exists():
            try:
                _, parsed_env = parse_schema_file(envelope_file)
                if to_parsing_canonical_form(parsed_env) != to_parsing_canonical_form(
                    fastavro.parse_schema(ENVELOPE_SCHEMA)
                ):
                    problems.append(
                        SchemaFileError(envelope_file, "differs from Streams' envelope schema")
                    )
            except SchemaFileError as exc:
                problems.append(exc)
        types: dict[str, EventType] = {}
        for type_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            if type_dir.name.startswith((".", "_")):
                continue
            if type_dir.name in _BUILTIN_TYPES:
                problems.append(SchemaFileError(type_dir, "a built-in type: pick another name"))
                continue
            try:
                types[type_dir.name] = _load_type(type_dir, problems)
            except SchemaFileError as exc:
                problems.append(exc)
        if problems:
            raise CatalogLoadError(problems)
        catalog = cls(types, root=root)
        if check:
            raise_for(check_catalog(catalog))
        return catalog

    # -- lookups ---------------------------------------------------------------------------

    def get(self, type: str, version: int) -> Any:
        """The fastavro-parsed schema of ``type``@``version``; SchemaNotFoundError if none."""
        try:
            return self._parsed[(type, version)]
        except KeyError:
            raise self._not_found(type, version) from None

    def schema_map(self) -> dict[tuple[str, int], Any]:
        """Every parsed payload schema by ``(type, version)``: a copy, for hot-path lookups."""
        return dict(self._parsed)

    def entry(self, type: str, version: int) -> SchemaVersion:
        """The full record of ``type``@``version`` (path, raw JSON, parsed)."""
        event_type = self.event_type(type)
        try:
            return event_type.versions[version]
        except KeyError:
            raise self._not_found(type, version) from None

    def event_type(self, type: str) -> EventType:
        try:
            return self._types[type]
        except KeyError:
            raise SchemaNotFoundError(type) from None

    def has(self, type: str, version: int) -> bool:
        return (type, version) in self._parsed

    def has_type(self, type: str) -> bool:
        return type in self._types

    def versions(self, type: str) -> list[int]:
        """The type's versions, ascending; SchemaNotFoundError for an unknown type."""
        return list(self.event_type(type).versions)

    def latest(self, type: str) -> int:
        return self.versions(type)[-1]

    def types(self) -> list[str]:
        return list(self._types)

    def compatibility(self, type: str) -> CompatibilityMode:
        return self.event_type(type).compatibility

    def _not_found(self, type_: str, version: int) -> SchemaNotFoundError:
        if type_ not in self._types:
            return SchemaNotFoundError(type_)
        return SchemaNotFoundError(type_, version, list(self._types[type_].versions))


def _builtin_types() -> dict[str, EventType]:
    versions: dict[str, dict[int, SchemaVersion]] = {}
    where = Path(builtin.__file__)
    for (name, version), raw in builtin.BUILTIN_SCHEMAS.items():
        parsed = fastavro.parse_schema(raw, _write_hint=True)
        versions.setdefault(name, {})[version] = SchemaVersion(name, version, where, raw, parsed)
    return {name: EventType(name, found, doc="built in") for name, found in versions.items()}


_BUILTIN_TYPES = _builtin_types()


def _load_type(type_dir: Path, problems: list[SchemaFileError]) -> EventType:
    name = type_dir.name
    if not _TYPE_NAME.match(name):
        raise SchemaFileError(type_dir, "not a valid type name (letters, digits, _ - and dots)")
    mode, doc, upcast = _read_type_file(type_dir / TYPE_FILE)
    versions: dict[int, SchemaVersion] = {}
    for file in sorted(type_dir.glob("*.avsc")):
        m = _VERSION_FILE.match(file.name)
        if m is None:
            problems.append(SchemaFileError(file, "schema files are named v<N>.avsc, N >= 1"))
            continue
        try:
            raw, parsed = parse_schema_file(file)
        except SchemaFileError as exc:
            problems.append(exc)
            continue
        version = int(m.group(1))
        versions[version] = SchemaVersion(name, version, file, raw, parsed)
    if not versions and not any(p.path.parent == type_dir for p in problems):
        raise SchemaFileError(type_dir, "no v<N>.avsc file in this type folder")
    unknown_upcast = sorted(v for v in upcast if v not in versions or v == 1)
    if unknown_upcast and versions:
        problems.append(
            SchemaFileError(
                type_dir / TYPE_FILE,
                f"upcast names version(s) {unknown_upcast} without a previous version to "
                "upcast from",
            )
        )
    if not doc and versions:  # the latest schema's own doc, as an Avro user writes it
        latest = versions[max(versions)].raw
        doc = str(latest.get("doc", "")) if isinstance(latest, dict) else ""
    return EventType(name, dict(sorted(versions.items())), mode, doc, upcast)


def _read_type_file(path: Path) -> tuple[CompatibilityMode, str, frozenset[int]]:
    if not path.exists():
        return DEFAULT_MODE, "", frozenset()
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaFileError(path, f"cannot read: {exc}") from exc
    if not isinstance(meta, dict):
        raise SchemaFileError(path, "must be a JSON object")
    unknown = set(meta) - {"compatibility", "doc", "upcast"}
    if unknown:
        raise SchemaFileError(path, f"unknown key(s): {', '.join(sorted(unknown))}")
    raw_mode = str(meta.get("compatibility", DEFAULT_MODE.value)).upper()
    try:
        mode = CompatibilityMode(raw_mode)
    except ValueError:
        choices = ", ".join(m.value for m in CompatibilityMode)
        raise SchemaFileError(path, f"compatibility {raw_mode!r} is not one of {choices}") from None
    upcast = meta.get("upcast", [])
    if not isinstance(upcast, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in upcast
    ):
        raise SchemaFileError(path, "upcast must be a list of version numbers, e.g. [3]")
    return mode, str(meta.get("doc", "")), frozenset(upcast)


def schemas_dir(explicit: Path | None = None, start: Path | None = None) -> Path:
    """The schemas folder: ``explicit`` (``--schemas``), else ``$STREAMS_SCHEMAS``, else the
    nearest folder from ``start`` (the current directory) upwards that holds both
    ``schemas/`` and ``pyproject.toml`` (a project's root, so a command works from any of
    its subfolders), else ``./schemas`` (whose absence the loader then reports)."""
    if explicit is not None:
        return explicit
    env = os.environ.get(SCHEMAS_DIR_ENV) or os.environ.get(_LEGACY_SCHEMAS_DIR_ENV)
    if env:
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "schemas").is_dir() and (folder / PROJECT_FILE).is_file():
            return folder / "schemas"
    return here / "schemas"


def default_catalog() -> SchemaCatalog:
    """The catalog of ``schemas_dir()``; loaded once per folder."""
    return _load_cached(schemas_dir().resolve())


@lru_cache(maxsize=8)
def _load_cached(root: Path) -> SchemaCatalog:
    return SchemaCatalog.load(root)
