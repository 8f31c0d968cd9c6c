"""``streams produce TOPIC --type TYPE@VERSION``: write envelopes from JSON lines.

A thin layer over ``streams.tools.produce``: one payload per line from stdin or
``--file``, validated against the schema and written as an envelope.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    console,
    print_json,
    use_schemas,
)
from streams.config import client_settings
from streams.tools import DEFAULT_SOURCE


@contextmanager
def _input(path: Path | None) -> Iterator[TextIO]:
    from streams.tools.produce import ProduceInputError

    if path is None or str(path) == "-":
        yield sys.stdin
        return
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ProduceInputError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        yield handle


FileOpt = typer.Option(
    None, "--file", "-f", help="Read JSON lines from this file (default: stdin; - is stdin)."
)


def produce_command(  # noqa: PLR0917 - a command's options
    topic: str = typer.Argument(..., metavar="TOPIC", help="The topic to write to (must exist)."),
    type_ref: str = typer.Option(
        ...,
        "--type",
        "-t",
        metavar="TYPE@VERSION",
        help="Event type and payload schema version, e.g. order.placed@2 (without @VERSION: "
        "the latest version).",
    ),
    file: Path | None = FileOpt,
    key: str | None = typer.Option(
        None,
        "--key",
        "-k",
        help="The record key: a payload field (customer_id; dotted for a nested one: "
        "customer.id) or a template of fields ('{customer_id}-{order_id}'). Default: no key.",
    ),
    correlation_id: str | None = typer.Option(
        None,
        "--correlation-id",
        help="Correlation id of every envelope (default: each envelope's own id).",
    ),
    source: str = typer.Option(DEFAULT_SOURCE, "--source", help="The envelopes' source."),
    rate: str | None = typer.Option(
        None, "--rate", metavar="N[/s]", help="Write at most N records per second."
    ),
    count: int | None = typer.Option(
        None,
        "--count",
        "-n",
        min=0,
        help="Write exactly N records: stop early, or cycle over the input lines when there "
        "are fewer (each record a new envelope with a new id).",
    ),
    dry: bool = typer.Option(
        False, "--dry-run", help="Print the envelopes as JSON lines; write nothing."
    ),
    schemas: Path | None = SchemasOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Write one envelope per JSON line of stdin (or --file) to TOPIC.

    Each line is a payload (a JSON object) of --type, validated against its schema:
    times as ISO 8601 text with a zone, bytes as base64. The first invalid line stops
    the command with an error naming the line and the field, and saying how many records
    were already written. Success is reported once the broker acknowledged every record.
    """
    from streams.cluster import Cluster
    from streams.codec.avro import AvroCodec
    from streams.codec.jsonmap import envelope_fields
    from streams.schemas.catalog import default_catalog
    from streams.tools.produce import (
        EnvelopeMaker,
        KeySpec,
        dry_run,
        parse_rate,
        parse_type_ref,
        produce_lines,
    )

    use_schemas(schemas)
    codec = AvroCodec(default_catalog())
    type_name, version = parse_type_ref(type_ref, codec)
    maker = EnvelopeMaker(
        codec,
        type_name,
        version,
        key=KeySpec.parse(key) if key is not None else None,
        source=source,
        correlation_id=correlation_id,
    )
    per_second = parse_rate(rate) if rate is not None else None
    try:
        with _input(file) as lines:
            if dry:
                for env in dry_run(lines, maker, count=count):
                    sys.stdout.write(json.dumps(envelope_fields(env), ensure_ascii=False) + "\n")
                return
            cluster = Cluster(bootstrap, timeout, client_settings(config_file, client))
            result = produce_lines(cluster, topic, lines, maker, count=count, rate=per_second)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if as_json:
        print_json(result.as_dict())
        return
    noun = "record" if result.count == 1 else "records"
    ranges = ", ".join(
        f"{p}:{first}..{last}" for p, (first, last) in sorted(result.offsets.items())
    )
    console.print(
        f"wrote {result.count:,} {noun} to {topic}" + (f" (offsets {ranges})" if ranges else "")
    )
