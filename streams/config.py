"""Where things are: the cluster (``KAFKA_BOOTSTRAP_SERVERS`` and the client settings to
reach it) and Streams' local state.

All are read from the environment on every call (tests and commands set it), never cached.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streams.errors import StreamsError
from streams.setting_names import KNOWN, SECRET

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
# The cluster a command asks when told no other, and how long it waits for each request.
# Here, not in streams.cluster, so the CLI shows them without loading the Kafka client.
DEFAULT_PORT = 9092  # the local broker's client port (``streams broker up``)
DEFAULT_BOOTSTRAP = f"127.0.0.1:{DEFAULT_PORT}"
DEFAULT_TIMEOUT = 10.0
STATE_DIR_ENV = "STREAMS_STATE_DIR"


def external_bootstrap() -> str | None:
    """The bootstrap servers of an existing cluster, when ``KAFKA_BOOTSTRAP_SERVERS`` is set."""
    value = os.environ.get(BOOTSTRAP_ENV, "").strip()
    return value or None


def state_root() -> Path:
    """The root of Streams' local state (local brokers' data, apps' stores).

    ``$STREAMS_STATE_DIR`` if set, else ``$XDG_STATE_HOME/streams``, else
    ``~/.local/state/streams``. Nothing is created here.
    """
    configured = os.environ.get(STATE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "streams"


# -- client settings ---------------------------------------------------------------------
KAFKA_CONFIG_ENV = "STREAMS_KAFKA_CONFIG"
"""A properties file of client settings every command and the runtime apply (security,
timeouts...), as ``--config FILE`` does for one command."""

HIDDEN = "[hidden]"
"""What is shown in place of a secret."""

# The user info of a URL (``https://user:password@host``): the registry client reads
# credentials from it.
_USER_INFO = re.compile(r"(?<=://)[^/@\s]+@")
# What the name of a client setting is made of (librdkafka's, the registry client's, Java's).
_NAME = re.compile(r"[\w.-]+")


class ClientConfigError(StreamsError):
    """A settings file, or a ``KEY=VALUE`` option (``-X``, ``--set``), that cannot be read."""


def read_properties(path: Path | str) -> dict[str, str]:
    """A Java-style properties file (Kafka's ``--command-config``, kcat's ``-F``):
    ``key=value`` or ``key: value`` lines, ``#`` and ``!`` comments, blank lines, and a
    trailing backslash continuing a line. Raises ClientConfigError naming the line, and
    its key when Streams knows it, never the line's text: it may hold a secret."""
    path = Path(path).expanduser()
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClientConfigError(f"cannot read client config {path}: {exc.strerror}") from None
    settings: dict[str, str] = {}
    pending = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        key = line[:cut].strip()
        if cut < 0 or not _NAME.fullmatch(key):
            where = _where(f"{path}:{number}", line)
            raise ClientConfigError(f"{where}: expected key=value with a setting's name as key")
        settings[key] = line[cut + 1 :].strip()
    return settings


