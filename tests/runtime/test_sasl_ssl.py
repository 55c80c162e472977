"""SASL_SSL end to end on a real broker: SCRAM-SHA-512 over mutual TLS, certificates made here.

The embedded broker gets a SASL_SSL listener (``broker.start(sasl_ssl=...)``)
beside its PLAINTEXT one, which only this test uses to set topics up and read
results. Through the secure listener alone, a real ``binlake normalizer``
process turns canal-json into canonical events and a real ``binlake sink``
process lands them in Delta, the mirrors equal to the source's final state.
A wrong password and a CA that did not sign the broker's certificate stop
the normalizer, the sink and ``binlake dlq replay`` within seconds, saying
what to fix. No secret (the SASL
password, the client key's password, the key itself) appears in what they
print (the normalizer at DEBUG, the sink and Spark's driver at INFO), in their
/metrics, in their errors, or in ``binlake config``. The metrics servers listen
on loopback unless told otherwise.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from binlake.shared.cli.demo.truth_check import check_table
from binlake.shared.devbroker import broker
from binlake.shared.devbroker.secure import SaslSslListener
from binlake.shared.generate.workload import Workload
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.session import DRIVER_OPTIONS
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.pipeline import Topics, send_workload
from tests.support.service_process import (
    LOOPBACK_V4,
    Service,
    clean_env,
    http_get,
    listening_addresses,
    metric_total,
)
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests
from tests.support.tls_files import TlsFiles, make

pytestmark = [pytest.mark.integration, pytest.mark.system, pytest.mark.xdist_group("system"), pytest.mark.asyncio]

USER = "binlake-svc"
PASSWORD = f"sasl-pw-{uuid.uuid4().hex[:16]}"
WRONG_PASSWORD = f"wrong-pw-{uuid.uuid4().hex[:16]}"
EVENTS = 200
SEED = 5
DRIVER_LOG4J = """rootLogger.level = info
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d %p %c: %m%n%ex
"""
"""Spark's driver log at INFO, into a file: pyspark 4.2 prints no INFO line on the console, whatever
``setLogLevel`` (``BINLAKE_SINK_LOG_LEVEL``) says. Kafka's clients log their configuration at INFO."""
FAIL_FAST_S = 30.0
"""A refused start must end within this (Python's start and imports take a few seconds on a busy machine);
the old behaviour backed off and retried for ever."""


@dataclass(frozen=True)
class SecureBroker:
    info: broker.BrokerInfo
    tls: TlsFiles

    def env(self, **overrides: str) -> dict[str, str]:
        """``BINLAKE_KAFKA_*`` for the SASL_SSL listener with mutual TLS; ``overrides`` over them."""
        values = {
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": self.info.sasl_ssl_bootstrap,
            "BINLAKE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "BINLAKE_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "BINLAKE_KAFKA_SASL_USERNAME": USER,
            "BINLAKE_KAFKA_SASL_PASSWORD": PASSWORD,
            "BINLAKE_KAFKA_SSL_CAFILE": str(self.tls.ca),
            "BINLAKE_KAFKA_SSL_CERTFILE": str(self.tls.client_cert),
            "BINLAKE_KAFKA_SSL_KEYFILE": str(self.tls.client_key),
            "BINLAKE_KAFKA_SSL_KEY_PASSWORD": self.tls.client_key_password,
        }
        values.update(overrides)
        return values

    def secrets(self) -> list[str]:
        """What must never be printed: the passwords, and a line of the client key's body."""
        key_body = self.tls.client_key.read_text().splitlines()[2]
        return [PASSWORD, WRONG_PASSWORD, self.tls.client_key_password, key_body]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("the embedded Kafka broker needs java and mvn on PATH")
    tls = make(tmp_path_factory.mktemp("tls"))
    run_dir = tmp_path_factory.mktemp("secure-broker")
    listener = SaslSslListener(tls.broker_keystore, tls.broker_key_password, {USER: PASSWORD}, truststore=tls.ca)
    info = broker.start(run_dir, timeout_s=120, sasl_ssl=listener)
    try:
        yield SecureBroker(info, tls)
    finally:
        broker.stop(run_dir)


