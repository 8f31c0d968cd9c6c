"""The schema catalog: lookups, and every malformed folder reported with path and reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streams.schemas import (
    CatalogLoadError,
    CompatibilityMode,
    IncompatibleSchemaError,
    SchemaCatalog,
    SchemaNotFoundError,
    default_catalog,
)
from streams.schemas.builtin import ERROR_TYPE
from streams.schemas.envelope_schema import ENVELOPE_SCHEMA

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


@pytest.fixture
def schemas(tmp_path: Path) -> Path:
    """A writable copy of the repository's schemas folder."""
    return Path(shutil.copytree(SCHEMAS, tmp_path / "schemas"))


def test_the_repository_schemas_load_and_answer_lookups() -> None:
    catalog = SchemaCatalog.load(SCHEMAS)
    assert {"order.placed", "order.validated", "order.accepted", "order.rejected"} <= set(
        catalog.types()
    )
    assert catalog.versions("order.placed") == [1, 2]
    assert catalog.latest("order.placed") == 2
    assert catalog.has("order.placed", 2)
    assert not catalog.has("order.placed", 3)
    assert catalog.get("order.placed", 2)["name"] == "streams.examples.OrderPlaced"
    assert catalog.compatibility("order.placed") is CompatibilityMode.FULL_TRANSITIVE
    assert catalog.compatibility("order.accepted") is CompatibilityMode.BACKWARD  # the default


def test_schemas_are_parsed_once(schemas: Path) -> None:
    catalog = SchemaCatalog.load(schemas)
    assert catalog.get("order.placed", 1) is catalog.get("order.placed", 1)


def test_unknown_type_and_version_name_what_exists() -> None:
    catalog = SchemaCatalog.load(SCHEMAS)
    with pytest.raises(SchemaNotFoundError, match="unknown event type 'nope'"):
        catalog.get("nope", 1)
    with pytest.raises(SchemaNotFoundError, match=r"order\.placed@4 \(known versions: v1, v2\)"):
        catalog.get("order.placed", 4)
    with pytest.raises(SchemaNotFoundError):
        catalog.versions("nope")


def test_the_envelope_file_is_the_built_in_envelope_schema() -> None:
    raw = json.loads((SCHEMAS / "envelope.avsc").read_text())
    for f in raw["fields"]:
        f.pop("doc", None)
    raw.pop("doc", None)
    assert raw == ENVELOPE_SCHEMA


def test_a_changed_envelope_file_is_refused(schemas: Path) -> None:
    raw = json.loads((schemas / "envelope.avsc").read_text())
    raw["fields"] = raw["fields"][:-1]
    (schemas / "envelope.avsc").write_text(json.dumps(raw))
    with pytest.raises(CatalogLoadError, match=r"envelope\.avsc: differs"):
        SchemaCatalog.load(schemas)


@pytest.mark.parametrize(
    ("relative", "content", "reason"),
    [
        ("order.placed/v3.avsc", "{not json", "not JSON"),
        ("order.placed/v3.avsc", '{"type": "record", "fields": []}', "not a valid Avro schema"),
        ("order.placed/v3.avsc", '{"type": "strin"}', "not a valid Avro schema"),
        ("order.placed/version3.avsc", "{}", r"named v<N>\.avsc"),
        ("order.placed/v0.avsc", "{}", r"named v<N>\.avsc"),
        ("order.placed/type.json", '{"compatibility": "SIDEWAYS"}', "not one of BACKWARD"),
        ("order.placed/type.json", '{"mode": "FULL"}', "unknown key"),
        ("order.placed/type.json", "[1]", "must be a JSON object"),
    ],
)
def test_malformed_files_are_reported_with_path_and_reason(
    schemas: Path, relative: str, content: str, reason: str
) -> None:
    (schemas / relative).write_text(content)
    with pytest.raises(CatalogLoadError, match=reason) as info:
        SchemaCatalog.load(schemas)
    assert str(schemas / relative) in str(info.value)


def test_every_problem_is_reported_at_once(schemas: Path) -> None:
    (schemas / "order.placed" / "v3.avsc").write_text("{")
    (schemas / "order.accepted" / "v2.avsc").write_text("{")
    with pytest.raises(CatalogLoadError) as info:
        SchemaCatalog.load(schemas)
    assert len(info.value.problems) == 2


def test_a_type_folder_without_versions_and_a_missing_folder(schemas: Path, tmp_path: Path) -> None:
    (schemas / "order.shipped").mkdir()
    with pytest.raises(CatalogLoadError, match=r"order\.shipped: no v<N>\.avsc"):
        SchemaCatalog.load(schemas)
    with pytest.raises(CatalogLoadError, match=r"no schemas folder at .*missing: give --schemas"):
        SchemaCatalog.load(tmp_path / "missing")


def test_load_refuses_incompatible_versions_unless_asked_not_to_check(schemas: Path) -> None:
    v2 = json.loads((schemas / "order.placed" / "v2.avsc").read_text())
    v2["fields"].append({"name": "channel", "type": "string"})
    (schemas / "order.placed" / "v3.avsc").write_text(json.dumps(v2))
    with pytest.raises(IncompatibleSchemaError, match="field 'channel'"):
        SchemaCatalog.load(schemas)
    assert SchemaCatalog.load(schemas, check=False).latest("order.placed") == 3


def test_default_catalog_follows_the_environment(
    schemas: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.rmtree(schemas / "payment.captured")
    monkeypatch.setenv("STREAMS_SCHEMAS_DIR", str(schemas))
    catalog = default_catalog()
    assert "payment.captured" not in catalog.types()
    assert default_catalog() is catalog  # loaded once per folder
    monkeypatch.delenv("STREAMS_SCHEMAS_DIR")
    monkeypatch.chdir(SCHEMAS.parent)
    assert "payment.captured" in default_catalog().types()


def test_every_catalog_has_the_error_reply_type_and_no_folder_may_redefine_it(
    schemas: Path,
) -> None:
    catalog = SchemaCatalog.load(schemas)
    assert catalog.has(ERROR_TYPE, 1)
    assert catalog.get(ERROR_TYPE, 1)["name"] == "streams.Error"
    (schemas / ERROR_TYPE).mkdir()
    (schemas / ERROR_TYPE / "v1.avsc").write_text(
        '{"type": "record", "name": "Mine", "fields": []}'
    )
    with pytest.raises(CatalogLoadError, match="a built-in type: pick another name"):
        SchemaCatalog.load(schemas)
