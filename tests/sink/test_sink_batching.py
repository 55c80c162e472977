"""The lake does not depend on batching: the same events, cut into micro-batches anywhere, give the same lake.

A random stream of canonical events (seeded: ``BINLAKE_TEST_BATCHING_SEEDS`` picks more seeds) over a keyed
table with a history table, a keyed table without one and a key-less table: inserts with full and partial
images, partial UPDATEs, key moves, deletes and re-inserts, late events (older than what the key holds), ties
(two changes with one ``order_key``, told apart by their origin), TRUNCATEs and an ``ALTER TABLE ... ADD
COLUMN`` followed by rows that carry the column. Each lake gets its own topic and the same events, sent in
chunks cut at random places, and the real sink (Kafka, Spark, Delta) runs after every chunk, with
``mirrors=follow`` or ``inline``, some with
``max_offsets_per_trigger`` cutting a run into several micro-batches, one rewriting each mirror whole instead
of MERGEing it (``merge.rewrite``), one deferring a small table's changes to a later batch (``tails``).
Then every lake must hold the same:

- mirrors: every column, the row's sequence and each column's sequence (``mirror_state.column_sequences``);
- tombstones: each deleted key's newest delete (compaction keeps only that one);
- history tables: every version, with its validity, op and known columns;

and the keyed tables' current state read (``current_state``, merge on read) before the last mirror batch must
equal the mirrors that batch makes.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Ddl, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import delta, job
from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import HIDDEN, ORDER_KEY
from binlake.spark_sink.mirror import current_state, key_filter, mirror_state
from binlake.spark_sink.mirror.batch import MirrorReport
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.spark_fixtures import run_sink, sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

BASE = [Column("id", "int", "int32"), Column("a", "int", "int32"), Column("b", "varchar(8)", "string")]
WITH_C = [*BASE, Column("c", "bigint", "int64")]
LOG = [Column("msg", "varchar(8)", "string")]
HISTORY = "p.hist"
PLAIN = "p.plain"
KEYLESS = "p.log"
TABLES = (HISTORY, PLAIN, KEYLESS)


@dataclass
class _Stream:
    """What the generator knows while it writes: the clock, and the tables that have column ``c``."""

    rng: random.Random
    clock: int = 100
    offset: int = 0
    with_c: frozenset[str] = frozenset()

    def order_key(self) -> int:
        roll = self.rng.random()
        if roll < 0.15:
            return self.clock  # a tie with the event before: the origin tells them apart
        if roll < 0.35:
            return self.clock - self.rng.randint(1, 12)  # late: older than what the key may hold
        self.clock += self.rng.randint(1, 3)
        return self.clock

    def event(
        self, op: str, table: str, *, after: Image | None = None, before: Image | None = None, ddl: Ddl | None = None
    ) -> ChangeEvent:
        self.offset += 1
        ok = self.order_key()
        keyed = table != KEYLESS and op in ("INSERT", "UPDATE", "DELETE")
        columns = LOG if table == KEYLESS else WITH_C if table in self.with_c else BASE
        return ChangeEvent(
            op=op,  # type: ignore[arg-type]  # the generator's ops are valid Op literals
            source=Source("test", "mysql", "p", None, table.split(".")[1]),
            order_key=f"{ok:020d}.{0:020d}.{0:06d}",
            ts_ms=ok * 100,
            ingest_ts_ms=None,
            primary_key=["id"] if keyed else [],
            columns=Columns(columns if op in ("INSERT", "UPDATE", "DELETE") else []),  # TRUNCATE, DDL: none
            before=before,
            after=after,
            changed_columns=None,
            ddl=ddl,
            origin=Origin("vendor", 0, self.offset, 0),
        )

    def image(self, table: str, key: int, *, partial: bool) -> Image:
        values: dict[str, Any] = {"id": key}
        names = ["a", "b", *(["c"] if table in self.with_c else [])]
        for name in names:
            if partial and self.rng.random() < 0.5:
                continue  # absent: unknown, not NULL
            if self.rng.random() < 0.1:
                values[name] = None  # a known NULL
            elif name == "b":
                values[name] = self.rng.choice(["x", "y", "z", "é", ""])
            else:
                values[name] = self.rng.randint(-5, 2**40 if name == "c" else 1000)
        return values


def events_of(seed: int, count: int) -> list[ChangeEvent]:
    """A random stream of ``count`` events (module doc)."""
    stream = _Stream(random.Random(seed))
    rng = stream.rng
    out: list[ChangeEvent] = []
    added_at = rng.randint(count // 4, count // 2)
    for i in range(count):
        if i == added_at:
            ddl = Ddl("ALTER TABLE hist ADD COLUMN c bigint", "ALTER_TABLE")
            out.append(stream.event("DDL", HISTORY, ddl=ddl))
            stream.with_c = frozenset({HISTORY})
            continue
        roll = rng.random()
        table = rng.choice(TABLES)
        if roll < 0.04:
            out.append(stream.event("TRUNCATE", table))
            continue
        if table == KEYLESS:
            out.append(stream.event("INSERT", KEYLESS, after={"msg": rng.choice(["m1", "m2", "m3"])}))
            continue
        key = rng.randint(1, 6)
        if roll < 0.35:
            out.append(stream.event("INSERT", table, after=stream.image(table, key, partial=rng.random() < 0.3)))
        elif roll < 0.75:
            after = stream.image(table, key, partial=True)
            out.append(stream.event("UPDATE", table, before={"id": key}, after=after))
        elif roll < 0.8:
            moved = stream.image(table, rng.randint(1, 6), partial=True)
            out.append(stream.event("UPDATE", table, before={"id": key}, after=moved))
        else:
            out.append(stream.event("DELETE", table, before={"id": key}))
    return out


def _cuts(rng: random.Random, count: int, pieces: int) -> list[int]:
    return [*sorted(rng.sample(range(1, count), pieces - 1)), count]


@dataclass(frozen=True)
class _Way:
    """One way of cutting the stream: where each run of the sink ends, and how the sink runs."""

    name: str
    cuts: list[int]
    overrides: dict[str, Any]


def _ways(seed: int, count: int) -> list[_Way]:
    rng = random.Random(seed * 7919)
    return [
        _Way("whole", [count], {"mirrors": "inline"}),
        # MERGEs without their key condition (``mirror.key_filter``); "inline" MERGEs with it (the test makes
        # every mirror big enough for one); "rewrite" rewrites each mirror whole instead (``merge.rewrite``).
        _Way(
            "follow",
            _cuts(rng, count, 3),
            {"mirrors": "follow", "merge_key_filter_max": 0, "mirror_rewrite_bytes_per_key": 0},
        ),
        _Way(
            "inline",
            _cuts(rng, count, 2),
            {"mirrors": "inline", "max_offsets_per_trigger": rng.randint(6, 12), "mirror_rewrite_bytes_per_key": 0},
        ),
        _Way("rewrite", _cuts(rng, count, 3), {"mirrors": "follow", "mirror_rewrite_bytes_per_key": 1 << 40}),
        # Small tables' changes deferred to a later batch (``tails``), across runs that keep them deferred.
        _Way("defer", _cuts(rng, count, 5), {"mirrors": "follow", "mirror_defer_rows": 7}),
    ]


async def _sink(
    bootstrap: str, spark: SparkSession, tmp: Path, events: list[ChangeEvent], way: _Way
) -> tuple[SinkSettings, dict[str, list[tuple[Any, ...]]], list[MirrorReport]]:
    """The lake of ``way``, the keyed tables' current state read (merge on read) before its last mirror
    batch (``mirrors=follow``: the changelog then holds a tail the mirrors have not applied), and the reports of
    the mirror batches of a run that keeps deferred tails (``run_sink``) and of the last run."""
    topic = f"batching-{tmp.name}-{way.name}"
    await kafka_tools.create_topics(bootstrap, {topic: 1})
    settings = sink_settings_for_tests(
        topic=topic, lake_uri=(tmp / way.name).as_uri(), history_tables=[HISTORY], **way.overrides
    )
    kafka = kafka_settings(bootstrap)
    start = 0
    read: dict[str, list[tuple[Any, ...]]] = {}
    reports: list[MirrorReport] = []
    for end in way.cuts:
        await kafka_tools.produce(bootstrap, topic, [(None, avro.encode(e)) for e in events[start:end]])
        start = end
        if end < len(events) or settings.mirrors != "follow":
            if settings.mirror_defer_rows:
                run_sink(spark, settings, kafka, keep_tails=True, on_mirror_batch=reports.append)
            else:
                job.run(spark, settings, kafka)
            continue
        job.run(spark, settings.model_copy(update={"queries": "changelog"}), kafka)
        for table, frame in current_state.current_tables(spark, settings, [HISTORY, PLAIN]).items():
            read[table] = _visible(frame)
        job.run(spark, settings.model_copy(update={"queries": "mirrors"}), kafka, on_mirror_batch=reports.append)
    return settings, read, reports


def _visible(frame: DataFrame) -> list[tuple[Any, ...]]:
    columns = sorted(c for c in frame.columns if c not in HIDDEN)
    return sorted((tuple(r) for r in frame.select(*[quote(c) for c in columns]).collect()), key=repr)


def _rows(spark: SparkSession, uri: str, drop: frozenset[str] = frozenset()) -> list[tuple[Any, ...]]:
    if not delta.exists(spark, uri):
        return []
    frame = spark.read.format("delta").load(uri)
    columns = sorted(c for c in frame.columns if c not in drop)
    return sorted((tuple(r) for r in frame.select(*[quote(c) for c in columns]).collect()), key=repr)


def lake_facts(spark: SparkSession, settings: SinkSettings) -> dict[str, Any]:
    """What must not depend on batching (module doc)."""
    facts: dict[str, Any] = {}
    for table in TABLES:
        uri = settings.mirror_uri(table)
        if table == KEYLESS:
            facts[f"mirror {table}"] = _rows(spark, uri)
            continue
        facts[f"mirror {table}"] = _rows(spark, uri, drop=frozenset(mirror_state.STATE_COLUMNS))
        if delta.exists(spark, uri):
            sequences = mirror_state.column_sequences(spark, uri)
            facts[f"sequences {table}"] = sorted(sequences.collect(), key=repr)
    facts["history"] = _rows(spark, settings.history_uri(HISTORY))
    if delta.exists(spark, settings.tombstones_uri()):
        newest = spark.read.format("delta").load(settings.tombstones_uri()).groupBy("source_table", "key")
        facts["tombstones"] = sorted(tuple(r) for r in newest.agg(F.max(ORDER_KEY)).collect())
    return facts


def _merges_naming_keys(spark: SparkSession, settings: SinkSettings) -> int:
    """The lake's mirror MERGE commits whose condition names the batch's keys (``key_filter``)."""
    count = 0
    for table in (HISTORY, PLAIN):
        if delta.exists(spark, settings.mirror_uri(table)):
            merges = DeltaTable.forPath(spark, settings.mirror_uri(table)).history().where("operation = 'MERGE'")
            count += sum(" IN (" in (row["operationParameters"]["predicate"] or "") for row in merges.collect())
    return count


def _rewrites(spark: SparkSession, settings: SinkSettings) -> int:
    """The lake's keyed mirror commits that rewrote the mirror whole (``merge.rewrite``)."""
    count = 0
    for table in (HISTORY, PLAIN):
        if delta.exists(spark, settings.mirror_uri(table)):
            writes = DeltaTable.forPath(spark, settings.mirror_uri(table)).history().where("operation = 'WRITE'")
            count += sum(row["operationParameters"]["mode"] == "Overwrite" for row in writes.collect())
    return count


