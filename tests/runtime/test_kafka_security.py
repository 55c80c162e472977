"""Kafka security settings as the clients get them: TLS files, Spark's options and their redaction, access checks."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import pytest
from pydantic import SecretStr

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.errors import ConfigError
from binlake.shared.kafka import access
from binlake.shared.kafka.client import connection_kwargs
from binlake.spark_sink.events.source import kafka_options
from binlake.spark_sink.session import REDACTION

pytestmark = pytest.mark.unit

CERT = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----"
CA = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----"
KEY = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nS0VZQk9EWQ==\n-----END ENCRYPTED PRIVATE KEY-----"
SASL_PASSWORD = "sasl-secret-1"
KEY_PASSWORD = "key-secret-2"


def _settings(tmp_path: Path, *, key_apart: bool = True, key: str = KEY) -> KafkaSettings:
    (tmp_path / "ca.pem").write_text(CA + "\n")
    if key_apart:
        (tmp_path / "client.pem").write_text(CERT + "\n")
        (tmp_path / "client.key").write_text(key + "\n")
    else:
        (tmp_path / "client.pem").write_text(f"{key}\n{CERT}\n")
    return KafkaSettings(
        bootstrap_servers="127.0.0.1:9093",
        security_protocol="SASL_SSL",
        sasl_username="svc",
        sasl_password=SecretStr(SASL_PASSWORD),
        ssl_cafile=str(tmp_path / "ca.pem"),
        ssl_certfile=str(tmp_path / "client.pem"),
        ssl_keyfile=str(tmp_path / "client.key") if key_apart else None,
        ssl_key_password=SecretStr(KEY_PASSWORD),
    )


@pytest.mark.parametrize("key_apart", [True, False])
def test_spark_gets_the_pem_contents_whether_the_key_has_a_file_of_its_own(tmp_path: Path, key_apart: bool) -> None:
    options = kafka_options(_settings(tmp_path, key_apart=key_apart))
    assert options["kafka.ssl.truststore.type"] == options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.truststore.certificates"] == CA
    assert options["kafka.ssl.keystore.certificate.chain"] == CERT
    assert options["kafka.ssl.keystore.key"] == KEY
    assert options["kafka.ssl.key.password"] == KEY_PASSWORD
    assert "kafka.ssl.keystore.location" not in options  # executors need no copy of the files


def test_spark_redacts_every_option_that_holds_a_secret(tmp_path: Path) -> None:
    """Spark hides an option's value where ``spark.redaction.regex`` matches its name or its value."""
    body = KEY.splitlines()[1]
    for name, value in kafka_options(_settings(tmp_path)).items():
        if any(secret in value for secret in (SASL_PASSWORD, KEY_PASSWORD, body)):
            assert re.search(REDACTION, name) or re.search(REDACTION, value), name


def test_a_key_kafka_cannot_read_is_a_configuration_error(tmp_path: Path) -> None:
    traditional = KEY.replace("ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY")
    with pytest.raises(ConfigError, match=r"BINLAKE_KAFKA_SSL_KEYFILE: .* PKCS#8 .*openssl pkcs8"):
        kafka_options(_settings(tmp_path, key=traditional))


def test_unreadable_tls_files_name_their_setting(tmp_path: Path) -> None:
    settings = _settings(tmp_path).model_copy(update={"ssl_cafile": str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigError, match="BINLAKE_KAFKA_SSL_CAFILE: cannot read"):
        connection_kwargs(settings)
    with pytest.raises(ConfigError, match="BINLAKE_KAFKA_SSL_CAFILE: cannot read"):
        kafka_options(settings)
    # Files that are not PEM certificates: named, and nothing asks for a password on the terminal.
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="BINLAKE_KAFKA_SSL_CAFILE") as caught:
        connection_kwargs(_settings(tmp_path).model_copy(update={"ssl_cafile": str(tmp_path / "client.key")}))
    assert KEY_PASSWORD not in str(caught.value) and SASL_PASSWORD not in str(caught.value)


def test_the_access_check_leaves_an_unreachable_broker_to_the_back_off() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        plaintext = KafkaSettings(bootstrap_servers=f"127.0.0.1:{port}")
        asyncio.run(access.diagnose(plaintext))
        sasl = KafkaSettings(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_username="svc",
            sasl_password=SecretStr(SASL_PASSWORD),
        )
        asyncio.run(access.diagnose(sasl, timeout_s=5))
