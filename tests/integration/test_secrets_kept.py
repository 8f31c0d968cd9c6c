"""Secrets given to Streams never show: not in anything a command or an instance prints
under ``-v``, not in an error, not on the command line of an instance that
``streams run --instances N`` starts.

A value is planted for every secret setting librdkafka accepts (it flags them
``_RK_SENSITIVE``; on a PLAINTEXT listener it holds them without using them), spread over
``$STREAMS_KAFKA_CONFIG``, ``--config`` and ``-X``, against the shared broker. Every planted
value carries ``MARK`` at both ends and in the middle, so even a piece of one is found.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from cli_runner import streams
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from streams.config import KAFKA_CONFIG_ENV
from streams.testing import TopicFactory, TopologyProcess, wait_until
from streams.testing.topics import unique_topic_name

ORDERS = Path(__file__).resolve().parents[2] / "topology" / "orders.py"
MARK = f"planted{secrets.token_hex(4)}"


def planted(i: int) -> str:
    return f"{MARK}-{i}-{MARK}-{i}-{MARK}"


def pem(i: int) -> str:
    return f"-----BEGIN PRIVATE KEY-----\n{planted(i)}\n-----END PRIVATE KEY-----\n"


# Where each secret is given: the environment's file, --config, -X (PEMs span lines:
# only -X can give them here, and they must reach --instances' children whole).
IN_ENV_FILE = ["sasl.username", "sasl.password"]
IN_CONFIG = [
    "ssl.key.password",
    "ssl.key.location",
    "ssl.keystore.password",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase",
]
IN_X = ["ssl.key.pem", "ssl.ca.pem", "sasl.oauthbearer.assertion.private.key.pem"]
SECRET_KEYS = [*IN_ENV_FILE, *IN_CONFIG, *IN_X]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The planted settings: ``$STREAMS_KAFKA_CONFIG`` set, and the options that give the
    rest (``--config FILE`` and ``-X``)."""
    values = {key: planted(i) for i, key in enumerate(SECRET_KEYS)}
    env_file = tmp_path / "env.properties"
    env_file.write_text("".join(f"{k}={values[k]}\n" for k in IN_ENV_FILE))
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{k}={values[k]}\n" for k in IN_CONFIG))
    monkeypatch.setenv(KAFKA_CONFIG_ENV, str(env_file))
    x = [arg for i, key in enumerate(IN_X) for arg in ("-X", f"{key}={pem(100 + i)}")]
    return ["--config", str(config), *x]


def printed_under_v(*args: str, stdin: str | None = None) -> str:
    """All ``streams -v ARGS`` printed, stdout and stderr, once it succeeded."""
    run = streams("-v", *args, stdin=stdin)
    assert run.returncode == 0, run.output
    return run.output


def test_commands_print_no_secret_under_v(
    kafka_bootstrap: str, make_topic: TopicFactory, settings: list[str]
) -> None:
    topic = make_topic("secrets")
    # librdkafka's own lines too: its configuration dump (debug=conf) reaches -v's log
    cluster = ["-b", kafka_bootstrap, *settings, "-X", "debug=conf,security"]
    printed = [
        printed_under_v("topics", "list", *cluster),
        printed_under_v("produce", topic, "--raw", *cluster, stdin="one\n"),
        printed_under_v("consume", topic, "--format", "raw", *cluster),
    ]
    assert '"value": "one"' in printed[-1]  # the commands ran with the planted settings
    assert '"logger": "streams.kafka"' in printed[-1]
    assert not [text for text in printed if MARK in text]


def test_an_error_names_the_key_and_never_the_value(kafka_bootstrap: str, tmp_path: Path) -> None:
    bad_file = tmp_path / "bad.properties"
    bad_file.write_text(f'sasl.jaas.config org.Login required password="{planted(1)}";\n')
    cluster = ["topics", "list", "-b", kafka_bootstrap]
    refused = {
        # a malformed -X and properties line
        "-X item 1 (sasl.password): expected KEY=VALUE, found no '='": streams(
            "-v", *cluster, "-X", f"sasl.password:{planted(0)}"
        ),
        f"{bad_file}:1 (sasl.jaas.config): expected key=value": streams(
            "-v", *cluster, "--config", str(bad_file)
        ),
        # a misspelt key: librdkafka refuses it by name
        'No such configuration property: "sasl.pasword"': streams(
            "-v", *cluster, "-X", f"sasl.pasword={planted(2)}"
        ),
    }
    for error, result in refused.items():
        assert result.returncode == 1
        assert error in result.stderr
        assert MARK not in result.stdout + result.stderr


def test_run_v_shows_its_settings_with_every_secret_and_unknown_value_hidden(
    kafka_bootstrap: str, settings: list[str]
) -> None:
    # Unknown to librdkafka (a misspelt key, the registry's, Java's): the run stops at its
    # first client, after -v showed the settings it was given.
    unknown = {"sasl.pasword": planted(3), "basic.auth.user.info": planted(4)}
    x = [arg for key, value in unknown.items() for arg in ("-X", f"{key}={value}")]
    result = streams("-v", "run", str(ORDERS), "--no-status", "-b", kafka_bootstrap, *settings, *x)
    assert result.returncode == 1
    assert 'No such configuration property: "' in result.stderr
    assert MARK not in result.stdout + result.stderr
    (shown,) = [line["settings"] for line in log_lines(result.stderr, "client settings")]
    assert shown == dict.fromkeys([*SECRET_KEYS, *unknown], "[hidden]")


def test_instances_get_their_settings_off_their_command_lines_and_print_no_secret(
    kafka_bootstrap: str, kafka_admin: AdminClient, make_topic: TopicFactory, settings: list[str]
) -> None:
    source = make_topic("secrets-orders", partitions=2)
    app_id = unique_topic_name("secrets")
    with TopologyProcess(
        ORDERS,
        kafka_bootstrap,
        app_id=app_id,
        settings={"input": source},
        args=[*settings, "-X", "debug=conf,security", "--instances", "2"],
        env={"STREAMS_LOG_JSON": "1"},
        command=("-v", "run"),
    ) as run:
        wait_until(lambda: members(kafka_admin, app_id) == 2, 120, what="two group members")
        children = children_of(run.pid)
        assert len(children) == 2
        for child in children:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().decode()
            assert MARK not in argv and "--config" not in argv
            # the file it was handed: read, and removed as soon as read
            environ = Path(f"/proc/{child}/environ").read_bytes().decode().split("\0")
            (handed,) = [v for v in environ if v.startswith("STREAMS_RUN_SETTINGS_FILE=")]
            assert not Path(handed.partition("=")[2]).exists()
        assert run.stop(60) == 0
        printed = run.output()  # the parent's and its instances' stdout and stderr
    assert MARK not in printed
    # each instance was given every setting (the secrets hidden, as -v shows them)
    shown = [line["settings"] for line in log_lines(printed, "client settings")]
    assert shown == [{**dict.fromkeys(SECRET_KEYS, "[hidden]"), "debug": "conf,security"}] * 2
    assert log_lines(printed, "[thrd:app]: Client configuration:")  # librdkafka's lines too


def members(admin: AdminClient, group: str) -> int:
    try:
        return len(admin.describe_consumer_groups([group])[group].result(timeout=10).members)
    except KafkaException:  # e.g. NOT_COORDINATOR while the group is set up
        return -1


def children_of(pid: int | None) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # a process that ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def log_lines(text: str, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of ``text`` (a process's stderr off a terminal) for ``event``."""
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]
