"""Messaging patterns on top of topologies: request-reply (``Requester``).

The names below are re-exported lazily (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.patterns.errors import (
        ReplyTimeout,
        RequesterClosed,
        RequestError,
        RequestFailed,
        RequestNotSent,
    )
    from streams.patterns.requester import Requester
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.patterns.errors": [
                "ReplyTimeout",
                "RequestError",
                "RequestFailed",
                "RequestNotSent",
                "RequesterClosed",
            ],
            "streams.patterns.requester": ["Requester"],
        },
    )

__all__ = [
    "ReplyTimeout",
    "RequestError",
    "RequestFailed",
    "RequestNotSent",
    "Requester",
    "RequesterClosed",
]
