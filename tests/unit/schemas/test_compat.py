"""The compatibility gate: Avro's resolution rules, the declared modes, and the CLI check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_runner import Run, streams

from streams.schemas import (
    SCHEMAS_DIR_ENV,
    CatalogLoadError,
    CompatibilityMode,
    SchemaCatalog,
    check_catalog,
    reader_problems,
)

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def record(*fields: dict[str, Any], name: str = "R") -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


# -- the rules ---------------------------------------------------------------------------


def test_added_field_needs_a_default_to_read_old_data() -> None:
    old = record(f("a", "string"))
    assert reader_problems(record(f("a", "string"), f("b", "int", default=0)), old) == []
    (problem,) = reader_problems(record(f("a", "string"), f("b", "int")), old)
    assert problem.field == "b"
    assert "no default" in problem.reason


def test_removed_field_is_skipped_by_the_reader() -> None:
    assert reader_problems(record(f("a", "string")), record(f("a", "string"), f("b", "int"))) == []


@pytest.mark.parametrize(
    ("writer", "reader", "ok"),
    [
        ("int", "long", True),
        ("int", "double", True),
        ("long", "float", True),
        ("float", "double", True),
        ("string", "bytes", True),
        ("bytes", "string", True),
        ("long", "int", False),
        ("double", "float", False),
        ("string", "int", False),
    ],
)
def test_type_promotions(writer: str, reader: str, ok: bool) -> None:
    problems = reader_problems(record(f("x", reader)), record(f("x", writer)))
    assert (problems == []) is ok
    if not ok:
        assert problems[0].field == "x"
        assert f"from {writer} to {reader}" in problems[0].reason


def test_nested_fields_are_named_by_path() -> None:
    line_old = record(f("sku", "string"), name="Line")
    line_new = record(f("sku", "string"), f("qty", "int"), name="Line")
    (problem,) = reader_problems(
        record(f("items", {"type": "array", "items": line_new})),
        record(f("items", {"type": "array", "items": line_old})),
    )
    assert problem.field == "items[].qty"


def test_enums_unions_and_names() -> None:
    e = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    e_less = {"type": "enum", "name": "E", "symbols": ["A"]}
    assert reader_problems(record(f("e", e)), record(f("e", e_less))) == []
    assert reader_problems(record(f("e", e_less)), record(f("e", e)))[0].field == "e"
    e_default = {**e_less, "default": "A"}
    assert reader_problems(record(f("e", e_default)), record(f("e", e))) == []
    # a union reader takes any branch; a union writer needs every branch readable
    assert reader_problems(record(f("u", ["null", "string"])), record(f("u", "string"))) == []
    assert reader_problems(record(f("u", "string")), record(f("u", ["null", "string"])))
    # records match by unqualified name or a reader alias
    assert reader_problems(record(name="a.R"), record(name="b.R")) == []
    assert reader_problems(record(name="New"), record(name="Old"))
    assert reader_problems({**record(name="New"), "aliases": ["Old"]}, record(name="Old")) == []


def test_a_break_inside_an_optional_record_names_the_inner_field() -> None:
    old = record(f("address", ["null", record(f("city", "string"), name="Address")]))
    new = record(
        f("address", ["null", record(f("city", "string"), f("zip", "string"), name="Address")])
    )
    (problem,) = reader_problems(new, old)
    assert problem.field == "address.zip"
    assert "no default" in problem.reason


def test_field_aliases_resolve_renames() -> None:
    old = record(f("customer", "string"))
    assert reader_problems(record(f("buyer", "string", aliases=["customer"])), old) == []


def test_recursive_types_terminate() -> None:
    node = record(f("value", "int"), f("next", ["null", "Node"], default=None), name="Node")
    assert reader_problems(node, node) == []


# -- the modes ---------------------------------------------------------------------------


def _write_versions(root: Path, mode: str, *versions: dict[str, Any]) -> Path:
    shutil.copytree(SCHEMAS, root, dirs_exist_ok=True)
    folder = root / "t.x"
    folder.mkdir()
    (folder / "type.json").write_text(json.dumps({"compatibility": mode}))
    for n, schema in enumerate(versions, start=1):
        (folder / f"v{n}.avsc").write_text(json.dumps(schema))
    return root


V1 = record(f("a", "string"), f("b", "int"))
V2_ADDS_NO_DEFAULT = record(f("a", "string"), f("b", "int"), f("c", "int"))
V2_DROPS_B = record(f("a", "string"))
V3_ADDS_B_BACK = record(f("a", "string"), f("b", "string", default=""))


@pytest.mark.parametrize(
    ("mode", "versions", "broken"),
    [
        ("BACKWARD", (V1, V2_ADDS_NO_DEFAULT), [(2, 1, "c")]),
        ("FORWARD", (V1, V2_ADDS_NO_DEFAULT), []),
        ("FORWARD", (V1, V2_DROPS_B), [(1, 2, "b")]),
        ("BACKWARD", (V1, V2_DROPS_B), []),
        ("FULL", (V1, V2_DROPS_B), [(1, 2, "b")]),
        ("NONE", (V1, V2_ADDS_NO_DEFAULT), []),
        # v3 re-adds b as a string: fine against v2, breaks against v1 only transitively
        ("BACKWARD", (V1, V2_DROPS_B, V3_ADDS_B_BACK), []),
        ("BACKWARD_TRANSITIVE", (V1, V2_DROPS_B, V3_ADDS_B_BACK), [(3, 1, "b")]),
    ],
)
def test_declared_modes(
    tmp_path: Path, mode: str, versions: tuple[dict[str, Any], ...], broken: list[Any]
) -> None:
    catalog = SchemaCatalog.load(_write_versions(tmp_path / "s", mode, *versions), check=False)
    assert catalog.compatibility("t.x") is CompatibilityMode(mode)
    found = [(i.reader, i.writer, i.field) for i in check_catalog(catalog) if i.type == "t.x"]
    assert found == broken


def test_a_version_declared_as_upcast_is_not_held_to_avro_backward_rules(tmp_path: Path) -> None:
    renamed = record(f("x", "string"), f("b", "int"))  # "a" renamed to "x": Avro cannot tell
    root = _write_versions(tmp_path / "s", "BACKWARD_TRANSITIVE", V1, renamed, renamed)
    catalog = SchemaCatalog.load(root, check=False)
    assert [(i.reader, i.writer) for i in check_catalog(catalog) if i.type == "t.x"] == [
        (2, 1),
        (3, 1),
    ]
    (root / "t.x" / "type.json").write_text(
        json.dumps({"compatibility": "BACKWARD_TRANSITIVE", "upcast": [2]})
    )
    assert SchemaCatalog.load(root).event_type("t.x").upcast == {2}


def test_upcast_must_name_a_version_with_a_predecessor(tmp_path: Path) -> None:
    root = _write_versions(tmp_path / "s", "BACKWARD", V1, V2_DROPS_B)
    (root / "t.x" / "type.json").write_text(json.dumps({"upcast": [1]}))
    with pytest.raises(CatalogLoadError, match="without a previous version"):
        SchemaCatalog.load(root)
    (root / "t.x" / "type.json").write_text(json.dumps({"upcast": "2"}))
    with pytest.raises(CatalogLoadError, match="list of version numbers"):
        SchemaCatalog.load(root)


# -- the CLI gate: the must-show ---------------------------------------------------------


def streams_cli(*args: str, schemas_dir: Path | None = None) -> Run:
    """``streams ARGS`` with ``$STREAMS_SCHEMAS`` naming ``schemas_dir``, else unset (the
    folder is then the one ``--dir`` names)."""
    return streams(*args, env={SCHEMAS_DIR_ENV: None if schemas_dir is None else str(schemas_dir)})


def test_schemas_check_fails_on_an_incompatible_v3_and_passes_once_it_is_removed(
    tmp_path: Path,
) -> None:
    schemas = Path(shutil.copytree(SCHEMAS, tmp_path / "schemas"))
    assert streams_cli("schemas", "check", "--dir", str(schemas)).returncode == 0

    v3 = json.loads((schemas / "order.placed" / "v2.avsc").read_text())
    v3["fields"].append({"name": "channel", "type": "string"})  # no default: breaks BACKWARD
    (schemas / "order.placed" / "v3.avsc").write_text(json.dumps(v3))
    result = streams_cli("schemas", "check", "--dir", str(schemas))
    assert result.returncode != 0
    assert "order.placed: v3 cannot read data written with v2" in result.stdout
    assert "field 'channel'" in result.stdout
    assert "incompatibility" in result.stderr

    (schemas / "order.placed" / "v3.avsc").unlink()
    result = streams_cli("schemas", "check", "--dir", str(schemas))
    assert result.returncode == 0, result.stderr
    assert "compatible" in result.stdout


def test_schemas_check_reports_malformed_files(tmp_path: Path) -> None:
    schemas = Path(shutil.copytree(SCHEMAS, tmp_path / "schemas"))
    (schemas / "order.placed" / "v3.avsc").write_text("{oops")
    result = streams_cli("schemas", "check", "--dir", str(schemas))
    assert result.returncode == 1
    assert "v3.avsc: not JSON" in result.stderr


def test_schemas_list_and_show() -> None:
    listed = streams_cli("schemas", "list", "--dir", str(SCHEMAS))
    assert listed.returncode == 0
    assert "order.placed" in listed.stdout
    assert "FULL_TRANSITIVE" in listed.stdout
    shown = streams_cli("schemas", "show", "order.placed@1", "--dir", str(SCHEMAS))
    assert shown.returncode == 0
    assert "order.placed@1" in shown.stdout
    assert '"currency"' not in shown.stdout
    latest = streams_cli("schemas", "show", "order.placed", "--dir", str(SCHEMAS))
    assert '"currency"' in latest.stdout
    missing = streams_cli("schemas", "show", "order.placed@9", "--dir", str(SCHEMAS))
    assert missing.returncode == 1
    assert "known versions: v1, v2" in missing.stderr


def test_schemas_dir_from_the_environment(tmp_path: Path) -> None:
    schemas = Path(shutil.copytree(SCHEMAS, tmp_path / "schemas"))
    (schemas / "order.placed" / "v3.avsc").write_text(
        json.dumps(record(f("order_id", "long"), name="OrderPlaced"))
    )
    result = streams_cli("schemas", "check", schemas_dir=schemas)
    assert result.returncode == 1
    assert "field 'order_id': type changed from string to long" in result.stdout


def test_schemas_list_shows_each_doc_and_refuses_what_check_refuses(tmp_path: Path) -> None:
    def run(*args: str) -> Run:
        # 80 columns: narrower than a table, so one line per type, the doc whole
        return streams("schemas", *args, "--schemas", str(tmp_path), columns=80)

    note = tmp_path / "note.written"
    note.mkdir()
    v1 = {**record(f("text", "string"), name="NoteWritten"), "doc": "A note was written down."}
    (note / "v1.avsc").write_text(json.dumps(v1))  # no type.json: the doc is the schema's
    listed = run("list", "--json")
    assert listed.returncode == 0, listed.output
    assert {r["type"]: r["doc"] for r in json.loads(listed.stdout)}["note.written"] == (
        "A note was written down."
    )
    assert "doc=A note was written down." in " ".join(run("list").stdout.split())

    v2 = {**v1, "fields": [*v1["fields"], f("author", "string")]}  # no default: breaks it
    (note / "v2.avsc").write_text(json.dumps(v2))
    checked, listed = run("check"), run("list")
    assert checked.returncode == listed.returncode == 1
    assert listed.stderr == checked.stderr == f"error: 1 incompatibility(ies) in {tmp_path}\n"
