"""The sink's total order and its app ids, on real Kafka + Spark + Delta (the reliability issue's sink holes).

Every event below has the *same* ``order_key`` (as Canal gives a batch's flat
messages one ``id`` and ``es`` has one-second resolution): only their origin
(the vendor message's coordinates, in source order) tells them apart. The sink
must apply them in that order inside a batch and across batches, make one
history version per change, apply a change delivered twice once, append a
key-less table's rows once per origin, and refuse (or, told to, adopt) a lake
whose checkpoint was deleted instead of skipping the new run's batches.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import job
from binlake.spark_sink.checkpoint.app_ids import ID_FILE, LakeOwnershipError
from binlake.spark_sink.events.order import sequence_of
from binlake.spark_sink.lake import facts as lake_facts
from binlake.spark_sink.lake import verify
from binlake.spark_sink.layout import PROP_TRUNCATED
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

TIED = f"{1_700_000_000_000:020d}.{7:020d}.{0:06d}"
KEYED = [Column("id", "int", "int32"), Column("a", "int", "int32")]
LOG = [Column("msg", "text", "string")]


def _event(
    op: str,
    table: str,
    offset: int,
    *,
    after: Image | None = None,
    before: Image | None = None,
    columns: list[Column] | None = None,
    key: tuple[str, ...] = ("id",),
) -> ChangeEvent:
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # the test's ops are valid Op literals
        source=Source("test", "mysql", "o", None, table),
        order_key=TIED,
        ts_ms=1_700_000_000_000,
        ingest_ts_ms=None,
        primary_key=list(key),
        columns=Columns(KEYED if columns is None else columns),
        before=before,
        after=after,
        changed_columns=None,
        ddl=None,
        origin=Origin("canal.in", 0, offset, 0),
    )


ROUND_1 = [
    _event("INSERT", "tied", 1, after={"id": 1, "a": 1}),
    _event("UPDATE", "tied", 2, before={"id": 1, "a": 1}, after={"id": 1, "a": 2}),  # tie inside a batch
    _event("INSERT", "tied", 3, after={"id": 2, "a": 1}),
    _event("DELETE", "tied", 4, before={"id": 2, "a": 1}),
    _event("INSERT", "tied", 5, after={"id": 2, "a": 5}),  # re-inserted at the same order_key
    _event("INSERT", "tied", 6, after={"id": 3, "a": 1}),
    _event("INSERT", "trunc", 7, after={"id": 1, "a": 1}),
    _event("INSERT", "log", 20, after={"msg": "one"}, columns=LOG, key=()),
    _event("INSERT", "log", 21, after={"msg": "two"}, columns=LOG, key=()),
]
ROUND_2 = [
    _event("UPDATE", "tied", 8, before={"id": 1, "a": 2}, after={"id": 1, "a": 3}),  # tie across batches
    _event("DELETE", "tied", 9, before={"id": 3, "a": 1}),
    _event("INSERT", "tied", 10, after={"id": 3, "a": 9}),  # above the tombstone at the same order_key
    ROUND_1[1],  # a change delivered twice: applied once, one history version
    _event("TRUNCATE", "trunc", 11, columns=[], key=()),
    _event("INSERT", "trunc", 12, after={"id": 2, "a": 2}),  # after the TRUNCATE at the same order_key
    ROUND_1[7],  # a key-less row delivered twice: appended once
]
ROUND_3 = [_event("UPDATE", "tied", 13, before={"id": 1, "a": 3}, after={"id": 1, "a": 4})]


async def _round(bootstrap: str, spark: SparkSession, settings: SinkSettings, events: list[ChangeEvent]) -> None:
    await kafka_tools.produce(bootstrap, settings.topic, [(None, avro.encode(e)) for e in events])
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(bootstrap))


def _rows(spark: SparkSession, uri: str, *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.read.format("delta").load(uri).select(*columns).orderBy(*columns).collect()]


async def test_tied_order_keys_apply_in_source_order(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    topic = f"order-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    lake = tmp_path / "lake"
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake.as_uri(), history_tables=["o.tied"])
    tied, trunc, log = (settings.mirror_uri(f"o.{t}") for t in ("tied", "trunc", "log"))

    await _round(kafka_bootstrap, spark, settings, ROUND_1)
    assert _rows(spark, tied, "id", "a") == [(1, 2), (2, 5), (3, 1)]

    await _round(kafka_bootstrap, spark, settings, ROUND_2)
    assert _rows(spark, tied, "id", "a") == [(1, 3), (2, 5), (3, 9)]
    assert _rows(spark, trunc, "id", "a") == [(2, 2)]
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{trunc}`").collect()}
    assert props[PROP_TRUNCATED] == sequence_of(TIED, "canal.in", 0, 11, 0)
    assert _rows(spark, log, "msg") == [("one",), ("two",)]
    history = _rows(spark, settings.history_uri("o.tied"), "id", "a", "_binlake_op", "_binlake_order_key")
    assert [(i, a, op) for i, a, op, _ in history if i == 1] == [(1, 1, "INSERT"), (1, 2, "UPDATE"), (1, 3, "UPDATE")]

    # The checkpoints are deleted (an operator's reset), and the source goes on. Under a reused app id Delta
    # would skip the new run's batch 0 as already committed; the sink refuses instead, and says what to do.
    shutil.rmtree(lake / "_checkpoints")
    with pytest.raises(LakeOwnershipError, match="BINLAKE_SINK_ADOPT_LAKE") as refused:
        await _round(kafka_bootstrap, spark, settings, ROUND_3)
    assert "does not know" in str(refused.value)
    assert not (lake / "_checkpoints" / "sink" / ID_FILE).exists()  # a refused start leaves nothing behind

    adopting = settings.model_copy(update={"adopt_lake": True})
    await asyncio.to_thread(job.run, spark, adopting, kafka_settings(kafka_bootstrap))
    assert _rows(spark, tied, "id", "a") == [
        (1, 4),
        (2, 5),
        (3, 9),
    ]  # the new change landed; the replay changed nothing
    assert _rows(spark, log, "msg") == [("one",), ("two",)]  # the key-less table was not doubled
    changelog = spark.read.format("delta").load(settings.changelog_uri())
    assert changelog.count() == len(ROUND_1) + len(ROUND_2) + len(ROUND_3)
    # Adopted: a plain restart now starts without the flag.
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))

    # `binlake lake verify` agrees with everything but the two changes published twice, which it names.
    facts = await asyncio.to_thread(lake_facts.gather, spark, settings, kafka_settings(kafka_bootstrap))
    verdict = verify.compare(facts)
    assert {(d.table, d.found) for d in verdict.differences} == {("o.tied", 1), ("o.log", 1)}
    assert all("duplicated by origin" in d.what for d in verdict.differences)


async def test_app_id_from_configuration_is_not_reused(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    """A configured app id that already committed to the lake is refused under a new checkpoint, even adopting."""
    topic = f"appid-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    lake = tmp_path / "lake"
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake.as_uri(), app_id="fixed")
    await _round(kafka_bootstrap, spark, settings, ROUND_1[:2])
    shutil.rmtree(lake / "_checkpoints")
    with pytest.raises(LakeOwnershipError, match="Unset BINLAKE_SINK_APP_ID"):
        await _round(kafka_bootstrap, spark, settings.model_copy(update={"adopt_lake": True}), ROUND_3)
