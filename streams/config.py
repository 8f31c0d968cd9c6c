"""Where the cluster is: the one environment variable every command and test honours."""

from __future__ import annotations

import os

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"


def external_bootstrap() -> str | None:
    """The bootstrap servers of an existing cluster, when ``KAFKA_BOOTSTRAP_SERVERS`` is set."""
    value = os.environ.get(BOOTSTRAP_ENV, "").strip()
    return value or None
