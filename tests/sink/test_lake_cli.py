"""``binlake lake show`` and ``binlake lake verify`` on a lake the real sink wrote from a real topic.

Generated traffic -> vendor topic -> normalizer -> unified topic (plus garbage
records and a table's TRUNCATE) -> ``spark_sink.job.run`` (available-now) -> the lake. ``verify`` must
find the lake equal to the topic (and its expected live keys equal to the
generator's ground truth), ``show`` must list every table with its real row
count; after tampering with the lake through Delta (a mirror row deleted, a
changelog row duplicated), ``verify`` must report exactly those two
differences and exit 1. The commands run in-process on the test session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.config.settings import KafkaSettings, kafka_settings
from binlake.shared.generate.workload import Workload
from binlake.spark_sink import job
from binlake.spark_sink.delta import ref
from binlake.spark_sink.events.order import order_key_of, sequence_of
from binlake.spark_sink.lake import cli, show
from binlake.spark_sink.lake import facts as lake_facts
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.lake.tables import LakeError
from binlake.spark_sink.lake.text import to_json
from binlake.spark_sink.lake.verify import Difference, render_json, render_text
from binlake.spark_sink.layout import ORDER_KEY
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.pipeline import Topics, normalizer_settings, run_normalizer_until_caught_up, send_workload
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

SEED = 23
GARBAGE = [b'{"not": "avro"}', avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff"]


async def _unified_topic(bootstrap: str, format_id: str, events: int, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """Generator -> normalizer -> a fresh unified topic (3 partitions); return it and the truth tables."""
    topics = Topics.fresh(f"lake-{format_id}")
    await kafka_tools.create_topics(bootstrap, {topics.vendor: 3, topics.events: 3, topics.dlq: 1})
    await send_workload(bootstrap, format_id, topics, events=events, seed=SEED, zone_name="UTC")
    await run_normalizer_until_caught_up(bootstrap, normalizer_settings(format_id, topics, tmp_path, "UTC"), 3)
    truth = Workload(seed=SEED, tables=3)
    for _ in truth.run(events):
        pass
    tables: dict[str, Any] = truth.truth()["tables"]
    return topics.events, tables


async def _truncate(bootstrap: str, topic: str, table: str) -> str:
    """Produce a TRUNCATE of ``table`` after its last event (as a normalizer would); return its sequence."""
    values = [r.value for r in await kafka_tools.read_all(bootstrap, topic)]
    events = [avro.decode(value) for value in values if value is not None and value not in GARBAGE]
    last = max((e for e in events if f"{e.source.database}.{e.source.table}" == table), key=lambda e: e.order_key)
    truncate = dataclasses.replace(
        last,
        op="TRUNCATE",
        order_key=last.order_key[:-6] + "999999",  # same position, a row index no row event of it uses
        primary_key=[],
        columns=[],
        before=None,
        after=None,
        changed_columns=None,
        origin=dataclasses.replace(last.origin, row=999_999),  # a change of its own: its own origin
    )
    await kafka_tools.produce(bootstrap, topic, [(table.encode(), avro.encode(truncate))])
    origin = truncate.origin
    return sequence_of(truncate.order_key, origin.topic, origin.partition, origin.offset, origin.row)


def _sink(spark: SparkSession, settings: SinkSettings, bootstrap: str) -> None:
    job.run(spark, settings, kafka_settings(bootstrap))


def _verify(
    spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, *, as_json: bool = False
) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.verify(spark, settings, kafka, as_json=as_json, out=out)
    return code, out.getvalue()


def _show(settings: SinkSettings, table: str | None = None, *, as_json: bool = False) -> str:
    out = io.StringIO()
    assert cli.show(settings, table, as_json=as_json, out=out) == 0
    return out.getvalue()


def _listing(settings: SinkSettings) -> show.Listing:
    """``binlake lake show``'s numbers, read natively (no Spark)."""
    lake = LakeReader(settings)
    try:
        return show.listing(lake)
    finally:
        lake.close()


def _detail(settings: SinkSettings, table: str) -> show.Detail:
    lake = LakeReader(settings)
    try:
        return show.detail(lake, table)
    finally:
        lake.close()


