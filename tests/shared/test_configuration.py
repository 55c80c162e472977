"""Settings: environment parsing, validation messages, and the generated reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from binlake.shared.cli.config import markdown
from binlake.shared.config.settings import KafkaSettings, NormalizerSettings

pytestmark = pytest.mark.unit


def test_configuration_doc_is_current() -> None:
    committed = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text("utf-8")
    assert committed == markdown(), "regenerate: binlake config markdown > docs/configuration.md"


def test_every_setting_is_described() -> None:
    from binlake.spark_sink.settings import SinkSettings

    for model in (KafkaSettings, NormalizerSettings, SinkSettings):
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"


def test_lists_and_maps_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_FORMAT", "debezium-smt")
    monkeypatch.setenv("BINLAKE_INPUT_TOPICS", "a, b,c")
    monkeypatch.setenv("BINLAKE_EXCLUDE_TABLES", '["shop.tmp_*"]')
    monkeypatch.setenv("BINLAKE_TOPIC_TABLES", '{"a": "shop.orders"}')
    settings = NormalizerSettings()
    assert settings.input_topics == ["a", "b", "c"]
    assert settings.exclude_tables == ["shop.tmp_*"]
    assert settings.topic_tables == {"a": "shop.orders"}


def test_sink_table_names_and_partitions_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.spark_sink.settings import SinkSettings

    monkeypatch.setenv("BINLAKE_SINK_TABLE_NAMES", '{"shop.orders": "orders", "Shop.*": "shop_{table}", "x.*": "a/b"}')
    monkeypatch.setenv("BINLAKE_SINK_PARTITION_BY", '{"shop.*": ["region", "day"]}')
    settings = SinkSettings(lake_uri="file:///lake")
    assert settings.mirror_uri("shop.orders") == "file:///lake/mirror/orders"  # the exact name wins over globs
    assert settings.history_uri("shop.items") == "file:///lake/history/shop_items"  # globs match in any case
    assert settings.legacy_tombstones_uri("x.y") == "file:///lake/tombstones/a_b"  # names are made path-safe
    assert settings.tombstones_uri() == "file:///lake/deleted_keys"
    assert settings.mirror_uri("other.t") == "file:///lake/mirror/other.t"
    assert settings.mirror_partition_by("shop.orders") == ["region", "day"]
    assert settings.mirror_partition_by("other.t") == []


def test_sink_queries_split_needs_a_mirror_query(monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.spark_sink.settings import SinkSettings

    monkeypatch.setenv("BINLAKE_SINK_QUERIES", "mirrors")
    assert SinkSettings().queries == "mirrors"
    monkeypatch.setenv("BINLAKE_SINK_MIRRORS", "inline")
    with pytest.raises(ValidationError, match="BINLAKE_SINK_QUERIES=mirrors needs BINLAKE_SINK_MIRRORS=follow"):
        SinkSettings()
    monkeypatch.setenv("BINLAKE_SINK_QUERIES", "changelog")  # inline: the changelog query is the whole sink
    assert SinkSettings().queries == "changelog"


def test_sasl_needs_credentials_and_hides_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    with pytest.raises(ValidationError, match="BINLAKE_KAFKA_SASL_USERNAME"):
        KafkaSettings()
    monkeypatch.setenv("BINLAKE_KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("BINLAKE_KAFKA_SASL_PASSWORD", "hunter2")
    settings = KafkaSettings()
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings.model_dump())
    assert settings.sasl_password is not None and settings.sasl_password.get_secret_value() == "hunter2"


def test_unknown_zone_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_FORMAT", "canal-json")
    monkeypatch.setenv("BINLAKE_INPUT_TOPICS", "a")
    monkeypatch.setenv("BINLAKE_SOURCE_TIMEZONE", "Mars/Base")
    with pytest.raises(ValidationError, match="unknown time zone"):
        NormalizerSettings()


# Variables the docs may name that are not settings: build switches and the compose file's own.
_NOT_SETTINGS = {"BINLAKE_COMPILE", "BINLAKE_NATIVE_CACHE", "BINLAKE_TESTCONTAINERS", "BINLAKE_VENDOR_TOPICS"}
_REMOVED = {"BINLAKE_SINK_CHANGELOG_WRITER", "BINLAKE_SINK_MIRROR_WRITER"}
"""Settings of earlier releases the docs name as gone (the writers without Spark, issue #46)."""


def test_docs_name_only_real_variables() -> None:
    """Every ``BINLAKE_*`` variable the README and docs name is a setting (or a known build switch)."""
    import re

    root = Path(__file__).parents[2]
    settings = set(re.findall(r"BINLAKE_[A-Z0-9_]*[A-Z0-9]", markdown()))
    assert not settings & _REMOVED
    known = settings | _NOT_SETTINGS | _REMOVED
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        # A name ending in "_" is a prefix (``BINLAKE_SINK_*``), not a variable.
        named = {n for n in re.findall(r"BINLAKE_[A-Z0-9_]*", page.read_text("utf-8")) if not n.endswith("_")}
        unknown = sorted(named - known)
        assert not unknown, f"{page.name} names variables no setting has: {unknown}"
