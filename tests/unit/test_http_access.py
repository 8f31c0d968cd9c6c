"""Who may use an HTTP port (``streams.http_access``): this machine only unless asked, a
token for any other host, asked of every request, and never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

import streams.http_access
from streams.http_access import (
    LOOPBACK,
    TOKEN_ENV,
    BearerToken,
    HttpAccess,
    HttpAccessError,
    read_token,
)
from streams.runtime import RuntimeConfig

SECRET = "c2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA"  # what a token file holds
TOKEN = BearerToken(SECRET)


def test_a_port_serves_this_machine_only_unless_told() -> None:
    assert HttpAccess().host == LOOPBACK == "127.0.0.1"
    assert RuntimeConfig("b:9092").http == HttpAccess()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST"])
def test_a_loopback_host_needs_no_token(host: str) -> None:
    HttpAccess(host).check()  # no error


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "10.1.2.3", "streams.example"])
def test_any_other_host_is_refused_without_a_token(host: str) -> None:
    with pytest.raises(HttpAccessError) as refused:
        HttpAccess(host).check("the metrics port")
    message = str(refused.value)
    assert message.startswith(f"refusing to serve the metrics port on {host or 'every interface'}")
    assert f"--http-token-file FILE or ${TOKEN_ENV}" in message
    assert "\n" not in message
    HttpAccess(host, TOKEN).check()  # with a token: served, every request checked


def test_without_a_token_every_request_is_allowed() -> None:
    access = HttpAccess()
    assert access.allows(None) and access.allows("Bearer anything")


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        (f"Bearer {SECRET}", True),
        (f"bearer {SECRET}", True),  # the scheme in any case (RFC 7235)
        (f"  Bearer   {SECRET} ", True),
        (None, False),
        ("", False),
        ("Bearer", False),
        (f"Basic {SECRET}", False),
        (f"Bearer {SECRET[:-1]}", False),
        (f"Bearer {SECRET}x", False),
        (f"Bearer {SECRET.upper()}", False),
        (f"{SECRET}", False),
        ("Bearer ünïcode", False),
    ],
)
def test_with_a_token_a_request_is_allowed_only_with_it(header: str | None, allowed: bool) -> None:
    assert HttpAccess(LOOPBACK, TOKEN).allows(header) is allowed


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return a == b

    monkeypatch.setattr(streams.http_access.hmac, "compare_digest", compare_digest)
    assert HttpAccess(LOOPBACK, TOKEN).allows(f"Bearer {SECRET}")
    assert not HttpAccess(LOOPBACK, TOKEN).allows("Bearer wrong")
    assert compared == [(SECRET.encode(), SECRET.encode()), (b"wrong", SECRET.encode())]


def test_a_token_shows_nowhere() -> None:
    config = RuntimeConfig("b:9092", query_port=0, http=HttpAccess("0.0.0.0", TOKEN))
    for shown in (repr(TOKEN), str(TOKEN), f"{TOKEN}", repr(config), str(config.http)):
        assert SECRET not in shown
    assert "[hidden]" in repr(config)
    assert TOKEN.header == f"Bearer {SECRET}"  # what a client sends


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("short", "a token has 16 to 4096 characters, this one 5"),
        ("x" * 4097, "a token has 16 to 4096 characters, this one 4097"),
        ("with a space in it!", "visible ASCII characters without spaces"),
        ("ünïcode-is-not-a-header-value", "visible ASCII characters without spaces"),
    ],
)
def test_a_value_that_cannot_be_a_token_is_refused_without_quoting_it(value: str, why: str) -> None:
    with pytest.raises(HttpAccessError, match=why) as refused:
        BearerToken(value)
    assert value not in str(refused.value)


def test_a_token_is_read_from_a_file_else_from_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(f"{SECRET}\n")  # as `openssl rand -hex 32 > file` leaves it
    other = "another-token-of-the-environment"
    assert read_token(file, {}) == TOKEN
    assert read_token(str(file), {TOKEN_ENV: other}) == TOKEN  # the file wins
    assert read_token(None, {TOKEN_ENV: f" {other}\n"}) == BearerToken(other)
    assert read_token(None, {}) is None
    assert read_token(None, {TOKEN_ENV: ""}) is None


def test_a_token_that_cannot_be_read_is_one_line_naming_where(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(HttpAccessError) as refused:
        read_token(missing, {})
    assert str(refused.value) == f"cannot read the token file {missing}: No such file or directory"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(HttpAccessError, match=f"the token file {empty} is empty"):
        read_token(empty, {})
    with pytest.raises(HttpAccessError) as short:
        read_token(None, {TOKEN_ENV: "hunter2"})
    assert str(short.value).startswith(f"${TOKEN_ENV}: a token has 16 to 4096 characters")
    assert "hunter2" not in str(short.value)
