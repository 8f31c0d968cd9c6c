"""Reading a table of a running topology from anywhere: what ``streams query`` does.

Each instance run with a query port (``streams run --query-port``) advertises its endpoint
in the client id its group members show (``streams.runtime.query.client_id``), as Kafka
Streams' instances advertise ``application.server`` in their group metadata. ``query``
describes the app's consumer group, asks one instance for ``/stores/<table>/<key>``, and
when that one does not own the key's partition (HTTP 421, naming the topic and partition)
asks the member that does. While the group rebalances (no owner yet, an instance gone) it
asks again until ``timeout``; then ``QueryFailed`` says why, in one line. A windowed table
answers the key's windows, ``{"start", "end", "value"}`` each, those starting between
``start_from`` and ``start_to`` when given (``?from=&to=``). Instances whose ports ask for
a token (``streams.http_access``) are sent ``token``; one that refuses it (401) is a
``QueryFailed`` at once: asking again would not help.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from streams.cluster import Cluster, Member
from streams.errors import StreamsError
from streams.http_access import GIVE_A_TOKEN, BearerToken
from streams.runtime.query import endpoint_of
from streams.timespec import format_instant

RETRY_S = 0.2  # between two rounds while the group rebalances


class QueryFailed(StreamsError):  # noqa: N818 - named for what happened to the query
    """No instance answered the query (none advertises an endpoint, none owns the key in
    time, or the table is unknown)."""


def query(
    cluster: Cluster,
    app_id: str,
    table: str,
    key: str,
    *,
    timeout: float = 10.0,
    start_from: datetime | None = None,
    start_to: datetime | None = None,
    token: BearerToken | None = None,
) -> Any:
    """The value of ``key`` in ``table`` of app ``app_id`` (None: the key has none); of a
    windowed table, the list of its windows (see the module docstring)."""
    bounds = {"from": start_from, "to": start_to}
    params = urlencode({k: format_instant(v) for k, v in bounds.items() if v is not None})
    path = f"/stores/{quote(table, safe='')}/{quote(key, safe='')}"
    path += f"?{params}" if params else ""
    deadline = time.monotonic() + timeout
    why = "no answer"
    while True:
        members = [m for m in cluster.describe_group(app_id).members if endpoint_of(m.client_id)]
        if members:
            status, body = _ask(members[0], path, timeout, token)
            if status == 421:  # not the owner: ask the member that holds the partition
                where = (body.get("topic"), body.get("partition"))
                owner = next((m for m in members if where in m.partitions), None)
                if owner is not None:
                    status, body = _ask(owner, path, timeout, token)
            if status == 401:
                given = "refused the token given" if token else "asks for a token"
                raise QueryFailed(f"the query port of {app_id} {given} ({GIVE_A_TOKEN})")
            if status == 200:
                return body["windows"] if "windows" in body else body["value"]
            if status == 404 and body.get("found") is False:
                return None
            if status in {400, 404}:  # unknown table, refused bounds: asking again won't help
                raise QueryFailed(str(body.get("error", body)))
            why = str(body.get("error", f"HTTP {status}"))
        else:
            why = (
                f"no instance of {app_id!r} advertises a query port "
                "(run it with streams run --query-port)"
            )
        if time.monotonic() + RETRY_S > deadline:
            raise QueryFailed(f"{table}[{key!r}] of {app_id}: {why}")
        time.sleep(RETRY_S)  # the group is moving: ask again


def _ask(
    member: Member, path: str, timeout: float, token: BearerToken | None
) -> tuple[int, dict[str, Any]]:
    """The instance's answer: status and JSON body (a status 0 when it cannot be reached)."""
    endpoint = endpoint_of(member.client_id)
    request = urllib.request.Request(f"http://{endpoint}{path}")
    if token is not None:
        request.add_header("Authorization", token.header)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, {"error": f"HTTP {exc.code} from {endpoint}"}
    except (OSError, ValueError) as exc:  # refused, reset, timed out: the instance is going
        return 0, {"error": f"{endpoint}: {exc}"}
