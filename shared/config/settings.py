"""Service configuration: environment variables with the ``BINLAKE_`` prefix.

Every setting has a description; ``binlake config example`` prints them all as
an example env file, and docs/configuration.md is generated from the same
models. Secrets are ``SecretStr``: they never appear in logs, reprs or errors.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from binlake.shared.config.lists import comma_list
from binlake.shared.errors import ConfigError
from binlake.shared.parsing.context import zone

S = TypeVar("S", bound=BaseSettings)
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaSettings(BaseSettings):
    """How to reach the Kafka cluster (shared by every binlake service)."""

    model_config = SettingsConfigDict(env_prefix="BINLAKE_KAFKA_", extra="ignore")

    bootstrap_servers: str = Field(
        "127.0.0.1:9092", description="Comma-separated host:port list of Kafka brokers to bootstrap from."
    )
    security_protocol: SecurityProtocol = Field("PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.")
    sasl_mechanism: SaslMechanism = Field(
        "SCRAM-SHA-512", description="SASL mechanism for SASL_* protocols: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."
    )
    sasl_username: str | None = Field(None, description="SASL user name (SASL_* protocols).")
    sasl_password: SecretStr | None = Field(None, description="SASL password (SASL_* protocols). Never logged.")
    ssl_cafile: str | None = Field(None, description="PEM file of CA certificates to verify brokers (SSL, SASL_SSL).")
    ssl_certfile: str | None = Field(
        None, description="PEM client certificate for mutual TLS (SSL, SASL_SSL); it may hold the key too."
    )
    ssl_keyfile: str | None = Field(
        None,
        description="PEM private key of the client certificate (unset: the key is in BINLAKE_KAFKA_SSL_CERTFILE); "
        "PKCS#8 for the sink, whose Java client reads no other (docs/operations.md, Kafka over SASL_SSL).",
    )
    ssl_key_password: SecretStr | None = Field(None, description="Password of the client key, if any. Never logged.")
    ssl_check_hostname: bool = Field(True, description="Verify that broker certificates match their host names.")

    @model_validator(mode="after")
    def _sasl_needs_credentials(self) -> KafkaSettings:
        if self.security_protocol.startswith("SASL_") and (not self.sasl_username or self.sasl_password is None):
            raise ValueError(
                "BINLAKE_KAFKA_SECURITY_PROTOCOL is SASL_*: "
                "set BINLAKE_KAFKA_SASL_USERNAME and BINLAKE_KAFKA_SASL_PASSWORD"
            )
        return self


def load(model: type[S], **overrides: Any) -> S:
    """Settings of ``model`` from the environment and ``overrides`` (None = not given).

    A validation failure becomes a ConfigError that names each offending
    variable with the model's own prefix (``BINLAKE_KAFKA_...``, ``BINLAKE_SINK_...``).
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return model(**given)
    except ValidationError as exc:
        prefix = str(model.model_config.get("env_prefix", ""))
        problems = "; ".join(
            (f"{prefix}{'_'.join(str(p) for p in err['loc']).upper()}: " if err["loc"] else "")
            + err["msg"].removeprefix("Value error, ")
            for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None


def kafka_settings(bootstrap_servers: str | None = None) -> KafkaSettings:
    """``KafkaSettings`` from the environment, with the bootstrap servers overridden if given."""
    return load(KafkaSettings, bootstrap_servers=bootstrap_servers)


class TableRule(BaseModel):
    """An include/exclude pattern on ``db.table`` (shell-style ``*`` and ``?``)."""

    pattern: str

    def regex(self) -> re.Pattern[str]:
        from binlake.shared.normalize.tables import pattern_regex

        return pattern_regex(self.pattern)


class NormalizerSettings(BaseSettings):
    """One normalizer service: vendor topics in, canonical events out, exactly once."""

    model_config = SettingsConfigDict(env_prefix="BINLAKE_", extra="ignore")

    format: str = Field(
        ...,
        description="Vendor format id of the input topics (binlake formats lists them), or 'auto'.",
        examples=["canal-json"],
    )
    format_specs: dict[str, str] = Field(
        default_factory=dict,
        description='Formats of your own, kept outside binlake, as JSON: format id -> "module:attribute" of its '
        'FormatSpec, e.g. {"acme-cdc": "acme_cdc.spec:SPEC"} (the module importable by the normalizer); '
        "BINLAKE_FORMAT then names one by its id (docs/development.md, Adding a vendor format).",
    )
    input_topics: Annotated[list[str], NoDecode] = Field(
        ...,
        description='Vendor topics to consume, as a JSON list (["canal.orders","canal.users"]) or comma list.',
        examples=["canal.orders"],
    )
    output_topic: str = Field("binlake.events", description="The unified topic that receives canonical events.")
    dlq_topic: str = Field("binlake.dlq", description="The dead-letter topic for rejected vendor messages.")
    group_id: str = Field(
        "binlake-normalizer", description="Consumer group id; also the prefix of the transactional ids."
    )
    source_timezone: str = Field(
        "UTC", description="IANA zone in which wall-clock TIMESTAMP strings of the sources are read."
    )
    topic_tables: dict[str, str] = Field(
        default_factory=dict,
        description='Topic to "db.table" for formats whose messages name no table (debezium-smt), as JSON.',
    )
    include_tables: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Only events of db.table names matching one of these patterns (*, ?) are published; empty = all.",
    )
    exclude_tables: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Events of db.table names matching one of these patterns are skipped (counted, not published).",
    )
    format_options: dict[str, str] = Field(
        default_factory=dict,
        description='Format options as JSON, e.g. {"bytes_encoding": "base64"}; each format\'s options are in '
        "docs/formats.md, and one it does not read stops the start.",
    )
    avro_schema_file: str | None = Field(None, description="The vendor's Avro schema file (drs-avro).")
    batch_max_messages: int = Field(
        2000,
        ge=1,
        description="At most this many input messages per poll; each partition's share is one transaction.",
    )
    batch_max_ms: int = Field(
        200, ge=1, description="How long a poll waits for input when none is buffered (buffered input returns at once)."
    )
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = Field(
        "lz4",
        description=(
            "Compression of the record batches the normalizer writes (unified topic and dead letters). "
            "Every canonical event repeats its table's column descriptors, which lz4 takes out at little CPU cost."
        ),
    )
    metrics_port: int = Field(9108, ge=0, description="Port of /metrics, /healthz and /readyz (0: pick a free one).")
    metrics_host: str = Field(
        "127.0.0.1",
        description="Address the metrics/health server binds: this host only by default; 0.0.0.0 (every "
        "interface) where Prometheus or probes reach it from elsewhere, as the chart and docker-compose set.",
    )
    log_level: str = Field("INFO", description="Log level: DEBUG, INFO, WARNING, ERROR.")
    session_timeout_ms: int = Field(
        10000,
        ge=1000,
        description="Consumer group session timeout: how long a crashed instance keeps its partitions.",
    )
    retry_backoff_max_s: float = Field(
        30.0,
        gt=0,
        description="Longest pause between retries while the broker is unreachable. The pause doubles from 0.5 s "
        "with each failure and starts again from 0.5 s after a committed batch (or a retry that held that long).",
    )
    stop_timeout_s: float = Field(
        30.0,
        gt=0,
        description="On SIGTERM the normalizer finishes its open batches, stops its producers and leaves the group "
        "within this many seconds, brokers or not (keep it below the pod's terminationGracePeriodSeconds). Past it, "
        "a batch still waiting on the brokers is left open: the transaction coordinator aborts it after "
        "BINLAKE_TRANSACTION_TIMEOUT_MS, and its input is read again from the last commit.",
    )
    dlq_max_value_bytes: int = Field(
        1_000_000,
        ge=1024,
        description="Longest value a dead letter carries: a longer input message is cut to this, and its letter's "
        "headers give the original length and SHA-256 (binlake.value.*). Keep it below the dead-letter topic's "
        "max.message.bytes less room for key and headers; a letter the topic refuses anyway goes without key and "
        "value.",
    )
    metrics_max_label_values: int = Field(
        1000,
        ge=1,
        description="Distinct values a metric label taken from message content (table names, control kinds) has "
        "per metric; further ones are counted under __other__, so input cannot grow the metrics without bound.",
    )
    stall_threshold_s: float = Field(
        120.0,
        gt=0,
        description="An input partition whose fetched input no batch has committed for this long is stalled: "
        "/readyz answers 503 and binlake_partition_stalled is 1 (e.g. a broker outage, a dead-letter topic "
        "that refuses letters).",
    )
    liveness_timeout_s: float = Field(
        60.0,
        gt=0,
        description="How long the consume loop may go without progress (a poll) before the probes say why. Waiting "
        "on the brokers then (a send, an offset commit, a transaction or coordinator call, a back-off after a broker "
        "error), it stays live (/healthz 200) but is not ready (/readyz 503 'waiting on the brokers since T'): a "
        "restart would not bring the brokers back. Otherwise it is wedged: /healthz 503, and the chart's liveness "
        "probe restarts the pod.",
    )
    transaction_timeout_ms: int = Field(
        60000,
        ge=1000,
        description="Transaction timeout of the normalizer's producers: the transaction coordinator aborts a batch "
        "open longer than this and fences its producer (the partition then gets a new one and restarts from its "
        "last commit). At most the brokers' transaction.max.timeout.ms (default 900000).",
    )

    @field_validator("input_topics", "include_tables", "exclude_tables", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("source_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone(value)
        return value
