"""Client settings: properties files, ``-X`` overrides, ``$STREAMS_KAFKA_CONFIG``, the order
they apply in, secrets kept out of what is printed, and librdkafka's log kept off stderr."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer

from streams.config import (
    KAFKA_CONFIG_ENV,
    ClientConfigError,
    client_config,
    client_settings,
    read_properties,
    redacted,
)
from streams.logs import KafkaLog
from streams.runtime.config import RuntimeConfig, split_client_overrides
from streams.setting_names import LIBRDKAFKA, SECRET


def test_a_properties_file_reads_as_java_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# a comment\n"
        "! another\n"
        "\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism : SCRAM-SHA-512\n"
        "sasl.jaas.config=org.Login required \\\n"
        "    username=alice;\n"
        "url=http://host:8081/x=y\n"
    )
    assert read_properties(path) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.Login required username=alice;",
        "url": "http://host:8081/x=y",
    }


def test_a_bad_line_or_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("a=1\njust words\n")
    with pytest.raises(ClientConfigError, match=r"bad.properties:2: expected key=value"):
        read_properties(path)
    with pytest.raises(ClientConfigError, match="cannot read client config"):
        read_properties(tmp_path / "missing.properties")
    with pytest.raises(ClientConfigError, match=r"^-X item 1: expected KEY=VALUE, found no '='$"):
        client_settings(overrides=["oops"])


NAME_AS_KEY = "expected KEY=VALUE with a setting's name as KEY"
NO_EQUALS = "expected KEY=VALUE, found no '='"


@pytest.mark.parametrize(
    ("items", "error"),
    [
        (["a=1", "sasl.password:s3cret"], f"-X item 2 (sasl.password): {NO_EQUALS}"),
        (["s3cret"], f"-X item 1: {NO_EQUALS}"),
        (["=s3cret"], "-X item 1: expected KEY=VALUE, found no key"),
        # the key would carry the secret to librdkafka's "No such configuration property"
        (["sasl.password s3cret=x"], f"-X item 1 (sasl.password): {NAME_AS_KEY}"),
        (["sasl.jaas.config"], f"-X item 1 (sasl.jaas.config): {NO_EQUALS}"),
    ],
)  # fmt: skip
def test_a_malformed_x_is_named_by_its_place_and_known_key_never_its_text(
    items: list[str], error: str
) -> None:
    with pytest.raises(ClientConfigError) as refused:
        client_settings(overrides=items)
    assert str(refused.value) == error


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('sasl.jaas.config org.Login required password="s3cret";', " (sasl.jaas.config)"),
        ("sasl.password s3cret=x", " (sasl.password)"),  # Java's key/value separator: a space
        ("s3cret", ""),
        ("org.Login required s3cret", ""),  # a continued line left without its backslash
    ],
)
def test_a_malformed_properties_line_is_named_by_its_number_and_known_key_never_its_text(
    tmp_path: Path, line: str, named: str
) -> None:
    path = tmp_path / "client.properties"
    path.write_text(f"security.protocol=SASL_SSL\n{line}\n")
    with pytest.raises(ClientConfigError) as refused:
        read_properties(path)
    assert str(refused.value) == (
        f"{path}:2{named}: expected key=value with a setting's name as key"
    )


def test_the_environment_file_then_config_then_x_and_the_last_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "env.properties"
    env_file.write_text("a=env\nb=env\nc=env\n")
    command_file = tmp_path / "command.properties"
    command_file.write_text("b=file\nc=file\n")
    monkeypatch.setenv(KAFKA_CONFIG_ENV, str(env_file))
    assert client_settings(command_file, ["c=x"]) == {"a": "env", "b": "file", "c": "x"}


# What librdkafka flags _RK_SENSITIVE in rdkafka_conf.c (and the alias of one), what
# confluent-kafka's SchemaRegistryClient reads credentials from, and Java clients' secrets.
SECRETS = [
    "sasl.username", "sasl.password", "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret", "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.file", "sasl.oauthbearer.assertion.private.key.pem",
    "sasl.oauthbearer.assertion.private.key.passphrase", "ssl.key.location",
    "ssl.key.password", "ssl.key.pem", "ssl_key", "ssl.keystore.password", "ssl.ca.pem",
    "basic.auth.user.info", "bearer.auth.token", "bearer.auth.client.secret",
    "bearer.auth.issuer.endpoint.query", "bearer.auth.custom.provider.config",
    "sasl.jaas.config", "ssl.truststore.password", "ssl.keystore.key",
]  # fmt: skip


def test_secrets_and_unknown_keys_are_hidden_in_what_is_shown() -> None:
    secrets = {key: f"planted-{i}" for i, key in enumerate(SECRETS)}
    unknown = {"sasl.pasword": "hunter2", "consumer.ssl.key.pasword": "hunter3"}
    plain = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "consumer.fetch.min.bytes": "1",
        "bearer.auth.client.id": "orders",
    }
    shown = redacted({**secrets, **unknown, **plain})
    assert shown == {**dict.fromkeys([*secrets, *unknown], "[hidden]"), **plain}
    # one kind of client's settings (streams run's -X consumer.KEY) are hidden alike
    assert redacted({"producer.sasl.password": "p"}) == {"producer.sasl.password": "[hidden]"}


def test_the_user_info_of_a_url_is_hidden() -> None:
    shown = redacted({"url": "https://svc:s3cret@registry:8081/x", "proxy": "http://proxy:3128"})
    assert shown == {"url": "https://[hidden]@registry:8081/x", "proxy": "http://proxy:3128"}


def test_every_setting_shown_is_one_the_installed_librdkafka_knows() -> None:
    # A name Streams shows the value of must be a real property: a typo in the table
    # would show a misspelt key's value. librdkafka refuses an unknown name by name.
    unknown = []
    for name in sorted(LIBRDKAFKA - SECRET):
        try:
            Producer({name: "x", "logger": logging.getLogger("ignored")})
        except Exception as exc:  # refused values (they are all "x") are fine
            if "No such configuration property" in str(exc):
                unknown.append(name)
    assert unknown == []


def test_every_runtime_client_gets_the_shared_settings_and_its_own() -> None:
    shared, consumer, producer = split_client_overrides(
        {"security.protocol": "SASL_SSL", "consumer.fetch.min.bytes": "1", "producer.acks": "1"}
    )
    config = RuntimeConfig("b:9092", client=shared, consumer=consumer, producer=producer)
    consumer_config = config.consumer_config("g")
    producer_config = config.producer_config()
    assert consumer_config["security.protocol"] == producer_config["security.protocol"]
    assert consumer_config["fetch.min.bytes"] == "1" and "fetch.min.bytes" not in producer_config
    assert producer_config["acks"] == "1" and "acks" not in consumer_config
    assert consumer_config["logger"] is producer_config["logger"]  # librdkafka's log: ours


def test_librdkafka_lines_go_to_debug_once_per_client_and_facility_per_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = KafkaLog(every_s=60)
    with caplog.at_level(logging.INFO, logger="streams.kafka"):
        log.log(3, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "Connection refused")
    assert caplog.records == []  # nothing at INFO: Streams says what it means itself
    with caplog.at_level(logging.DEBUG, logger="streams.kafka"):
        for _ in range(500):
            log.log(3, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "Connection refused")
        log.log(3, "%s [%s] %s", "FAIL", "rdkafka#consumer-2", "Connection refused")
    assert [(r.getMessage(), r.facility, r.client) for r in caplog.records] == [
        ("Connection refused", "FAIL", "rdkafka#producer-1"),
        ("Connection refused", "FAIL", "rdkafka#consumer-2"),
    ]


def test_a_client_config_routes_the_log_and_lets_the_user_win() -> None:
    config = client_config("b:9092", {"linger.ms": "50"}, **{"linger.ms": 5, "acks": "all"})
    assert config["linger.ms"] == "50" and config["acks"] == "all"
    assert isinstance(config["logger"], KafkaLog)
