"""What a request can end in besides its reply (each named for what happened to it)."""

from __future__ import annotations

from typing import Any

from streams.envelope import Envelope
from streams.errors import StreamsError


class RequestError(StreamsError):
    """A request got no reply (the base of the errors below)."""


class ReplyTimeout(RequestError):  # noqa: N818
    """No reply came within the request's timeout."""


class RequestNotSent(RequestError):  # noqa: N818
    """The broker did not take the request (its topic is unknown, the cluster refused it)."""


class RequestFailed(RequestError):  # noqa: N818
    """The reply is an error reply: the serving topology dead-lettered the request.
    ``reply`` is the ``streams.error`` envelope; ``error`` its payload (``exception``,
    ``message``, ``step``, ``dead_letter_topic``...)."""

    def __init__(self, reply: Envelope) -> None:
        self.reply = reply
        self.error: dict[str, Any] = dict(reply.data)
        where = f" from step {self.error['step']!r}" if self.error.get("step") else ""
        super().__init__(
            f"error reply{where}: {self.error['exception']}: {self.error['message']} "
            f"(dead-lettered to {self.error['dead_letter_topic']})"
        )


class RequesterClosed(RequestError):  # noqa: N818
    """The requester was closed while the request waited for its reply."""
