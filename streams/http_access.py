"""Who may use an HTTP port Streams serves: the host it binds, and the token every request
must then carry.

``HttpAccess(host, token)`` is decided once, before a port is bound, and asked of every
request:

- ``host``: the address the port binds, ``127.0.0.1`` (this machine only) unless told
  otherwise. Any other (``0.0.0.0``, an interface's address, a name other than
  ``localhost``) lets other machines connect, so ``check()`` refuses it without a token:
  one ``HttpAccessError`` line, raised before anything is bound. A port that answers other
  machines is asked for on purpose, and then guarded.
- ``token``: when there is one (whatever the host), every request, on every path, must
  carry ``Authorization: Bearer <token>``; ``allows(header)`` compares it in constant time
  (``hmac.compare_digest``). A server answers a request without it ``401`` with
  ``WWW-Authenticate: Bearer`` (RFC 6750). Health paths are no exception: one rule, no
  path that answers a stranger (``/readyz``'s reasons name topics and partitions), and
  Kubernetes probes (``httpGet.httpHeaders``) and Prometheus (``authorization``) send it.

A token is a secret. It never comes from a command line (every user of the machine reads
every process's arguments): ``read_token`` takes it from a file or from the environment
(``STREAMS_HTTP_TOKEN``), and ``BearerToken`` hides it from every ``repr`` and ``str``, so
no log line, error or dumped config carries it. A token is 16 to 4096 visible ASCII
characters, no spaces (it travels in a header): ``openssl rand -hex 32`` makes one.

Pure and small, so every HTTP port can use it: the metrics and query ports
(``streams.observability.server``), the clients that ask them (``streams query``), and the
operators' console.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from streams.errors import StreamsError

LOOPBACK = "127.0.0.1"
"""The host a port binds unless told otherwise: this machine only."""
TOKEN_ENV = "STREAMS_HTTP_TOKEN"
"""The environment variable a token is read from when no file is given."""
HIDDEN = "[hidden]"
TOKEN_CHARS = (16, 4096)
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
# How a refusal says where a token comes from (the command's flag, the library's field).
GIVE_A_TOKEN = f"--http-token-file FILE or ${TOKEN_ENV}"


class HttpAccessError(StreamsError):
    """A port that would answer other machines without a token, or a token that cannot be
    read or used."""


@dataclass(frozen=True, slots=True)
class BearerToken:
    """The token requests must carry; its value shows nowhere (``repr`` and ``str`` are
    ``[hidden]``). Raises ``HttpAccessError`` for a value that cannot be one (see the module
    docstring), without quoting it."""

    value: str = field(repr=False)

    def __post_init__(self) -> None:
        low, high = TOKEN_CHARS
        if not low <= len(self.value) <= high:
            raise HttpAccessError(
                f"a token has {low} to {high} characters, this one {len(self.value)} "
                "(openssl rand -hex 32 makes one)"
            )
        if not _VISIBLE_ASCII.fullmatch(self.value):
            raise HttpAccessError(
                "a token is visible ASCII characters without spaces: it travels in a header"
            )

    def __repr__(self) -> str:
        return f"BearerToken({HIDDEN})"

    __str__ = __repr__

    @property
    def header(self) -> str:
        """The ``Authorization`` header's value a client sends."""
        return f"Bearer {self.value}"


def read_token(
    path: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> BearerToken | None:
    """The token in the file at ``path`` (surrounding whitespace, a final newline, left
    out), else in ``$STREAMS_HTTP_TOKEN`` of ``environ`` (default: the process's), else
    None. Raises ``HttpAccessError`` for a file that cannot be read, an empty one, or a
    value that cannot be a token: one line naming where it was read, never the value."""
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise HttpAccessError(f"cannot read the token file {path}: {reason}") from None
        where = f"the token file {path}"
    else:
        text = (environ if environ is not None else os.environ).get(TOKEN_ENV, "").strip()
        if not text:
            return None
        where = f"${TOKEN_ENV}"
    if not text:
        raise HttpAccessError(f"{where} is empty")
    try:
        return BearerToken(text)
    except HttpAccessError as exc:
        raise HttpAccessError(f"{where}: {exc}") from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds this machine only: a loopback address, or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost: it may resolve to anything
        return False


@dataclass(frozen=True, slots=True)
class HttpAccess:
    """The host a port binds and the token its requests carry (see the module docstring)."""

    host: str = LOOPBACK
    token: BearerToken | None = None

    def check(self, what: str = "an HTTP port") -> None:
        """Refuse (``HttpAccessError``) to serve ``what`` on a host other machines reach
        without a token."""
        if self.token is None and not is_loopback(self.host):
            raise HttpAccessError(
                f"refusing to serve {what} on {self.host or 'every interface'} without a "
                f"token: other machines could use it; give one ({GIVE_A_TOKEN}) and every "
                f"request must carry it, or serve on {LOOPBACK}"
            )

    def allows(self, authorization: str | None) -> bool:
        """Whether a request whose ``Authorization`` header is ``authorization`` (None:
        none) may be answered: always without a token, else only with ``Bearer <token>``
        (the scheme in any case, compared in constant time for a given length)."""
        if self.token is None:
            return True
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        given = credentials.strip().encode("utf-8", "replace")
        expected = self.token.value.encode()
        return hmac.compare_digest(given, expected) and scheme.lower() == "bearer"


LOCAL = HttpAccess()
"""This machine only, no token: the default of every port."""
