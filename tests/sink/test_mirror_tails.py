"""Deferred mirror tails (``mirror.tails``): a small table's changes wait in the changelog for a later MERGE.

Against real Kafka, Spark and Delta: a small table is deferred while a big one is MERGEd; the current state
reads the deferred changes at once; a later batch MERGEs the tail once it has grown past the limit; a tail
left by an idle input is MERGEd between batches once it is due; an available-now run leaves none; a batch's
TRUNCATE is never deferred. The decision itself is unit-tested on hand-made facts.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import delta, job
from binlake.spark_sink.mirror import current_state, tails
from binlake.spark_sink.mirror.batch import MirrorReport
from binlake.spark_sink.mirror.batch_facts import BatchFacts, RowCounts
from binlake.spark_sink.mirror.control_events import TableControl
from binlake.spark_sink.mirror.plan import ColumnDesc, Descriptor
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.spark_fixtures import run_sink, sink_settings_for_tests, spark

__all__ = ["spark"]

COLUMNS = [Column("id", "int", "int32"), Column("v", "varchar(8)", "string")]
SMALL, BIG = "t.small", "t.big"


def _facts(
    rows: dict[str, int], *, keyless: frozenset[str] = frozenset(), control: frozenset[str] = frozenset()
) -> BatchFacts:
    columns = (ColumnDesc("id", "int32", None, None),)
    return BatchFacts(
        descriptors={t: [Descriptor(1, columns, () if t in keyless else ("id",))] for t in rows},
        counts={t: RowCounts(n, 0) for t, n in rows.items()},
        control={t: TableControl(truncated_at="x") for t in control},
    )


def _settings(**overrides: Any) -> SinkSettings:
    return SinkSettings.model_validate({"mirror_defer_rows": 10, "mirror_defer_max_s": 60.0, **overrides})


@pytest.mark.unit
def test_a_small_table_waits_and_a_big_one_does_not() -> None:
    decided = tails.decide(_settings(), tails.Tails(4), _facts({"a": 3, "b": 10}), versions=(5, 7), now_s=100.0)
    assert decided.defer == {"a"} and not decided.flush
    assert decided.after == tails.Tails(7, {"a": tails.Tail(5, 3, 100.0)})


@pytest.mark.unit
def test_a_tail_grows_then_is_merged_with_the_batch_that_fills_it() -> None:
    before = tails.Tails(7, {"a": tails.Tail(5, 3, 100.0)})
    grown = tails.decide(_settings(), before, _facts({"a": 4}), versions=(8, 8), now_s=110.0)
    assert grown.defer == {"a"} and grown.after.tables == {"a": tails.Tail(5, 7, 100.0)}
    full = tails.decide(_settings(), grown.after, _facts({"a": 3}), versions=(9, 9), now_s=120.0)
    assert not full.defer and full.flush == {"a": tails.Tail(5, 7, 100.0)} and full.after == tails.Tails(9)


@pytest.mark.unit
def test_an_old_tail_is_merged_by_a_batch_without_its_table() -> None:
    before = tails.Tails(7, {"a": tails.Tail(5, 3, 100.0)})
    young = tails.decide(_settings(), before, _facts({"b": 1}), versions=(8, 8), now_s=159.0)
    assert young.after.tables["a"] == tails.Tail(5, 3, 100.0) and not young.flush
    old = tails.decide(_settings(), before, _facts({"b": 1}), versions=(8, 8), now_s=160.0)
    assert old.flush == {"a": tails.Tail(5, 3, 100.0)} and "a" not in old.after.tables
    assert tails.due(_settings(), before, 160.0) and not tails.due(_settings(), before, 159.0)


@pytest.mark.unit
def test_what_is_never_deferred() -> None:
    before = tails.Tails(7, {"a": tails.Tail(5, 3, 100.0)})
    facts = _facts({"a": 1, "k": 1, "h": 1}, keyless=frozenset({"k"}), control=frozenset({"a"}))
    decided = tails.decide(_settings(history_tables=["h"]), before, facts, versions=(8, 8), now_s=101.0)
    assert not decided.defer and decided.flush == {"a": tails.Tail(5, 3, 100.0)} and not decided.after.tables
    # A batch of part of a version, or with deferral off: every tail is MERGEd, nothing deferred.
    for settings, versions in ((_settings(), None), (_settings(mirror_defer_rows=0), (8, 8))):
        decided = tails.decide(settings, before, _facts({"b": 1}), versions=versions, now_s=101.0)
        assert not decided.defer and decided.flush == before.tables and not decided.after.tables


@pytest.mark.unit
def test_the_state_reads_back() -> None:
    state = tails.Tails(9, {"a": tails.Tail(5, 7, 100.5), "b.c": tails.Tail(9, 1, 101.0)})
    assert tails.Tails.from_json(state.to_json()) == state


def _event(offset: int, table: str, key: int, value: str, op: str = "INSERT") -> ChangeEvent:
    row: Image = {"id": key, "v": value}
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # INSERT or TRUNCATE
        source=Source("test", "mysql", "t", None, table.split(".")[1]),
        order_key=f"{offset:020d}.{0:020d}.{0:06d}",
        ts_ms=offset,
        ingest_ts_ms=None,
        primary_key=["id"] if op == "INSERT" else [],
        columns=Columns(COLUMNS if op == "INSERT" else []),
        before=None,
        after=row if op == "INSERT" else None,
        changed_columns=None,
        ddl=None,
        origin=Origin("vendor", 0, offset, 0),
    )


class _Lake:
    def __init__(self, bootstrap: str, spark: SparkSession, settings: SinkSettings) -> None:
        self.bootstrap, self.spark, self.settings = bootstrap, spark, settings
        self.offset = 0
        self.reports: list[MirrorReport] = []

    async def send(self, table: str, keys: range, value: str, op: str = "INSERT") -> None:
        events = []
        for key in keys:
            self.offset += 1
            events.append(_event(self.offset, table, key, value, op))
        await kafka_tools.produce(self.bootstrap, self.settings.topic, [(None, avro.encode(e)) for e in events])

    def run(self, *, keep_tails: bool) -> None:
        kafka = kafka_settings(self.bootstrap)
        run_sink(self.spark, self.settings, kafka, keep_tails=keep_tails, on_mirror_batch=self.reports.append)

    def mirror(self, table: str) -> dict[int, str] | None:
        uri = self.settings.mirror_uri(table)
        if not delta.exists(self.spark, uri):
            return None
        return {r["id"]: r["v"] for r in self.spark.read.format("delta").load(uri).collect()}

    def current(self, table: str) -> dict[int, str]:
        return {r["id"]: r["v"] for r in current_state.current(self.spark, self.settings, table).collect()}

    def deferred(self) -> dict[str, tails.Tail]:
        return tails.read(self.spark, self.settings)[1].tables


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_small_tables_changes_wait_are_read_and_are_merged(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = f"tails-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    settings = sink_settings_for_tests(
        topic=topic, lake_uri=tmp_path.as_uri(), mirror_defer_rows=10, mirror_defer_max_s=3600.0
    )
    lake = _Lake(kafka_bootstrap, spark, settings)
    # The first mirror batch reads a snapshot of the changelog (not whole versions by its change feed):
    # it defers nothing. Each later run's batch does.
    await lake.send(BIG, range(1, 3), "a")
    lake.run(keep_tails=True)
    await lake.send(SMALL, range(1, 4), "a")
    await lake.send(BIG, range(1, 21), "b")
    lake.run(keep_tails=True)
    assert lake.mirror(SMALL) is None and set(lake.deferred()) == {SMALL}
    assert lake.mirror(BIG) == dict.fromkeys(range(1, 21), "b")  # 20 rows: MERGEd
    assert lake.current(SMALL) == dict.fromkeys(range(1, 4), "a")  # read from the changelog's tail

    await lake.send(SMALL, range(3, 7), "b")  # 7 rows pending: still deferred
    lake.run(keep_tails=True)
    assert lake.mirror(SMALL) is None and lake.deferred()[SMALL].rows == 7
    assert lake.current(SMALL) == {1: "a", 2: "a", 3: "b", 4: "b", 5: "b", 6: "b"}

    await lake.send(SMALL, range(6, 9), "c")  # 10 rows: the batch MERGEs the tail with its own rows
    lake.run(keep_tails=True)
    assert lake.mirror(SMALL) == {1: "a", 2: "a", 3: "b", 4: "b", 5: "b", 6: "c", 7: "c", 8: "c"}
    assert lake.deferred() == {}
    assert lake.reports[-1].tables == [SMALL] and lake.reports[-1].deferred_rows == 0

    # An idle input: the tail is MERGEd between batches once it is due.
    await lake.send(SMALL, range(1, 3), "d")
    lake.run(keep_tails=True)
    assert lake.deferred()[SMALL].rows == 2
    ids = job.owned_app_ids(spark, settings)
    lock = threading.Lock()
    job.flush_mirror_tails(spark, settings, ids.mirrors, lock, every=False)  # not due yet
    assert lake.mirror(SMALL)[1] == "a"  # type: ignore[index]
    soon = settings.model_copy(update={"mirror_defer_max_s": 0.5})
    time.sleep(0.6)
    job.flush_mirror_tails(spark, soon, ids.mirrors, lock, every=False)
    assert lake.deferred() == {} and lake.mirror(SMALL) == lake.current(SMALL)
    assert lake.mirror(SMALL)[1] == "d"  # type: ignore[index]

    # A TRUNCATE is never deferred; an available-now run leaves no tail.
    await lake.send(SMALL, range(1, 2), "e")
    lake.run(keep_tails=True)
    assert set(lake.deferred()) == {SMALL}
    await lake.send(SMALL, range(1), "", op="TRUNCATE")
    await lake.send(SMALL, range(9, 10), "f")
    lake.run(keep_tails=True)
    assert lake.mirror(SMALL) == {9: "f"} and lake.deferred() == {}
    await lake.send(SMALL, range(10, 11), "g")
    lake.run(keep_tails=False)
    assert lake.mirror(SMALL) == {9: "f", 10: "g"} and lake.deferred() == {}