def parse_key_values(items: Sequence[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` items of a repeatable ``option`` (``-X``, ``--set``) as a dict.
    Raises ClientConfigError (a StreamsError) naming the option and the item."""
    return dict(key_value_pairs(items, option))


def key_value_pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` items in order, a key as often as it is given (``-H``: a header
    may repeat). The value is everything after the first ``=``. Raises ClientConfigError
    naming the option and the item's place (and its key when Streams knows it), never
    the item's text: it may hold a secret."""
    out: list[tuple[str, str]] = []
    for number, item in enumerate(items, 1):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            found = "no '='" if not sep else "no key"
            where = _where(f"{option} item {number}", item)
            raise ClientConfigError(f"{where}: expected KEY=VALUE, found {found}")
        out.append((key.strip(), value))
    return out


def _where(place: str, text: str) -> str:
    """``place`` (an item of an option, a line of a file), with the name of the setting
    ``text`` starts with when Streams knows that name: a name is never a secret, and the
    rest of ``text`` may be one."""
    name = _NAME.match(text.strip())
    return f"{place} ({name.group()})" if name is not None and name.group() in KNOWN else place


def client_settings(
    config_file: Path | str | None = None, overrides: Sequence[str] = ()
) -> dict[str, str]:
    """The client settings of a command: ``$STREAMS_KAFKA_CONFIG``'s file, then
    ``config_file`` (``--config``), then ``overrides`` (``-X KEY=VALUE``); later wins.
    Raises ClientConfigError for a line or item that is not a setting's name and a value
    (never showing it)."""
    settings: dict[str, str] = {}
    env_file = os.environ.get(KAFKA_CONFIG_ENV, "").strip()
    if env_file:
        settings.update(read_properties(env_file))
    if config_file is not None:
        settings.update(read_properties(config_file))
    for number, (key, value) in enumerate(key_value_pairs(overrides, "-X"), 1):
        if not _NAME.fullmatch(key):  # "-X 'sasl.password s3cret=x'": no key to hand on
            where = _where(f"-X item {number}", key)
            raise ClientConfigError(f"{where}: expected KEY=VALUE with a setting's name as KEY")
        settings[key] = value
    return settings


def redacted(settings: Mapping[str, object]) -> dict[str, object]:
    """``settings`` fit to log or print, the one place client settings are made so: the
    value of every secret (``streams.setting_names.SECRET``) and of every name Streams
    does not know (a misspelt key may hold a password) is ``HIDDEN``, and so is the user
    info of a URL. A ``consumer.``/``producer.`` prefix (``streams run``) is read past."""
    return {key: _shown(key, value) for key, value in settings.items()}


def _shown(key: str, value: object) -> object:
    kind, _, rest = key.partition(".")
    name = rest if kind in {"consumer", "producer"} else key
    if name not in KNOWN or name in SECRET:
        return HIDDEN
    return _USER_INFO.sub(f"{HIDDEN}@", value) if isinstance(value, str) else value


FETCH_QUEUE_BACKOFF_MS = 5
"""How soon a consumer whose prefetch is full asks for more once there is room again."""


def bounded_prefetch(kbytes: int) -> dict[str, Any]:
    """Consumer settings that keep at most about ``kbytes`` of fetched records in memory
    without slowing the fetches down. librdkafka stops fetching while its queue is over the
    bound and by default asks again a second later (``fetch.queue.backoff.ms``: 1000), so a
    loop that drains a small queue quickly spends most of that second waiting: measured, a
    4 MB queue capped the runtime's mirror at 48k records/s; 5 ms lets it read 110k-134k."""
    return {"queued.max.messages.kbytes": kbytes, "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS}


CONSUMER_PROTOCOL = "consumer"
"""``group.protocol`` of KIP-848 groups: the broker assigns and times sessions."""

CLASSIC_ONLY = {
    "session.timeout.ms": "the broker's group.consumer.session.timeout.ms sets it",
    "heartbeat.interval.ms": "the broker's group.consumer.heartbeat.interval.ms sets it",
    "partition.assignment.strategy": "use group.remote.assignor (range or uniform)",
    "group.protocol.type": "it belongs to the classic protocol",
}
"""Consumer settings librdkafka refuses with ``group.protocol=consumer`` (tried on 2.16:
the consumer is not created), and what to do instead."""


def group_protocol(settings: Mapping[str, Any]) -> str:
    """The consumer group protocol ``settings`` choose: ``classic`` (librdkafka's default)
    or ``consumer`` (KIP-848); librdkafka reads the value in any case."""
    return str(settings.get("group.protocol", "classic")).strip().lower()


def incremental_rebalances(settings: Mapping[str, Any]) -> bool:
    """Whether a consumer with ``settings`` is handed partitions incrementally (its assign
    calls are ``incremental_assign``): every KIP-848 group, and classic groups on the
    cooperative-sticky assignor. Classic eager assignors (librdkafka's default
    ``range,roundrobin``) revoke everything and hand out a whole assignment (``assign``)."""
    if group_protocol(settings) == CONSUMER_PROTOCOL:
        return True
    return "cooperative" in str(settings.get("partition.assignment.strategy", "range,roundrobin"))


def check_group_settings(settings: Mapping[str, Any]) -> None:
    """Raise ClientConfigError naming the first setting of ``settings`` that their group
    protocol refuses (librdkafka would fail the consumer's creation with a stack trace)."""
    if group_protocol(settings) != CONSUMER_PROTOCOL:
        return
    for key, instead in CLASSIC_ONLY.items():
        if key in settings:
            raise ClientConfigError(
                f"{key} cannot be set with group.protocol=consumer ({instead}); "
                "drop it, or use group.protocol=classic"
            )


def client_config(
    bootstrap: str, settings: Mapping[str, Any] | None = None, **defaults: Any
) -> dict[str, Any]:
    """The librdkafka config of a client Streams makes: ``bootstrap``, librdkafka's own log
    through ``streams.logs.KAFKA_LOG`` (never raw on stderr), the caller's ``defaults``
    (keys with dots as ``**{"linger.ms": 5}``), then the user's ``settings``, which win.
    Raises ClientConfigError for user settings their group protocol refuses
    (``check_group_settings``)."""
    # here, not at the top: importing streams.config stays light (no structlog)
    from streams.logs import KAFKA_LOG  # noqa: PLC0415

    check_group_settings(settings or {})
    return {"bootstrap.servers": bootstrap, "logger": KAFKA_LOG, **defaults, **(settings or {})}
