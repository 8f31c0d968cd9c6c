"""``streams schemas check | list | show``: the schema catalog and its compatibility gate."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from streams.cli._common import console, err_console, fail, styled
from streams.schemas import SCHEMAS_DIR_ENV, SchemaCatalog, check_catalog
from streams.schemas.errors import CatalogLoadError, SchemaNotFoundError

app = typer.Typer(
    help="Inspect the Avro schemas in schemas/ and check their compatibility.",
    no_args_is_help=True,
)

DirOpt = typer.Option(
    Path("schemas"),
    "--dir",
    "-d",
    envvar=SCHEMAS_DIR_ENV,
    help="The schemas folder (default ./schemas, or $STREAMS_SCHEMAS_DIR).",
)


def _load(schemas_dir: Path) -> SchemaCatalog:
    try:
        return SchemaCatalog.load(schemas_dir, check=False)
    except CatalogLoadError as exc:
        for problem in exc.problems:
            err_console.print(f"  {problem}", highlight=False, soft_wrap=True)
        fail(f"{len(exc.problems)} schema file(s) in {schemas_dir} could not be loaded")


@app.command()
def check(schemas_dir: Path = DirOpt) -> None:
    """Check every type's versions against its declared mode; exit 1 on any break."""
    catalog = _load(schemas_dir)
    broken = check_catalog(catalog)
    if broken:
        for inc in broken:
            console.print(styled(("✗", "red"), f" {inc}"), highlight=False, soft_wrap=True)
        fail(f"{len(broken)} incompatibility(ies) in {schemas_dir}")
    types = catalog.types()
    versions = sum(len(catalog.versions(t)) for t in types)
    console.print(
        styled(
            ("✓", "green"),
            f" {len(types)} type(s), {versions} version(s) in {schemas_dir}: compatible",
        ),
        highlight=False,
    )


@app.command("list")
def list_(schemas_dir: Path = DirOpt) -> None:
    """Every type with its versions and compatibility mode."""
    catalog = _load(schemas_dir)
    table = Table(title=f"schemas in {schemas_dir}")
    for col in ("type", "versions", "latest", "compatibility", "doc"):
        table.add_column(col)
    for name in catalog.types():
        et = catalog.event_type(name)
        versions = ", ".join(f"v{v}" for v in et.versions)
        table.add_row(name, versions, f"v{catalog.latest(name)}", et.compatibility.value, et.doc)
    console.print(table)


@app.command()
def show(
    ref: str = typer.Argument(..., metavar="TYPE[@VERSION]", help="e.g. order.placed@2"),
    schemas_dir: Path = DirOpt,
) -> None:
    """Print a type's schema (the latest version unless @VERSION is given) as JSON."""
    catalog = _load(schemas_dir)
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
    console.print(f"# {entry.ref}  ({entry.path}, compatibility {mode})", highlight=False)
    console.print_json(json.dumps(entry.raw))
