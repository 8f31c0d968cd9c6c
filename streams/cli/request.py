"""``streams request TOPIC --type TYPE@VERSION --reply-to TOPIC``: ask and print the reply.

Each JSON line of stdin (or the one ``PAYLOAD`` argument) becomes a request envelope, sent
with a ``Requester`` (``streams.patterns``): all of them at once, the replies printed as
JSON lines in the order of the requests. A request without a reply in ``--wait`` seconds,
or answered by an error reply, is reported on stderr as such, and the command exits 1.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from streams.cli._common import (
    BootstrapOpt,
    ConfigFileOpt,
    SchemasOpt,
    SettingOpt,
    TimeoutOpt,
    err_console,
    fail,
    option,
    use_schemas,
)
from streams.config import client_settings
from streams.tools import CLI_SOURCE

if TYPE_CHECKING:
    from streams.patterns import RequestError


def request_command(  # noqa: PLR0917 - a command's options
    topic: str = typer.Argument(..., metavar="TOPIC", help="The topic the server reads."),
    payload: str | None = typer.Argument(
        None, metavar="PAYLOAD", help="One payload as JSON (default: one per line of stdin)."
    ),
    type_ref: str = typer.Option(
        ...,
        "--type",
        metavar="TYPE@VERSION",
        help="The request's type, e.g. quote.requested@1.",
    ),
    reply_to: str = typer.Option(
        ...,
        "--reply-to",
        metavar="TOPIC",
        help="The topic replies come back on (created if missing).",
    ),
    key: str | None = option(
        None, "--key", help="The record key: a payload field or a template, as for produce."
    ),
    wait: float = typer.Option(
        30.0,
        "--wait",
        min=0.1,
        metavar="SECONDS",
        help="How long each request waits for its reply.",
    ),
    source: str = typer.Option(CLI_SOURCE, "--source", help="The requests' source."),
    schemas: Path | None = SchemasOpt,
    bootstrap: str = BootstrapOpt,
    config_file: Path | None = ConfigFileOpt,
    client: list[str] = SettingOpt,
    timeout: float = TimeoutOpt,
    as_json: bool = typer.Option(
        False,
        "--json",
        help='One JSON object per request on stdout: {"request": ID, "reply": ENVELOPE} or '
        '{"request": ID, "error": MESSAGE}.',
    ),
) -> None:
    """Send a request to TOPIC and print its reply as a JSON line.

    With no PAYLOAD, each JSON line of stdin is a request: all are sent at once and the
    replies printed in their order. The server is a topology that replies (a reply step,
    or ctx.reply in a processor). A request without a reply within --wait seconds, or
    refused by the server (an error reply), is reported on stderr (on stdout with --json);
    the command then exits 1.
    """
    from streams.codec.avro import AvroCodec
    from streams.codec.jsonmap import envelope_fields
    from streams.patterns import Requester, RequestError
    from streams.schemas.catalog import default_catalog
    from streams.tools.produce import (
        EnvelopeMaker,
        KeySpec,
        ProduceInputError,
        parse_type_ref,
        read_payloads,
    )

    use_schemas(schemas)
    codec = AvroCodec(default_catalog())
    type_name, version = parse_type_ref(type_ref, codec)
    maker = EnvelopeMaker(
        codec, type_name, version, key=KeySpec.parse(key) if key else None, source=source
    )
    asked = []
    for number, data in read_payloads([payload] if payload is not None else sys.stdin):
        try:
            asked.append(maker.make(data)[0])
        except ProduceInputError as exc:
            raise ProduceInputError(f"line {number}: {exc}") from None
    settings = client_settings(config_file, client)
    failed: Counter[str] = Counter()
    with Requester(
        bootstrap, reply_topic=reply_to, settings=settings, codec=codec, broker_timeout=timeout
    ) as requester:
        futures = [requester.submit(topic, env, timeout=wait) for env in asked]
        for env, future in zip(asked, futures, strict=True):
            try:
                shown: dict[str, Any] = envelope_fields(future.result())
            except RequestError as exc:
                outcome, why = _outcome(exc, wait)
                failed[outcome] += 1
                if not as_json:
                    err_console.print(f"request {env.id}: {why}", highlight=False, soft_wrap=True)
                    continue
                shown = {"request": env.id, "error": why}
            else:
                shown = {"request": env.id, "reply": shown} if as_json else shown
            sys.stdout.write(json.dumps(shown, ensure_ascii=False) + "\n")
    if failed:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in failed.items())
        fail(f"{failed.total()} of {len(asked)} request(s) failed: {counts}")


def _outcome(exc: RequestError, wait: float) -> tuple[str, str]:
    """What became of a request (counted in the last line) and why, in words that do not
    repeat its id: the line names it once."""
    from streams.patterns import ReplyTimeout, RequestFailed, RequestNotSent

    if isinstance(exc, RequestFailed):
        return "error reply", str(exc)
    if isinstance(exc, ReplyTimeout):
        return "no reply", f"no reply within {wait:g} s"
    if isinstance(exc, RequestNotSent):
        return "not sent", f"not sent: {exc}"
    return "no reply", str(exc)  # the requester closed first
