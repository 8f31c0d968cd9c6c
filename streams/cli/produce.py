"""``streams produce TOPIC --type TYPE@VERSION``: write envelopes from JSON lines;
``streams produce TOPIC --raw``: write lines as they are, as kcat -P does.

A thin layer over ``streams.tools.produce``: one payload per line from stdin or
``--file``, validated against the schema and written as an envelope; or, with ``--raw``,
one record per line, no envelope, no schema.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    command_cluster,
    console,
    option,
    print_json,
    use_schemas,
)
from streams.tools import CLI_SOURCE

if TYPE_CHECKING:
    from streams.tools.produce import EnvelopeMaker


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


HeaderOpt = option(
    [],
    "--header",
    metavar="KEY=VALUE",
    help="A header on every record (repeatable; a name may repeat), as kcat -H.",
)
FileOpt = typer.Option(
    None, "--file", help="Read JSON lines from this file (default: stdin; - is stdin)."
)


def produce_command(  # noqa: PLR0917 - a command's options
    topic: str = typer.Argument(..., metavar="TOPIC", help="The topic to write to (must exist)."),
    type_ref: str | None = typer.Option(
        None,
        "--type",
        metavar="TYPE@VERSION",
        help="Event type and payload schema version, e.g. order.placed@2 (without @VERSION: "
        "the latest version). Required unless --raw.",
    ),
    raw: bool = typer.Option(
        False,
        "--raw",
        help="Write each line as it is (UTF-8 text), no envelope and no schema, as kcat -P.",
    ),
    file: Path | None = FileOpt,
    key: str | None = option(
        None,
        "--key",
        help="The record key: a payload field (customer_id; dotted for a nested one: "
        "customer.id) or a template of fields ('{customer_id}-{order_id}'); with --raw, "
        "the key of every record as given. Default: no key.",
    ),
    key_separator: str | None = option(
        None,
        "--key-separator",
        metavar="SEP",
        help="With --raw: each line is KEY SEP VALUE, split at the first SEP (kcat -K).",
    ),
    null: bool = typer.Option(
        False,
        "--null",
        help="With --raw: an empty value is written as null, a tombstone (kcat -Z): "
        "'KEY:' with -K : deletes KEY from a compacted topic.",
    ),
    header_items: list[str] = HeaderOpt,
    correlation_id: str | None = typer.Option(
        None,
        "--correlation-id",
        help="Correlation id of every envelope (default: each envelope's own id).",
    ),
    source: str = typer.Option(CLI_SOURCE, "--source", help="The envelopes' source."),
    rate: str | None = typer.Option(
        None, "--rate", metavar="N[/s]", help="Write at most N records per second."
    ),
    count: int | None = option(
        None,
        "--count",
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
    With --raw, each line is written as it is instead (blank lines are skipped).
    """
    from streams.config import key_value_pairs
    from streams.tools.produce import (
        ProduceInputError,
        envelope_records,
        parse_rate,
        produce_records,
        raw_records,
    )

    if raw and type_ref is not None:
        raise ProduceInputError("--raw writes lines as they are: drop --type")
    if not raw and type_ref is None:
        raise ProduceInputError("give --type TYPE@VERSION for envelopes, or --raw")
    if not raw and (key_separator is not None or null):
        raise ProduceInputError("--key-separator and --null are for --raw")
    headers = list[tuple[str, str | bytes | None]](key_value_pairs(header_items, "--header"))
    per_second = parse_rate(rate) if rate is not None else None
    maker = None if type_ref is None else _maker(type_ref, key, source, correlation_id, schemas)
    try:
        with _input(file) as lines:
            if maker is None:
                records = raw_records(
                    lines, key=key, key_separator=key_separator, null=null, count=count
                )
            elif dry:
                _print_dry_run(lines, maker, count)
                return
            else:
                records = envelope_records(lines, maker, count=count)
            if dry:
                for record in records:
                    shown = replace(record, headers=[*record.headers, *headers]).as_dict()
                    sys.stdout.write(json.dumps(shown, ensure_ascii=False) + "\n")
                return
            cluster = command_cluster(bootstrap, timeout, config_file, client)
            result = produce_records(cluster, topic, records, headers=headers, rate=per_second)
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


def _maker(
    type_ref: str, key: str | None, source: str, correlation_id: str | None, schemas: Path | None
) -> EnvelopeMaker:
    from streams.codec.avro import AvroCodec
    from streams.schemas.catalog import default_catalog
    from streams.tools.produce import EnvelopeMaker, KeySpec, parse_type_ref

    use_schemas(schemas)
    codec = AvroCodec(default_catalog())
    type_name, version = parse_type_ref(type_ref, codec)
    return EnvelopeMaker(
        codec,
        type_name,
        version,
        key=KeySpec.parse(key) if key is not None else None,
        source=source,
        correlation_id=correlation_id,
    )


def _print_dry_run(lines: Iterable[str], maker: EnvelopeMaker, count: int | None) -> None:
    """The envelopes as a consumer would read them (``dry_run``), one JSON line each."""
    from streams.codec.jsonmap import envelope_fields
    from streams.tools.produce import dry_run

    for env in dry_run(lines, maker, count=count):
        sys.stdout.write(json.dumps(envelope_fields(env), ensure_ascii=False) + "\n")