async def test_keyed_lake_matches_then_tampering_is_reported(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    generated = 240
    topic, truth = await _unified_topic(kafka_bootstrap, "canal-json", generated, tmp_path)
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, message) for message in GARBAGE])
    # A TRUNCATE of shop.t02 after its rows (as a normalizer would publish it): the lake must match with it.
    truncated_at = await _truncate(kafka_bootstrap, topic, "shop.t02")
    events = generated + 1
    live = {name: 0 if name == "shop.t02" else len(rows) for name, rows in truth.items()}
    lake = (tmp_path / "lake").as_uri()
    # A history table for one source table, where this sink version writes them (the setting is ignored otherwise).
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake, history_tables=["shop.t01"])
    await asyncio.to_thread(_sink, spark, settings, kafka_bootstrap)
    kafka = kafka_settings(kafka_bootstrap)

    # verify: the lake matches the topic, and the topic's fold agrees with the generator's ground truth.
    verdict, facts = await asyncio.to_thread(cli.check, spark, settings, kafka)
    assert (verdict.exit_code(), render_text(verdict)) == (0, f"lake matches the topic: 3 tables, {events} events")
    assert facts.undecodable == facts.quarantine_records == len(GARBAGE)
    document = json.loads(to_json(render_json(verdict, facts)))
    assert (document["matches"], document["events"], document["differences"]) == (True, events, [])
    by_table = {t.table: t for t in facts.tables}
    assert sorted(by_table) == sorted(truth)
    for name in truth:
        table = by_table[name]
        assert table.expected is not None and table.mirror is not None
        assert table.expected.live_keys == table.mirror.rows == live[name], name
        assert table.mirror.key == ("id",)
        assert table.changelog.rows == table.changelog.records == table.topic.events
    assert sum(t.topic.events for t in facts.tables) == events
    t02 = by_table["shop.t02"]
    assert t02.mirror is not None and t02.mirror.truncated_at == truncated_at
    # This lake is local, so verify read the mirrors natively: Spark reads the same facts.
    assert await asyncio.to_thread(lake_facts.mirrors_spark, spark, settings) == {
        t.table: t.mirror for t in facts.tables if t.mirror is not None
    }
    assert (t02.topic.truncates, t02.topic.last_truncate) == (1, truncated_at)

    # show: every table with its real row count.
    listing = await asyncio.to_thread(_listing, settings)
    counts = {(t.kind, t.name): t.rows for t in listing.tables}
    assert counts[("changelog", "changelog")] == events
    assert counts[("quarantine", "quarantine")] == len(GARBAGE)
    for name in truth:
        assert counts[("mirror", name)] == live[name]
    assert {s.source_table: s.events for s in listing.sources} == {n: by_table[n].topic.events for n in truth}
    mirror_line = next(t for t in listing.tables if t.kind == "mirror")
    assert mirror_line.version >= 0 and mirror_line.last_commit is not None
    assert mirror_line.freshness_s is not None and mirror_line.freshness_s > 0  # the generator's clock is 2025
    text = show.render(listing, as_json=False)
    assert text.splitlines()[2].split() == ["TABLE", "KIND", "VERSION", "ROWS", "LAST", "COMMIT", "FRESHNESS"]
    assert any(line.split()[:2] == ["shop.t00", "mirror"] for line in text.splitlines())
    document = json.loads(await asyncio.to_thread(_show, settings, as_json=True))
    assert {(t["kind"], t["name"]) for t in document["tables"]} >= {("mirror", n) for n in truth}
    assert counts[("history", "shop.t01")] >= len(truth["shop.t01"])
    assert by_table["shop.t01"].mirror is not None
    assert by_table["shop.t01"].mirror.history_current == len(truth["shop.t01"])

    # show TABLE: the detail of one source table.
    detail = await asyncio.to_thread(_detail, settings, "shop.t00")
    t00 = by_table["shop.t00"]
    assert detail.key == ["id"] and detail.mirror is not None and detail.mirror.rows == len(truth["shop.t00"])
    assert detail.changelog is not None and sum(detail.changelog.ops.values()) == t00.topic.events
    assert set(detail.changelog.ops) <= {"INSERT", "UPDATE", "DELETE"}
    assert t00.topic.last_order_key is not None
    assert detail.changelog.last_order_key == order_key_of(t00.topic.last_order_key)
    assert {c.name: c.role for c in detail.columns}["id"] == "key"
    assert {c.name: c.role for c in detail.columns}[ORDER_KEY] == "hidden"
    text = show.render(detail, as_json=False)
    assert text.splitlines()[0] == "source table shop.t00"
    assert f"  rows: {len(truth['shop.t00'])}" in text.splitlines()
    with pytest.raises(LakeError, match=r"shop\.nope is neither"):
        await asyncio.to_thread(_detail, settings, "shop.nope")

    # Tamper: delete the mirror row holding the oldest applied event, duplicate one changelog row.
    mirror_uri = settings.mirror_uri("shop.t00")
    mirror = spark.read.format("delta").load(mirror_uri)
    oldest = mirror.orderBy(ORDER_KEY).first()
    assert oldest is not None
    spark.sql(f"DELETE FROM {ref(mirror_uri)} WHERE id = {oldest['id']}")
    changelog = spark.read.format("delta").load(settings.changelog_uri())
    one = changelog.where(F.col("source_table") == "shop.t02").orderBy("_kafka_partition", "_kafka_offset").limit(1)
    one.write.format("delta").mode("append").save(settings.changelog_uri())

    # verify (the command function, as `binlake lake verify` runs it): exactly those two differences, exit 1.
    code, text = await asyncio.to_thread(_verify, spark, settings, kafka)
    tampered = await asyncio.to_thread(lake_facts.mirrors_spark, spark, settings)
    assert tampered == await asyncio.to_thread(lake_facts.mirrors_native, settings)  # a DELETE's rows gone
    expected = [
        Difference(
            "shop.t00", "mirror rows (live keys in the topic)", len(truth["shop.t00"]), len(truth["shop.t00"]) - 1
        ),
        Difference("shop.t02", "duplicate changelog rows (same Kafka record)", 0, 1),
    ]
    assert code == 1
    assert text.splitlines() == [
        *(d.text() for d in expected),
        f"lake differs from topic {topic}: 2 differences in 2 tables (3 tables, {events} events compared)",
    ]

    # A lake URI with nothing under it is a usage error (exit 2 through `binlake`), not a difference...
    empty = settings.model_copy(update={"lake_uri": (tmp_path / "nowhere").as_uri()})
    with pytest.raises(LakeError, match="no lake at"):
        await asyncio.to_thread(_verify, spark, empty, kafka)
    # So is a topic the broker does not have (found before Spark reads anything).
    wrong = settings.model_copy(update={"topic": kafka_tools.unique("no-such-topic")})
    with pytest.raises(LakeError, match="has no topic"):
        await asyncio.to_thread(_verify, spark, wrong, kafka)


