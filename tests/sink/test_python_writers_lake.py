"""A lake the sink's writers without Spark wrote (binlake before issue #46) keeps working under the Spark sink.

``fixtures/python_writers_lake.tar.gz`` (``fixtures/README.md``) is such a lake: its changelog and
quarantine written by the changelog writer without Spark (offsets kept in per-partition Delta
transactions, its last batch killed between its quarantine commit and its changelog commit), its mirrors
and tombstones by the mirror writer without Spark (its last batch killed after one table's MERGE, logged
in the mirror checkpoint but not committed), with the topic's records. The test puts the topic back as it
was (the same records at the same offsets), adds the records that came after, and runs the Spark sink on
the lake, changelog query then mirror query, on a broker and Spark of its own: the changelog query starts
at the writer's offsets (a new checkpoint), the mirror query continues the writer's checkpoint, and every
record lands once, every mirror equals the source table, and ``binlake lake verify`` finds the lake equal
to the topic. A second run starts from the checkpoints it made and changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import UnknownTopicOrPartitionError
from pyspark.sql import SparkSession

from binlake.shared.cli.demo.truth_check import check_table
from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.values import Image
from binlake.spark_sink import job
from binlake.spark_sink.checkpoint import app_ids, offset_log
from binlake.spark_sink.lake import cli as lake_cli
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.settings import SinkSettings
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

FIXTURE = Path(__file__).parent / "fixtures" / "python_writers_lake.tar.gz"
WRITER = "binlake-writer"
"""The changelog writer's app id (``BINLAKE_SINK_APP_ID`` was not set)."""


@dataclass(frozen=True, slots=True)
class Record:
    part: int
    """1: produced while the writers ran; 2: after them."""
    partition: int
    offset: int
    key: bytes | None
    value: bytes

    @property
    def event(self) -> bool:
        try:
            avro.decode(self.value)
        except avro.DecodeError:
            return False
        return True


def _unpack(tmp_path: Path) -> tuple[Path, dict[str, Any], list[Record]]:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    lake = tmp_path / "lake"
    fixture = lake / "_fixture"
    meta = json.loads((fixture / "topic.json").read_text())
    records = []
    for line in (fixture / "records.jsonl").read_text().splitlines():
        row = json.loads(line)
        key = None if row["key"] is None else base64.b64decode(row["key"])
        records.append(Record(row["part"], row["partition"], row["offset"], key, base64.b64decode(row["value"])))
    return lake, meta, records


