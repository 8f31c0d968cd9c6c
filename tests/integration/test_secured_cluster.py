"""Every command on a cluster that wants credentials: a SASL_PLAINTEXT (PLAIN) listener and
a TLS listener (certificates made here with openssl) of a local broker of its own. With the
right settings (``--config FILE``, ``-X``, ``$STREAMS_KAFKA_CONFIG``) the commands work;
with a wrong password or an unknown CA each fails with one line naming the refusal: no
traceback, no librdkafka lines, no secret."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from cli_runner import streams, streams_process
from factories import order

from streams.broker.local import LocalBroker, free_port
from streams.cluster import admin_client, create_topic
from streams.codec import AvroCodec
from streams.schemas import default_catalog
from streams.testing import TopicReader, produce_envelopes, wait_until
from streams.testing.topics import unique_topic_name

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT / "topology" / "mirror.py"
PASSWORD = "alice-s3cret"
GOOD = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": PASSWORD,
}
CODEC = AvroCodec(default_catalog())


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory: Path, name: str) -> Path:
    """A self-signed CA: ``<name>.pem`` and its key in ``directory``."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN={name}",
            cwd=directory)  # fmt: skip
    return directory / f"{name}.pem"


def make_keystore(directory: Path, ca: str, password: str) -> Path:
    """The broker's key and certificate (for 127.0.0.1), signed by ``ca``, as PKCS12."""
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key",
            "-out", "broker.csr", "-subj", "/CN=127.0.0.1", cwd=directory)  # fmt: skip
    openssl("x509", "-req", "-in", "broker.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", "broker.pem", "-days", "2", "-extfile", "san.ext",
            cwd=directory)  # fmt: skip
    openssl("pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key",
            "-out", "broker.p12", "-passout", f"pass:{password}", "-name", "broker",
            cwd=directory)  # fmt: skip
    return directory / "broker.p12"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tls")
    make_ca(directory, "ca")
    make_ca(directory, "other-ca")  # a CA the broker's certificate is not from
    make_keystore(directory, "ca", "keystore-secret")
    return directory


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, certificates: Path) -> Iterator[LocalBroker]:
    broker = LocalBroker(
        port=free_port(),
        data_dir=tmp_path_factory.mktemp("secured"),
        heap="512m",
        sasl_users={"alice": PASSWORD},
        tls=(certificates / "broker.p12", "keystore-secret"),
    )
    broker.up()
    try:
        yield broker
    finally:
        broker.down()


def properties(path: Path, settings: dict[str, str]) -> Path:
    path.write_text("# client settings\n" + "".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


# What every command here runs with: its log lines as JSON.
LOG_JSON = {"STREAMS_LOG_JSON": "1"}


class Listener(NamedTuple):
    """One secured listener: where, the settings that pass, settings refused, and the word
    the refusal's line must name."""

    bootstrap: str
    good: dict[str, str]
    bad: dict[str, str]
    refusal: str


@pytest.fixture(params=["sasl", "tls"])
def listener(request: pytest.FixtureRequest, secured: LocalBroker, certificates: Path) -> Listener:
    if request.param == "sasl":
        return Listener(
            secured.sasl_bootstrap, GOOD, {**GOOD, "sasl.password": "wrong"}, "authentication"
        )
    good = {"security.protocol": "SSL", "ssl.ca.location": str(certificates / "ca.pem")}
    bad = {**good, "ssl.ca.location": str(certificates / "other-ca.pem")}  # not the broker's
    return Listener(secured.tls_bootstrap, good, bad, "ssl")


def test_every_command_works_with_settings_from_a_file(listener: Listener, tmp_path: Path) -> None:
    bootstrap, good = listener.bootstrap, listener.good
    config = properties(tmp_path / "client.properties", good)
    topic = unique_topic_name("secured-in")
    app_id = unique_topic_name("secured-app")
    create_topic(admin_client(bootstrap, good), topic, partitions=2)
    produce_envelopes(bootstrap, topic, [order(n) for n in range(20)], CODEC, config=good)

    run = subprocess.Popen(
        [
            sys.executable, "-m", "streams", "run", str(MIRROR), "--app-id", app_id,
            "--set", f"input={topic}", "--bootstrap", bootstrap, "--config", str(config),
            "--no-status",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with TopicReader(bootstrap, f"{app_id}-mirror", config=dict(good)) as reader:
            reader.wait_for(lambda rs: len(rs) >= 20, 90, what="the mirror's outputs")

        def lag() -> list[dict[str, int]]:
            args = ["lag", "-g", app_id, "-b", bootstrap, "--config", str(config), "--json"]
            return list(json.loads(streams(*args, env=LOG_JSON).stdout or "[]"))

        wait_until(
            lambda: (rows := lag()) and all(row["lag"] == 0 for row in rows),
            60,
            what="the group committed everything",
        )
    finally:
        run.send_signal(signal.SIGTERM)
        assert run.wait(60) == 0

    # the same, for every command, from the environment
    env = {**LOG_JSON, "STREAMS_KAFKA_CONFIG": str(config)}
    dlq = f"{app_id}-{topic}-dlq"
    for args in (
        ["replay", topic, "--from", "earliest", "-b", bootstrap],
        ["offsets", "show", "-g", app_id, "-b", bootstrap],
        ["offsets", "reset", "earliest", "-g", app_id, "--topic", topic, "--execute",
         "-b", bootstrap],
        ["dlq", "list", dlq, "-b", bootstrap],
        ["dlq", "replay", dlq, "--execute", "-b", bootstrap],
    ):  # fmt: skip
        done = streams(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
        assert "%3|" not in done.stderr and PASSWORD not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["lag", "--timeout", "10"],
        ["offsets", "show", "-g", "some-group", "--timeout", "10"],
        ["replay", "some-topic", "--from", "earliest", "--timeout", "10"],
        ["dlq", "list", "some-dlq", "--timeout", "10"],
        ["run", str(MIRROR), "--set", "input=some-topic", "--connect-timeout", "10"],
    ],
)
def test_refused_settings_are_one_line_naming_the_refusal(
    listener: Listener, tmp_path: Path, args: list[str]
) -> None:
    config = properties(tmp_path / "bad.properties", listener.bad)
    # In a process of its own: all the user sees until it is gone, librdkafka's threads too
    # (a client left open by a refusal would go on writing to file descriptor 2).
    done = streams_process(*args, "-b", listener.bootstrap, "--config", str(config), env=LOG_JSON)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:") and listener.refusal in lines[0].lower(), lines[0]
    assert "wrong" not in done.stderr and "Traceback" not in done.stderr
