"""Whether containers can run here, and which Kafka image they run.

The Python packages for containers (``docker``, ``testcontainers``) come with the
``testing`` extra, and only ``streams.testing.container`` (``KafkaContainer``) needs
them at import. This module imports them only when asked, so the test kit, its pytest
plugin (loaded by every pytest session where Streams is installed) and ``streams demo``
load without them: ``docker_unavailable_reason()`` then names the missing packages and
the install command, and a container fixture skips with that one line (fails, on CI).
Nothing here raises for a missing package or daemon; the answers are None/False.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from streams.broker import KAFKA_VERSION
from streams.errors import StreamsError

OFFICIAL_IMAGE = f"apache/kafka:{KAFKA_VERSION}"
LOCAL_IMAGE = f"streams-kafka:{KAFKA_VERSION}"

LABEL = "streams.testing"  # on every container we start, so leftovers can be found

TESTING_EXTRA = "pip install 'streams[testing]'"
_PACKAGES = ("docker", "testcontainers")


class ContainerError(StreamsError):
    """A Kafka container could not be started, reached or stopped."""


def missing_packages() -> list[str]:
    """The packages of the ``testing`` extra that cannot be imported here (empty: none)."""
    missing = []
    for name in _PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def docker_unavailable_reason() -> str | None:
    """Why containers cannot run here, or None when a Docker daemon answers a ping."""
    missing = missing_packages()
    if missing:
        which = " and ".join(missing)
        packages = "package {} is" if len(missing) == 1 else "packages {} are"
        return f"the Python {packages.format(which)} not installed: {TESTING_EXTRA}"
    import docker  # type: ignore[import-untyped]  # noqa: PLC0415 - the testing extra

    try:
        client = docker.from_env(timeout=10)
    except Exception as exc:
        return f"no Docker daemon configured or reachable ({exc})"
    try:
        client.ping()
    except Exception as exc:
        return f"the Docker daemon does not answer ({exc})"
    finally:
        client.close()
    return None


def default_image() -> str:
    """The image ``KafkaContainer`` runs when none is given.

    ``STREAMS_KAFKA_IMAGE`` when set; else ``streams-kafka:<version>`` when the Docker
    daemon has it (``make image``); else the official ``apache/kafka:<version>`` (pulled
    from Docker Hub on first use).
    """
    configured = os.environ.get("STREAMS_KAFKA_IMAGE", "").strip()
    if configured:
        return configured
    return LOCAL_IMAGE if image_present(LOCAL_IMAGE) else OFFICIAL_IMAGE


def image_present(image: str) -> bool:
    """True when the Docker daemon has ``image`` (False without a daemon or the extra)."""
    client = _docker_client()
    if client is None:
        return False
    try:
        client.images.get(image)
        return True
    except Exception:  # ImageNotFound, or the daemon went away
        return False
    finally:
        client.close()


def _docker_client() -> Any:
    try:
        import docker  # noqa: PLC0415 - the testing extra

        return docker.from_env(timeout=10)
    except Exception:  # no package, no daemon configuration
        return None