async def _topic_as_it_was(bootstrap: str, topic: str, partitions: int, records: list[Record]) -> None:
    """The fixture's topic (its name is in the lake's transactions), every record at its offset."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        try:
            await admin.delete_topics([topic])  # a broker that ran this test before
            await asyncio.sleep(1)
        except UnknownTopicOrPartitionError:
            pass
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()
    await asyncio.sleep(0.5)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    await producer.start()
    try:
        for record in records:  # one at a time: each lands at the offset it had
            meta = await producer.send_and_wait(topic, record.value, key=record.key, partition=record.partition)
            assert meta.offset == record.offset, (record.partition, record.offset, meta.offset)
    finally:
        await producer.stop()


def _truth(records: list[Record]) -> dict[str, dict[int, Image]]:
    """Each source table's rows after every event of ``records`` (a key's events share a partition: folded
    in offset order)."""
    tables: dict[str, dict[int, Image]] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        if not record.event:
            continue
        event = avro.decode(record.value)
        rows = tables.setdefault(f"{event.source.database}.{event.source.table}", {})
        before = None if event.before is None else int(str(event.before["id"]))
        after = None if event.after is None else int(str(event.after["id"]))
        if before is not None and before != after:
            rows.pop(before, None)
        if event.op != "DELETE" and event.after is not None and after is not None:
            rows[after] = event.after
    return tables


def _landed(spark: SparkSession, uri: str) -> Counter[tuple[int, int]]:
    """How often the table holds each Kafka record (partition, offset)."""
    rows = spark.read.format("delta").load(uri).select("_kafka_partition", "_kafka_offset").collect()
    return Counter((int(r[0]), int(r[1])) for r in rows)


def _mirror_differences(settings: SinkSettings, truth: dict[str, dict[int, Image]]) -> list[str]:
    reader = LakeReader(settings)
    try:
        entries = {entry.source_table: entry for entry in reader.source_tables()}
        found: list[str] = []
        for table, rows in sorted(truth.items()):
            entry = entries.get(table)
            check = check_table(reader, None if entry is None else entry.mirror, table, rows, [])
            found += [f"{table}: {d}" for d in check.differences]
        return found
    finally:
        reader.close()


async def test_the_spark_sink_continues_a_lake_the_writers_without_spark_wrote(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake, meta, records = _unpack(tmp_path)
    topic = meta["topic"]
    settings = sink_settings_for_tests(topic=topic, lake_uri=str(lake))
    kafka = kafka_settings(kafka_bootstrap)
    # What the writers left: the changelog's offsets per partition (the writer's transactions), the mirror
    # checkpoint's last committed batch and the one logged after it.
    writer_offsets = {
        int(app_id.rsplit("/", 1)[1]): version
        for app_id, version in json.loads((lake / "_fixture" / "transactions.json").read_text()).items()
    }
    assert writer_offsets and not (lake / "_checkpoints" / "sink").exists()
    mirror_log = lake / "_checkpoints" / "mirrors"
    assert sorted(p.name for p in (mirror_log / "commits").iterdir()) == ["0"]
    assert sorted(p.name for p in (mirror_log / "offsets").iterdir()) == ["0", "1"]
    truth = _truth(records)
    assert {t: sorted(rows) for t, rows in truth.items()} == meta["truth_keys"]

    await _topic_as_it_was(kafka_bootstrap, topic, meta["partitions"], records)
    with caplog.at_level("WARNING", logger="binlake.sink"):
        await asyncio.to_thread(job.run, spark, settings, kafka)

    # The changelog query started where the writer stopped (a partition it never wrote: the earliest).
    initial = offset_log.initial_kafka_offsets((lake / "_checkpoints" / "sink" / "sources" / "0" / "0").read_text())
    assert initial == {(topic, p): writer_offsets.get(p, 0) for p in range(meta["partitions"])}
    logged = caplog.text
    assert "changelog writer without Spark" in logged and "mirror writer without Spark" in logged
    ident = json.loads((lake / "_checkpoints" / "sink" / app_ids.ID_FILE).read_text())
    assert {a for a in ident["adopted"] if a.startswith(f"{WRITER}/{topic}/")} == set(ident["adopted"])
    mirror_ident = json.loads((mirror_log / app_ids.ID_FILE).read_text())
    assert mirror_ident["app_id"] == app_ids.MIRROR_WRITER_ID  # the writer's batches, continued
    assert "1" in {p.name for p in (mirror_log / "commits").iterdir()}  # its cut batch, run again

    events = {(r.partition, r.offset) for r in records if r.event}
    rejects = {(r.partition, r.offset) for r in records if not r.event}
    changelog, quarantine = _landed(spark, settings.changelog_uri()), _landed(spark, settings.quarantine_uri())
    assert set(changelog) == events and set(changelog.values()) == {1}  # nothing lost, nothing twice
    assert set(quarantine) == rejects and set(quarantine.values()) == {1}
    assert _mirror_differences(settings, truth) == []
    verdict, _ = await asyncio.to_thread(lake_cli.check, spark, settings, kafka)
    assert verdict.matches, verdict.differences
    assert verdict.events == len(events)

    # A second start: its checkpoints know every app id of the lake; nothing is left to write.
    await asyncio.to_thread(job.run, spark, settings, kafka)
    assert _landed(spark, settings.changelog_uri()) == changelog
    assert _landed(spark, settings.quarantine_uri()) == quarantine
    assert _mirror_differences(settings, truth) == []