def _seeds() -> list[int]:
    wanted = os.environ.get("BINLAKE_TEST_BATCHING_SEEDS", "")
    # Seed 3: a DELETE older than a TRUNCATE arrives in a later batch than it (the history's closing row goes).
    return [int(s) for s in wanted.split(",") if s] or [11, 3]


@pytest.mark.parametrize("seed", _seeds())
async def test_the_same_events_make_the_same_lake_however_batched(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_filter, "BYTES_PER_KEY", 1)
    events = events_of(seed, 48)
    ways = _ways(seed, len(events))
    lakes = {way.name: await _sink(kafka_bootstrap, spark, tmp_path, events, way) for way in ways}
    facts = {name: lake_facts(spark, settings) for name, (settings, _, _) in lakes.items()}
    reference = facts["whole"]
    assert reference[f"mirror {HISTORY}"], "the stream left the history table's mirror empty: a weak seed"
    for way in ways:
        for part, rows in reference.items():
            assert facts[way.name].get(part) == rows, f"{way.name} (runs end at {way.cuts}): {part}"
    # Only "inline" named the keys in its MERGEs' conditions (and its lake equals the others).
    assert _merges_naming_keys(spark, lakes["inline"][0]) > 0
    assert _merges_naming_keys(spark, lakes["follow"][0]) == 0
    # Only "rewrite" rewrote mirrors whole (and its lake equals the MERGEs').
    assert _rewrites(spark, lakes["rewrite"][0]) > 0
    assert _rewrites(spark, lakes["follow"][0]) == _rewrites(spark, lakes["inline"][0]) == 0
    # The current state read before the last mirror batch equals the mirror that batch made.
    for name in ("follow", "defer"):
        settings, read, _ = lakes[name]
        assert sorted(read) == [HISTORY, PLAIN]
        for table, rows in read.items():
            assert _visible(spark.read.format("delta").load(settings.mirror_uri(table))) == rows, (name, table)
    # "defer" did leave a table's changes to a later batch (``test_mirror_tails``: what becomes of them).
    deferred = [(r.batch_id, r.deferred_rows) for r in lakes["defer"][2] if r.deferred_tables]
    assert deferred, "no mirror batch deferred a table's changes"
