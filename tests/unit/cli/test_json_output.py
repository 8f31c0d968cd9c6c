"""``--json`` on the commands that need no broker: ``describe``, ``schemas``, ``broker status``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streams.cli import app
from streams.schemas.catalog import SCHEMAS_DIR_ENV

ROOT = Path(__file__).resolve().parents[3]
ORDERS = ROOT / "topology" / "orders.py"
SCHEMAS = ROOT / "schemas"


@pytest.fixture(autouse=True)
def _schemas_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # A command exports the folder it uses as $STREAMS_SCHEMAS (for the catalogs it
    # loads); here the commands run in-process, so the variable is put back afterwards.
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(SCHEMAS))


def streams_json(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_describe_json_is_the_topology_as_data() -> None:
    data = streams_json("describe", str(ORDERS), "--app-id", "shop", "--schemas", str(SCHEMAS))
    assert data["app_id"] == "shop"
    nodes = {node["name"]: node for node in data["nodes"]}
    assert nodes["orders"] == {
        "name": "orders",
        "role": "source",
        "topic": "orders",
        "type": "order.placed",
        "version": 2,
    }
    assert nodes["route"]["kind"] == "branch"
    assert {"from": "route", "output": "accepted", "to": "to_accepted"} in data["links"]
    assert data["topics"]["read"] == ["orders"]
    assert data["topics"]["written"] == ["shop-accepted", "shop-rejected"]
    assert data["failures"]["topics"]["orders"]["dlq"] == "shop-orders-dlq"


def test_schemas_list_and_show_json() -> None:
    listed = streams_json("schemas", "list", "--schemas", str(SCHEMAS))
    placed = next(row for row in listed if row["type"] == "order.placed")
    assert placed["versions"] == [1, 2] and placed["latest"] == 2
    shown = streams_json("schemas", "show", "order.placed@1", "-d", str(SCHEMAS))
    assert (shown["type"], shown["version"]) == ("order.placed", 1)
    assert shown["schema"]["type"] == "record"


def test_schemas_check_json_reports_breaks_and_exits_1(tmp_path: Path) -> None:
    assert streams_json("schemas", "check", "--schemas", str(SCHEMAS))["compatible"] is True
    folder = tmp_path / "schemas" / "thing.made"
    folder.mkdir(parents=True)
    fields = [{"name": "id", "type": "string"}]
    (folder / "v1.avsc").write_text(json.dumps({"type": "record", "name": "T", "fields": fields}))
    added = [*fields, {"name": "size", "type": "int"}]  # no default: v2 cannot read v1
    (folder / "v2.avsc").write_text(json.dumps({"type": "record", "name": "T", "fields": added}))
    result = CliRunner().invoke(
        app, ["schemas", "check", "--schemas", str(tmp_path / "schemas"), "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["compatible"] is False and len(report["incompatibilities"]) == 1
    assert result.stderr.startswith("error: 1 incompatibility")


def test_broker_status_json_names_an_external_cluster() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "kafka-9:9093"}
    result = CliRunner().invoke(app, ["broker", "status", "--json"], env=env)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"managed": False, "bootstrap": "kafka-9:9093"}
