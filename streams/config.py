"""Where things are: the cluster (``KAFKA_BOOTSTRAP_SERVERS``) and Streams' local state.

Both are read from the environment on every call (tests and commands set it), never cached.
"""

from __future__ import annotations

import os
from pathlib import Path

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
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
