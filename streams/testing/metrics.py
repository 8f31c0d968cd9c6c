"""Read a running instance's metrics port as Prometheus and Kubernetes do, to assert on it.

``get(port, "/readyz")`` is the status and body of one endpoint ((0, "") while nothing
listens yet); ``scrape(port)`` every sample of ``/metrics`` as ``{(name, labels): value}``
(labels a frozenset of pairs; empty while nothing listens); ``sample(samples, name,
topic=...)`` the one sample of ``name`` whose labels include those given::

    samples = wait_until(lambda: scrape(port), 30)
    assert sample(samples, "streams_records_consumed_total", topic="orders") == 300

``scrape`` needs ``prometheus_client`` (the ``metrics`` extra), imported when called. An
instance whose ports ask for a token (``RuntimeConfig.http``) is read with ``token=``.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from streams.http_access import BearerToken

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def get(
    port: int, path: str, *, host: str = "127.0.0.1", token: BearerToken | None = None
) -> tuple[int, str]:
    """Status and body of ``GET path`` (with ``token``, as its bearer); (0, "") while
    nothing listens yet."""
    request = urllib.request.Request(f"http://{host}:{port}{path}")
    if token is not None:
        request.add_header("Authorization", token.header)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return 0, ""


def scrape(port: int, *, host: str = "127.0.0.1", token: BearerToken | None = None) -> Samples:
    """Every sample ``/metrics`` serves; empty while it does not answer 200."""
    from prometheus_client.parser import text_string_to_metric_families  # noqa: PLC0415

    status, body = get(port, "/metrics", host=host, token=token)
    if status != 200:
        return {}
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


class AmbiguousSampleError(LookupError):
    """More than one sample matched where one was asked for."""


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None when there is none).
    Raises ``AmbiguousSampleError`` when several match."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    if len(found) > 1:
        raise AmbiguousSampleError(f"{len(found)} samples of {name} match {labels}")
    return found[0] if found else None


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    """The samples of ``name`` keyed by their ``label`` (e.g. produced counts by topic)."""
    return {dict(ls)[label]: v for (n, ls), v in samples.items() if n == name and label in dict(ls)}
