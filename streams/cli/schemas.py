"""``streams schemas check | list | show``: the schema catalog and its compatibility gate.

The folder is ``--schemas`` (``--dir``/``-d`` are its older names), else
``$STREAMS_SCHEMAS``, else the ``schemas/`` of the nearest project folder upwards.
``check`` exits 1 on any incompatibility, after printing them (as JSON with ``--json``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from streams.cli._common import (
    JsonOpt,
    SchemasOpt,
    console,
    err_console,
    fail,
    print_json,
    styled,
    use_schemas,
)
from streams.schemas.errors import CatalogLoadError, SchemaNotFoundError, SchemasFolderNotFoundError

if TYPE_CHECKING:
    from streams.schemas import SchemaCatalog


app = typer.Typer(
    help="Inspect the Avro schemas in schemas/ and check their compatibility.",
    no_args_is_help=True,
)


def _load(folder: Path | None) -> tuple[Path, SchemaCatalog]:
    from streams.schemas import SchemaCatalog

    schemas_dir = use_schemas(folder)
    try:
        return schemas_dir, SchemaCatalog.load(schemas_dir, check=False)
    except SchemasFolderNotFoundError as exc:  # e.g. outside any project: its one line
        fail(str(exc))
    except CatalogLoadError as exc:
        for problem in exc.problems:
            err_console.print(f"  {problem}", highlight=False, soft_wrap=True)
        fail(f"{len(exc.problems)} schema file(s) in {schemas_dir} could not be loaded")


@app.command()
def check(schemas_dir: Path | None = SchemasOpt, as_json: bool = JsonOpt) -> None:
    """Check every type's versions against its declared mode; exit 1 on any break."""
    from streams.schemas import check_catalog

    folder, catalog = _load(schemas_dir)
    broken = check_catalog(catalog)
    types = catalog.types()
    versions = sum(len(catalog.versions(t)) for t in types)
    if as_json:
        print_json(
            {
                "schemas": str(folder),
                "types": len(types),
                "versions": versions,
                "compatible": not broken,
                "incompatibilities": [str(inc) for inc in broken],
            }
        )
    elif broken:
        for inc in broken:
            console.print(styled(("✗", "red"), f" {inc}"), highlight=False, soft_wrap=True)
    _refuse(folder, broken)
    if not as_json:
        console.print(
            styled(
                ("✓", "green"),
                f" {len(types)} type(s), {versions} version(s) in {folder}: compatible",
            ),
            highlight=False,
        )


def _refuse(folder: Path, broken: Sequence[object]) -> None:
    """Exit 1 with the one line ``check`` ends with when the folder breaks its modes."""
    if broken:
        fail(f"{len(broken)} incompatibility(ies) in {folder}")


@app.command("list")
def list_(schemas_dir: Path | None = SchemasOpt, as_json: bool = JsonOpt) -> None:
    """Every type with its versions, compatibility mode and doc; exit 1, as check does,
    on a folder whose versions break their mode."""
    from streams.cli._tables import Records
    from streams.schemas import check_catalog

    folder, catalog = _load(schemas_dir)
    rows: list[dict[str, Any]] = []
    for name in catalog.types():
        et = catalog.event_type(name)
        rows.append(
            {
                "type": name,
                "versions": list(et.versions),
                "latest": catalog.latest(name),
                "compatibility": et.compatibility.value,
                "doc": et.doc,
            }
        )
    if as_json:
        print_json(rows)
    else:
        columns = ("type", "versions", "latest", "compatibility", "doc")
        table = Records(*columns, ids=["type"], title=f"schemas in {folder}")
        for row in rows:
            versions = ", ".join(f"v{v}" for v in row["versions"])
            table.add_row(
                row["type"], versions, f"v{row['latest']}", row["compatibility"], row["doc"]
            )
        console.print(table)
    _refuse(folder, check_catalog(catalog))


@app.command()
def show(
    ref: str = typer.Argument(..., metavar="TYPE[@VERSION]", help="e.g. order.placed@2"),
    schemas_dir: Path | None = SchemasOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print a type's schema (the latest version unless @VERSION is given) as JSON."""
    _folder, catalog = _load(schemas_dir)
    type_, _, version_text = ref.partition("@")
    try:
        if version_text:
            try:
                version = int(version_text.removeprefix("v"))
            except ValueError:
                fail(f"bad version {version_text!r} in {ref!r}: expected TYPE@N")
        else:
            version = catalog.latest(type_)
        entry = catalog.entry(type_, version)
    except SchemaNotFoundError as exc:
        fail(str(exc))
    mode = catalog.compatibility(type_).value
    if as_json:
        print_json(
            {
                "type": entry.type,
                "version": entry.version,
                "path": str(entry.path),
                "compatibility": mode,
                "schema": entry.raw,
            }
        )
        return
    console.print(f"# {entry.ref}  ({entry.path}, compatibility {mode})", highlight=False)
    console.print_json(json.dumps(entry.raw))
