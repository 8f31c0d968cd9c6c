"""``streams dlq list | show | replay``: inspect a dead-letter topic and send records back.

Every command reads the DLQ from its start to its current end (no consumer group, nothing
committed), and refuses a topic none of whose records carries error headers (no DLQ).
``replay`` is a dry run unless ``--execute`` is given; it skips letters replayed already
(``--again`` sends them too), so a rerun of an interrupted or failed replay sends the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    JsonOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    console,
    err_console,
    execute_option,
    fail,
    option,
    parse_time_flag,
    styled,
    use_schemas,
)
from streams.cli._tables import Records
from streams.config import client_settings

if TYPE_CHECKING:
    from streams.dlq import DeadLetter, Decoder, DlqContents, DlqFilter, DlqReplayPlan


app = typer.Typer(
    help="Inspect a dead-letter topic (APP-TOPIC-dlq) and replay its records.",
    no_args_is_help=True,
)

DlqArg = typer.Argument(..., metavar="DLQ_TOPIC", help="The dead-letter topic, APP-TOPIC-dlq.")
ErrorOpt = option(
    None,
    "--error-type",
    metavar="CLASS",
    help="Only this exception class (ValueError or its full name).",
)
KeyOpt = option(None, "--key", metavar="KEY", help="Only records with this key (UTF-8).")
SourceOpt = typer.Option(
    None, "--source-topic", metavar="TOPIC", help="Only records that failed on this topic."
)
SinceOpt = typer.Option(
    None,
    "--since",
    metavar="TIME",
    help="Failed at or after: a time with a zone (2026-11-30T10:00:00Z, @EPOCH_MS) or a "
    "duration ago (30m, 2h, PT2H).",
)
UntilOpt = typer.Option(
    None, "--until", metavar="TIME", help="Failed at or before: a time or a duration ago."
)
RecordOpt = typer.Option(
    [],
    "--record",
    metavar="PARTITION:OFFSET",
    help="Only this DLQ record (repeatable).",
)


def _records(items: list[str]) -> frozenset[tuple[int, int]] | None:
    if not items:
        return None
    out: set[tuple[int, int]] = set()
    for item in items:
        partition, sep, offset = item.partition(":")
        if not sep or not partition.isdigit() or not offset.isdigit():
            fail(f"--record expects PARTITION:OFFSET, got {item!r}")
        out.add((int(partition), int(offset)))
    return frozenset(out)


def _selection(
    *,
    error_type: str | None,
    key: str | None,
    origin_topic: str | None,
    since: str | None,
    until: str | None,
    records: list[str],
) -> DlqFilter:
    from streams.dlq import DlqFilter

    return DlqFilter(
        error_type=error_type,
        key=key,
        origin_topic=origin_topic,
        since=parse_time_flag("--since", since),
        until=parse_time_flag("--until", until),
        records=_records(records),
    )


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal (never with --json); None elsewhere."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    if quiet or not err_console.is_terminal:
        yield None
        return
    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), console=err_console, transient=True
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _read(
    bootstrap: str, settings: dict[str, str], topic: str, timeout: float, quiet: bool
) -> DlqContents:
    from streams.cluster import Cluster
    from streams.dlq import read_dlq

    Cluster(bootstrap, timeout, settings).check()  # one line for an unreachable or refusing one
    with _progress(f"reading {topic}", quiet) as on_progress:
        contents = read_dlq(
            bootstrap, topic, timeout=timeout, on_progress=on_progress, config=settings
        )
    contents.check_is_dlq()  # one line, not a summary of records nobody dead-lettered
    return contents


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


@app.command("list")
def list_(
    *,
    dlq: str = DlqArg,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    error_type: str | None = ErrorOpt,
    key: str | None = KeyOpt,
    origin_topic: str | None = SourceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    as_json: bool = JsonOpt,
    timeout: float = TimeoutOpt,
) -> None:
    """Counts per error type and per source topic, oldest and newest failure, replays."""
    from streams.dlq import summarize
    from streams.failures.headers import format_time

    selection = _selection(
        error_type=error_type,
        key=key,
        origin_topic=origin_topic,
        since=since,
        until=until,
        records=[],
    )
    settings = client_settings(config_file, client)
    summary = summarize(_read(bootstrap, settings, dlq, timeout, as_json), selection)
    if as_json:
        _print_json(summary.as_json())
        return
    span = (
        f"{format_time(summary.oldest)} .. {format_time(summary.newest)}"
        if summary.oldest and summary.newest
        else "-"
    )
    console.print(
        styled(
            (dlq, "bold"),
            f": {summary.total} dead letter(s), failed {span}; "
            f"{summary.replayed} replayed ({summary.replays} replay(s))",
        ),
        highlight=False,
    )
    for title, counts in (("error type", summary.by_error), ("source topic", summary.by_source)):
        if not counts:
            continue
        table = Records(title, "records", ids=[title], right=["records"])
        for name, count in counts.items():
            table.add_row(name, str(count))
        console.print(table)


def _codec_decoder(schemas_dir: Path) -> tuple[Decoder | None, str | None]:
    """A decoder from the schema catalog, or None and why (shown, never fatal)."""
    from streams.codec import AvroCodec
    from streams.codec.jsonmap import envelope_fields
    from streams.errors import StreamsError
    from streams.failures.headers import Headers
    from streams.schemas import SchemaCatalog

    try:
        codec = AvroCodec(SchemaCatalog.load(schemas_dir, check=False), require_headers=False)
    except (StreamsError, OSError) as exc:
        return None, f"cannot load schemas from {schemas_dir}: {exc}"

    def decode(value: bytes | None, headers: Headers) -> dict[str, Any]:
        return envelope_fields(codec.decode(value, headers))  # as `streams consume` prints it

    return decode, None


@app.command()
def show(
    *,
    dlq: str = DlqArg,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    error_type: str | None = ErrorOpt,
    key: str | None = KeyOpt,
    origin_topic: str | None = SourceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    records: list[str] = RecordOpt,
    limit: int = option(50, "--count", "--limit", metavar="N", help="At most N records (0: all)."),
    stacktrace: bool = typer.Option(False, "--stacktrace", help="Print the stack traces too."),
    schemas: Path | None = SchemasOpt,
    as_json: bool = JsonOpt,
    timeout: float = TimeoutOpt,
) -> None:
    """Dead letters with their error headers and decoded envelopes, oldest first."""
    from streams.dlq import describe

    selection = _selection(
        error_type=error_type,
        key=key,
        origin_topic=origin_topic,
        since=since,
        until=until,
        records=records,
    )
    settings = client_settings(config_file, client)
    contents = _read(bootstrap, settings, dlq, timeout, as_json)
    letters = selection.select(contents.letters)
    shown = letters if limit <= 0 else letters[:limit]
    decode, problem = _codec_decoder(use_schemas(schemas))
    views = [describe(letter, contents, decode) for letter in shown]
    if as_json:
        _print_json(views)
        return
    if problem:
        err_console.print(f"note: {problem}; envelopes are not decoded", highlight=False)
    for letter, view in zip(shown, views, strict=True):
        _print_letter(letter, view, stacktrace)
    more = f" (first {len(shown)}; --limit 0 for all)" if len(shown) < len(letters) else ""
    console.print(f"{len(letters)} of {len(contents.letters)} dead letter(s) match{more}")


def _print_letter(letter: DeadLetter, view: dict[str, Any], stacktrace: bool) -> None:
    p = console.print
    p(
        styled(
            (view["ref"], "bold"),
            f"  key={_shown(view['key'])}  id={_shown(view['event_id'])}  "
            f"type={_shown(view['event_type'])}",
        ),
        highlight=False,
    )
    error = view["error"]
    if error is None:
        p(f"  error    none readable ({view['header_problem'] or 'no error headers'})")
    else:
        src = error["source"]
        p(
            f"  error    {error['exception']}: {error['message']}",
            highlight=False,
            soft_wrap=True,
        )
        p(
            f"  where    {src['topic']}[{src['partition']}]@{src['offset']}, "
            f"stage {error['stage']}, step {error['step'] or '-'}, app {error['app_id']}",
            highlight=False,
        )
        p(
            f"  when     {error['attempts']} attempt(s), first {error['first_failure']}, "
            f"last {error['last_failure']}",
            highlight=False,
        )
    for replay in view.get("replays", []):
        p(f"  replayed to {replay['to']} at {replay['time']}", highlight=False)
    cut = error is not None and error["value_cut"] is not None
    if error is not None and cut:
        src = error["source"]
        p(
            f"  value    cut to fit the DLQ: {view['value_size']} of {error['value_cut']} bytes "
            f"kept; the whole record is at {src['topic']}[{src['partition']}]@{src['offset']}",
            highlight=False,
        )
    if "envelope" in view and not cut:  # a value cut short never decodes: said above
        if view["envelope"] is not None:
            body = json.dumps(view["envelope"], default=str, ensure_ascii=False)
            p(f"  envelope {body}", highlight=False, soft_wrap=True)
        else:
            p(f"  envelope not decodable: {view['decode_error']}", highlight=False)
            p(f"  value    {_value_text(letter.value)}", highlight=False, soft_wrap=True)
    if stacktrace and error is not None:
        p(error["stacktrace"], highlight=False, soft_wrap=True)


def _shown(text: str | None) -> str:
    """A key, id or type as printed: ``-`` when the letter has none."""
    return "-" if text is None else text


PREVIEW_BYTES = 48  # of a value that is no envelope, shown by `dlq show`


def _value_text(value: bytes | None) -> str:
    """A value that did not decode, for a person: its size and its first bytes, as text
    when they are printable UTF-8, else in hex."""
    if value is None:
        return "null (a tombstone)"
    head = value[:PREVIEW_BYTES]
    try:
        text = head.decode()
    except UnicodeDecodeError:
        text = ""
    shown = text if text.isprintable() and text else "0x" + head.hex()
    more = "…" if len(value) > PREVIEW_BYTES else ""
    return f"{len(value)} bytes, not an envelope: {shown}{more}"


def _plan_json(plan: DlqReplayPlan) -> list[dict[str, Any]]:
    return [
        {
            "ref": item.letter.ref,
            "key": item.letter.key_text,
            "event_id": item.letter.event_id,
            "error": item.letter.error_type,
            "to": item.topic,
            "partition": item.partition,
        }
        for item in plan.items
    ]


def _skipped_json(skipped: tuple[tuple[DeadLetter, str], ...]) -> list[dict[str, str]]:
    return [{"ref": letter.ref, "reason": reason} for letter, reason in skipped]


def _replayed_json(plan: DlqReplayPlan, contents: DlqContents) -> list[dict[str, Any]]:
    from streams.failures.headers import format_time

    out = []
    for letter in plan.replayed:
        marks = contents.replays_of(letter)
        out.append(
            {
                "ref": letter.ref,
                "to": sorted({mark.to for mark in marks}),
                "last": format_time(max(mark.time for mark in marks)),
            }
        )
    return out


def replay_table(plan: DlqReplayPlan) -> Records:
    """The records a replay sends, a row each; a letter without key or event id (a value
    that is no envelope) shows ``-`` there."""
    table = Records("dlq record", "key", "event id", "error", "to", ids=["dlq record", "to"])
    for item in plan.items:
        letter = item.letter
        where = item.topic if item.partition is None else f"{item.topic}[{item.partition}]"
        table.add_row(
            letter.ref, _shown(letter.key_text), _shown(letter.event_id), letter.error_type, where
        )
    return table


@app.command()
def replay(
    *,
    dlq: str = DlqArg,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    error_type: str | None = ErrorOpt,
    key: str | None = KeyOpt,
    origin_topic: str | None = SourceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    records: list[str] = RecordOpt,
    to: str | None = typer.Option(
        None,
        "--to",
        metavar="TOPIC",
        help="Send to this topic instead of each record's source topic.",
    ),
    again: bool = typer.Option(
        False,
        "--again",
        help="Send the records replayed already too (by default a rerun skips them).",
    ),
    execute: bool = execute_option("Send them"),
    as_json: bool = JsonOpt,
    timeout: float = TimeoutOpt,
) -> None:
    """Send the selected dead letters back (dry run unless --execute).

    Each record keeps its key, value and original headers, gets the headers
    streams.replay.of and streams.replay.time, and goes to its source topic and partition
    (or --to). Each one the cluster acknowledges is marked as replayed in the DLQ at once,
    so a rerun (after an error or Ctrl-C) sends only the rest: records replayed already
    are skipped unless --again.
    """
    from streams.dlq import execute_dlq_replay, plan_dlq_replay

    selection = _selection(
        error_type=error_type,
        key=key,
        origin_topic=origin_topic,
        since=since,
        until=until,
        records=records,
    )
    settings = client_settings(config_file, client)
    contents = _read(bootstrap, settings, dlq, timeout, as_json)
    plan = plan_dlq_replay(contents, selection, to=to, again=again)
    if not as_json:  # the plan first: printed whatever the sending does
        _print_plan(plan)
    sent = 0
    if execute and plan.items:
        try:
            with _progress("replaying", as_json) as on_progress:
                sent = execute_dlq_replay(
                    bootstrap, plan, timeout=timeout, on_progress=on_progress, config=settings
                ).sent
        except KeyboardInterrupt:
            err_console.print(
                "interrupted: every record sent is marked as replayed; "
                "the same command sends the rest",
                highlight=False,
            )
            raise
    if as_json:
        _print_json(
            {
                "dlq": dlq,
                "dry_run": not execute,
                "sent": sent,
                "records": _plan_json(plan),
                "skipped": _skipped_json(plan.skipped),
                "replayed_already": _replayed_json(plan, contents),
            }
        )
        return
    targets = ", ".join(f"{topic} ({n})" for topic, n in plan.by_target().items()) or "nothing"
    if not execute:
        console.print(
            f"dry run: nothing sent; --execute sends {len(plan.items)} record(s) to {targets}",
            highlight=False,
        )
    elif plan.items:
        console.print(f"sent {sent} record(s) to {targets}", highlight=False)
    else:
        console.print("nothing to send", highlight=False)


def _print_plan(plan: DlqReplayPlan) -> None:
    if plan.items:
        console.print(replay_table(plan))
    for letter, reason in plan.skipped:
        err_console.print(f"skipped {letter.ref}: {reason}", highlight=False)
    if plan.replayed:
        err_console.print(
            f"{len(plan.replayed)} replayed already, not sent again (--again sends them too)",
            highlight=False,
        )