def _assert_no_secret(secure: SecureBroker, where: str, text: str) -> None:
    for secret in secure.secrets():
        assert secret not in text, f"a secret appears in {where}"


def _normalizer(secure: SecureBroker, topics: Topics, log: Path, port: int, **kafka: str) -> Service:
    env = clean_env(
        **secure.env(**kafka),
        **topics.normalizer_env(),
        BINLAKE_FORMAT="canal-json",
        BINLAKE_METRICS_PORT=str(port),
        BINLAKE_LOG_LEVEL="DEBUG",
    )
    return Service(["normalizer"], env, log)


def _sink(secure: SecureBroker, settings: SinkSettings, log: Path, port: int, **kafka: str) -> Service:
    driver_log = log.with_name("spark-driver.log")
    log4j = log.with_name("log4j2.properties")
    log4j.write_text(DRIVER_LOG4J.format(log=driver_log))
    settings = settings.model_copy(
        update={"spark_conf": {**settings.spark_conf, DRIVER_OPTIONS: f"-Dlog4j2.configurationFile={log4j}"}}
    )
    extra = {
        **secure.env(**kafka),
        "BINLAKE_SINK_METRICS_PORT": str(port),
        "BINLAKE_SINK_LOG_LEVEL": "INFO",
        "BINLAKE_SINK_TRIGGER_INTERVAL_S": "1",
        "BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S": "1",
    }
    env = sink_env(settings, secure.info.sasl_ssl_bootstrap, **extra)
    env.pop("BINLAKE_SINK_METRICS_HOST")  # the default must be loopback
    return Service(["sink"], env, log)