async def test_keyless_lake(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    """CKafka messages name no key and none is configured: append-only mirrors, one row per row event."""
    generated = 90
    topic, truth = await _unified_topic(kafka_bootstrap, "ckafka-v1", generated, tmp_path)
    # A TRUNCATE of shop.t02 after its rows empties its append-only mirror.
    truncated_at = await _truncate(kafka_bootstrap, topic, "shop.t02")
    lake = (tmp_path / "lake").as_uri()
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake)
    await asyncio.to_thread(_sink, spark, settings, kafka_bootstrap)
    kafka = kafka_settings(kafka_bootstrap)

    verdict, facts = await asyncio.to_thread(cli.check, spark, settings, kafka)
    assert verdict.matches, verdict.differences
    assert (verdict.tables, verdict.events) == (len(truth), generated + 1)
    for table in facts.tables:
        assert table.mirror is not None and table.mirror.key == () and table.expected is None
        if table.table == "shop.t02":
            assert (table.mirror.rows, table.mirror.truncated_at) == (0, truncated_at)
            assert (table.topic.row_events_after_truncate, table.topic.last_truncate) == (0, truncated_at)
        else:
            assert table.mirror.rows == table.topic.row_events == table.topic.events
    t02_rows = next(t.topic.row_events for t in facts.tables if t.table == "shop.t02")
    assert t02_rows > 0
    listing = await asyncio.to_thread(_listing, settings)
    assert sum(t.rows for t in listing.tables if t.kind == "mirror") == generated - t02_rows
    assert not any(t.kind in ("tombstones", "history") for t in listing.tables)
    detail = await asyncio.to_thread(_detail, settings, "shop.t01")
    assert detail.key == [] and "none (append-only" in show.detail_text(detail)

    # Tamper: drop the newest appended row of shop.t01: one row short, and its newest order_key is older.
    mirror_uri = settings.mirror_uri("shop.t01")
    newest = spark.read.format("delta").load(mirror_uri).agg(F.max(ORDER_KEY)).first()
    assert newest is not None
    spark.sql(f"DELETE FROM {ref(mirror_uri)} WHERE {ORDER_KEY} = '{newest[0]}'")
    verdict, facts = await asyncio.to_thread(cli.check, spark, settings, kafka)
    t01 = next(t for t in facts.tables if t.table == "shop.t01")
    assert t01.mirror is not None and t01.mirror.last_order_key is not None and t01.mirror.last_order_key < newest[0]
    assert [(d.table, d.what, d.expected, d.found) for d in verdict.differences] == [
        ("shop.t01", "mirror rows (append-only: one per row event)", t01.topic.row_events, t01.topic.row_events - 1),
        ("shop.t01", "newest _binlake_order_key in the mirror", newest[0], t01.mirror.last_order_key),
    ]