async def _until_metric(service: Service, port: int, name: str, value: float, timeout_s: float) -> str:
    """The /metrics page once sample ``name`` sums to ``value``."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert service.process.poll() is None, f"{service.command[0]} exited:\n{service.output()[-3000:]}"
        page = http_get(port, "/metrics")
        if page is not None and metric_total(page[1], name) >= value:
            return page[1]
        assert time.monotonic() < deadline, f"{name} did not reach {value}:\n{service.output()[-3000:]}"
        await asyncio.sleep(0.5)


async def test_normalizer_and_sink_through_sasl_ssl(secure: SecureBroker, tmp_path: Path) -> None:
    plaintext = secure.info.bootstrap  # set-up and checks only
    topics = Topics.fresh("secure")
    await kafka_tools.create_topics(plaintext, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    await send_workload(plaintext, "canal-json", topics, events=EVENTS, seed=SEED, zone_name="UTC", tables=2)

    port = broker.free_port()
    normalizer = _normalizer(secure, topics, tmp_path / "normalizer.log", port)
    try:
        metrics = await _until_metric(normalizer, port, "binlake_consumed_messages_total", EVENTS, 120)
        assert listening_addresses(port) == {LOOPBACK_V4}
        assert http_get(port, "/readyz") == (200, "ready\n")
    finally:
        assert normalizer.stop() == 0
    _assert_no_secret(secure, "the normalizer's /metrics", metrics)
    _assert_no_secret(secure, "the normalizer's log", normalizer.output())
    assert await kafka_tools.read_all(plaintext, topics.dlq) == []
    assert len(await kafka_tools.read_all(plaintext, topics.events)) == EVENTS

    lake = tmp_path / "lake"
    settings = sink_settings_for_tests(topic=topics.events, lake_uri=str(lake))
    port = broker.free_port()
    sink = _sink(secure, settings, tmp_path / "sink.log", port)
    try:
        await _until_metric(sink, port, "binlake_sink_changelog_rows_total", EVENTS, 240)
        metrics = await _until_metric(sink, port, "binlake_sink_mirror_rows_total", EVENTS, 120)
        assert listening_addresses(port) == {LOOPBACK_V4}
    finally:
        assert sink.stop() == 0
    _assert_no_secret(secure, "the sink's /metrics", metrics)
    _assert_no_secret(secure, "the sink's output", sink.output())
    driver_log = (tmp_path / "spark-driver.log").read_text(errors="replace")
    _assert_no_secret(secure, "Spark's driver log", driver_log)
    # The driver logged the Kafka clients' configuration: the test looked where a secret would show.
    assert "sasl.jaas.config = [hidden]" in driver_log

    truth = Workload(seed=SEED, tables=2)
    for _ in truth.run(EVENTS):
        pass
    reader = LakeReader(SinkSettings(lake_uri=str(lake)))
    try:
        assert sum(stats.events for stats in reader.changelog_stats().values()) == EVENTS
        mirrors = {entry.source_table: entry.mirror for entry in reader.source_tables()}
        for table, rows in truth.state.items():
            name = f"shop.{table}"
            check = check_table(reader, mirrors.get(name), name, {int(k): dict(row) for k, row in rows.items()}, [])
            assert check.equal, (name, check.differences)
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("wrong password", ["refused SASL authentication", "BINLAKE_KAFKA_SASL_PASSWORD"]),
        ("untrusted broker", ["is not trusted", "BINLAKE_KAFKA_SSL_CAFILE"]),
    ],
)
async def test_refused_access_stops_the_services_fast(
    secure: SecureBroker, tmp_path: Path, case: str, expected: list[str]
) -> None:
    wrong = (
        {"BINLAKE_KAFKA_SASL_PASSWORD": WRONG_PASSWORD}
        if case == "wrong password"
        else {"BINLAKE_KAFKA_SSL_CAFILE": str(secure.tls.other_ca)}
    )
    topics = Topics.fresh("refused")  # never created: the services must stop before they would matter
    settings = sink_settings_for_tests(topic=topics.events, lake_uri=str(tmp_path / "lake"))
    services = [
        _normalizer(secure, topics, tmp_path / "normalizer.log", broker.free_port(), **wrong),
        _sink(secure, settings, tmp_path / "sink.log", broker.free_port(), **wrong),
        Service(["dlq", "replay", "--dlq-topic", topics.dlq], clean_env(**secure.env(**wrong)), tmp_path / "dlq.log"),
    ]
    try:
        for service in services:
            code, took = await asyncio.to_thread(service.wait, 120)
            output = service.output()
            assert code == 2, output[-3000:]
            assert took < FAIL_FAST_S, (service.command[0], took)
            error = [line for line in output.splitlines() if line.startswith(f"binlake {service.command[0]}: ")]
            assert len(error) == 1, output[-3000:]
            assert all(part in error[0] for part in expected), error[0]
            _assert_no_secret(secure, f"the {service.command[0]}'s output", output)
        assert not (tmp_path / "lake").exists()  # the sink stopped before Spark started
    finally:
        for service in services:
            service.kill()


async def test_config_and_configuration_errors_hold_no_secret(secure: SecureBroker, tmp_path: Path) -> None:
    env = clean_env(**secure.env(BINLAKE_KAFKA_SASL_PASSWORD=PASSWORD), BINLAKE_FORMAT="canal-json")
    printed = []
    for what in ("example", "markdown"):
        service = Service(["config", what], env, tmp_path / f"config-{what}.txt")
        assert (await asyncio.to_thread(service.wait, 60))[0] == 0
        printed.append(service.output())
    # A configuration error (no user name for SASL) names the setting, never the password beside it.
    env.pop("BINLAKE_KAFKA_SASL_USERNAME")
    service = Service(["normalizer", "--input-topics", "t"], env, tmp_path / "invalid.txt")
    assert (await asyncio.to_thread(service.wait, 60))[0] == 2
    assert "BINLAKE_KAFKA_SASL_USERNAME" in service.output()
    for text in [*printed, service.output()]:
        _assert_no_secret(secure, "binlake config or a configuration error", text)
