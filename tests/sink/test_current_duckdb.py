"""The current-state read without Spark (``current_duckdb``) is what the mirrors hold once they catch up.

A changelog grows round by round (the rule-by-rule events of ``test_sink_semantics``, every value kind
into every column type, deleted keys of every key type, 1,000 workload events); the mirror writer without
Spark applies it only every other round, so each read folds a tail of one or two rounds (the first,
before any mirror batch, the whole changelog) over mirrors that lag. Each read must equal, column for
column and row for row, the mirrors a copy of the lake holds once its mirror writer has caught up.

Then the same reads against Spark's: over mirrors the Spark mirror query wrote with type widening on,
the read without Spark and ``current_state.current_tables`` return the same rows. And while the mirror
writer runs in a thread, every read holds exactly the keys of the generator's truth.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import shutil
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.generate.workload import Workload
from binlake.spark_sink.changelog.delta_rs import DeltaRsChangelog
from binlake.spark_sink.delta import quote
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.native import duckdb_connection, sql_text
from binlake.spark_sink.mirror import batch as mirror_batch
from binlake.spark_sink.mirror import current_state, follower
from binlake.spark_sink.mirror.current_cli import current
from binlake.spark_sink.mirror.current_duckdb import CurrentStates
from binlake.spark_sink.mirror.current_held import HeldTables
from binlake.spark_sink.settings import SinkSettings
from tests.bench import sink_bench
from tests.sink.test_mirror_without_spark import TOPIC, _changelog_round, _spark_rows, _value_events
from tests.sink.test_sink_semantics import ROUND_1, ROUND_2, ROUND_2B, ROUND_3, ROUND_4
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

Rows = tuple[list[str], list[tuple[Any, ...]]]


def _rounds() -> list[list[bytes]]:
    workload = [item.value for item in sink_bench.generate(1_000, seed=5)]
    rounds: list[list[bytes]] = [[avro.encode(e) for e in events] for events in (ROUND_1, ROUND_2, ROUND_2B)]
    rounds.insert(1, _value_events())
    rounds += [workload[:500], [avro.encode(e) for e in ROUND_3], workload[500:], [avro.encode(e) for e in ROUND_4]]
    return rounds


def _every_table(rounds: list[list[bytes]]) -> list[str]:
    """Every source table the rounds' events name."""
    return sorted({f"{e.source.database}.{e.source.table}" for m in itertools.chain(*rounds) for e in [avro.decode(m)]})


def _source_tables(settings: SinkSettings) -> list[str]:
    changelog = DeltaTable(settings.changelog_uri())
    found = QueryBuilder().register("c", changelog).execute("SELECT DISTINCT source_table AS t FROM c").read_all()
    return sorted(t for batch in found.to_batches() for t in batch.column("t").to_pylist())


def _sorted(columns: list[str], rows: list[tuple[Any, ...]]) -> Rows:
    order = sorted(range(len(columns)), key=lambda i: columns[i])
    picked = [tuple(row[i] for i in order) for row in rows]
    return [columns[i] for i in order], sorted(picked, key=repr)


def _mirrors(settings: SinkSettings, tables: list[str]) -> dict[str, Rows]:
    """Every existing mirror's rows, scanned by DuckDB with nothing of the read's code."""
    connection = duckdb_connection()
    out: dict[str, Rows] = {}
    for table in tables:
        uri = settings.mirror_uri(table)
        if DeltaTable.is_deltatable(uri):
            relation = connection.sql(f"SELECT * FROM delta_scan({sql_text(uri)})")
            out[table] = _sorted(relation.columns, relation.fetchall())
    connection.close()
    return out


def _read(reader: CurrentStates, tables: list[str]) -> dict[str, Rows]:
    return {table: _sorted(rel.columns, rel.fetchall()) for table, rel in reader.read(tables).items()}


def _catch_up(settings: SinkSettings) -> None:
    follower.run(settings, "mirrors", stop=threading.Event(), until_caught_up=True)


def _settings(lake: Path, **overrides: object) -> SinkSettings:
    values: dict[str, object] = {"type_widening": False, "tombstone_compact_files": 2, "mirror_writer": "python"}
    values.update(overrides)
    return sink_settings_for_tests(lake_uri=str(lake), queries="mirrors", **values)


def test_a_read_equals_the_mirrors_once_they_catch_up(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "lake")
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    rounds = _rounds()
    # Two readers: one asks for the tables the lake holds so far (a new table makes it start again from the
    # mirrors), one for every table the rounds will ever hold (it starts once: every later read applies only
    # the changelog versions since the read before, over the copy it keeps).
    reader = CurrentStates(settings)
    every = sorted(
        {f"{e.source.database}.{e.source.table}" for m in itertools.chain(*rounds) for e in [avro.decode(m)]}
    )
    kept = CurrentStates(settings)
    offset = 0
    folded_tails = 0
    for number, messages in enumerate(rounds):
        _changelog_round(store, messages, offset)
        offset += len(messages)
        tables = _source_tables(settings)
        got = _read(reader, tables)
        got_kept = _read(kept, every)
        # What the mirrors hold once they have applied this changelog: a copy of the lake, caught up.
        copy = tmp_path / f"caught-up-{number}"
        shutil.copytree(tmp_path / "lake", copy)
        _catch_up(_settings(copy))
        expected = _mirrors(_settings(copy), tables)
        assert sorted(got) == sorted(expected) == sorted(got_kept), number
        for table in tables:
            assert got[table] == expected[table], (number, table)
            assert got_kept[table] == expected[table], (number, table)
        folded_tails += bool(_mirrors(settings, tables))
        if number % 2 == 1:
            _catch_up(settings)  # the lake's own mirrors follow every other round: its reads fold 1-2 rounds
        shutil.rmtree(copy)
    assert kept.started_again == 1
    assert 1 < reader.started_again < len(rounds)  # new tables came in some rounds, not in every one
    reader.close()
    kept.close()
    assert folded_tails >= 6  # most reads folded a tail over existing mirrors


def test_events_a_copy_holds_change_nothing_and_a_failed_read_starts_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path / "lake")
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    rounds = _rounds()
    offset = 0
    for number, messages in enumerate(rounds[:5]):
        _changelog_round(store, messages, offset)
        offset += len(messages)
        if number == 1:
            _catch_up(settings)
    tables = _source_tables(settings)
    # The whole changelog applied to a copy, then again (what a read does when the versions since the read before
    # are no longer in the change data feed: every event from the table itself): the second changes nothing.
    changelog = DeltaTable(settings.changelog_uri())
    connection = duckdb_connection()
    held = HeldTables(connection, settings)
    held.apply(follower.read_range(changelog, 0, changelog.version()))
    once = {t: _sorted(*_fetched(connection.table(h.name))) for t, h in held.tables.items()}
    held.apply(follower.read_range(changelog, 0, changelog.version()))
    twice = {t: _sorted(*_fetched(connection.table(h.name))) for t, h in held.tables.items()}
    assert once == twice
    assert sum(len(rows) for _, rows in once.values()) > 200, once.keys()  # the workload's rows among them
    connection.close()
    # A read that fails halfway keeps nothing: the next one starts again from the mirrors.
    reader = CurrentStates(settings)
    _read(reader, tables)
    _changelog_round(store, rounds[5], offset)
    real = HeldTables.apply

    def fails(self: HeldTables, events: Any) -> None:
        real(self, events)
        raise OSError("the disk went away")

    monkeypatch.setattr(HeldTables, "apply", fails)
    with pytest.raises(OSError, match="went away"):
        reader.read(tables)
    monkeypatch.setattr(HeldTables, "apply", real)
    got = _read(reader, tables)
    assert reader.started_again == 2
    _catch_up(settings)
    assert got == _mirrors(settings, tables)
    reader.close()


def test_a_lake_written_again_from_nothing_starts_the_copy_again(tmp_path: Path) -> None:
    # An operator deletes the lake and the sink writes it again: the changelog is another table (its id), so
    # the reader's copy of the old one is not moved on but made again from the new lake.
    settings = _settings(tmp_path / "lake")
    rounds = _rounds()

    def write(count: int) -> None:
        store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
        store.resume(TOPIC, [0])
        offset = 0
        for messages in rounds[:count]:
            _changelog_round(store, messages, offset)
            offset += len(messages)
        _catch_up(settings)

    write(5)
    tables = _source_tables(settings)
    reader = CurrentStates(settings)
    before = _read(reader, tables)
    shutil.rmtree(tmp_path / "lake")
    write(1)
    again = _read(reader, tables)
    assert reader.started_again == 2
    assert again == _mirrors(settings, tables) != before
    reader.close()


def _fetched(relation: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    return relation.columns, relation.fetchall()


def _normal(value: Any) -> Any:
    """A value as Spark's and DuckDB's Python values compare: timestamps in UTC without zone, bytes."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, Decimal):
        return value.normalize() if value == value.to_integral_value() else value
    return value


def test_a_read_over_spark_mirrors_equals_the_spark_read(spark: SparkSession, tmp_path: Path) -> None:
    settings = _settings(tmp_path / "lake", type_widening=True, mirror_writer="spark")
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    progress = follower.Progress(settings.mirror_checkpoint())
    reader = CurrentStates(settings)
    offset = 0
    applied = 0  # the first changelog version the Spark mirror has not applied
    rounds = _rounds()
    every = _every_table(rounds)
    for number, messages in enumerate(rounds):
        _changelog_round(store, messages, offset)
        offset += len(messages)
        tables = _source_tables(settings)
        kept = _read(reader, every)  # each read after the first applies the round to the copy it keeps
        if number == 5:
            # Compared while the mirrors lag: a new reader's copy starts from the type-widened Spark mirrors and
            # their tail; the kept copy holds the rounds applied one by one, the types widened as Spark widens them.
            fresh = CurrentStates(settings)
            mine = _read(fresh, tables)
            fresh.close()
            frames = current_state.current_tables(spark, settings, tables)
            for table, frame in frames.items():
                if not frame.columns:
                    assert table not in mine and table not in kept
                    continue
                columns = frame.columns
                rows = [tuple(_normal(v) for v in r) for r in frame.select(*[quote(c) for c in columns]).collect()]
                for ours in (mine[table], kept[table]):
                    ours_normal = (ours[0], sorted((tuple(_normal(v) for v in r) for r in ours[1]), key=repr))
                    assert ours_normal == _sorted(columns, rows), (number, table)
        if number == 2:
            # The Spark mirror query's batch, logged in the checkpoint as its Delta source logs it.
            last = DeltaTable(settings.changelog_uri()).version()
            batch_id = len(list((Path(settings.mirror_checkpoint()) / "commits").glob("[0-9]*")))
            progress.log(batch_id, str(DeltaTable(settings.changelog_uri()).metadata().id), last + 1)
            feed = _spark_rows(spark, settings.changelog_uri(), applied, last)
            mirror_batch.process(settings, "spark-mirror", feed, batch_id)
            progress.commit(batch_id)
            applied = last + 1
    widened = [
        name
        for name in (Path(settings.lake()) / "mirror").iterdir()
        if "typeWidening" in str(DeltaTable(str(name)).protocol())
    ]
    assert widened  # the reads went over mirrors delta-rs itself could not scan
    assert reader.started_again == 1
    reader.close()


def _truth(events: int) -> dict[str, set[int]]:
    workload = Workload(seed=11, tables=sink_bench.TABLES, database="bench")
    for _ in workload.run(events):
        pass
    return {f"bench.{name}": {int(key) for key in rows} for name, rows in workload.state.items()}


def _ids(columns: list[str], rows: list[tuple[Any, ...]]) -> set[int]:
    at = columns.index("id")
    return {int(row[at]) for row in rows}


def test_reads_beside_a_running_mirror_writer_hold_the_truth(tmp_path: Path) -> None:
    # The changelog grows and the mirror writer follows it, each in a thread, while reads run: each read must hold
    # exactly the generator's keys after the events of the changelog version it read through.
    settings = _settings(tmp_path / "lake", mirror_trigger_interval_s=0.2)
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    items = sink_bench.encode_events(6_000, seed=11)
    events_at: dict[int, int] = {}  # changelog version -> events written through it
    stop = threading.Event()
    failures: list[BaseException] = []

    def grow() -> None:
        for end in range(200, len(items) + 1, 200):
            _changelog_round(store, [item.value for item in items[end - 200 : end]], end - 200)
            events_at[DeltaTable(settings.changelog_uri()).version()] = end
            time.sleep(0.1)

    def follow() -> None:
        try:
            follower.run(settings, "mirrors", stop=stop)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            failures.append(exc)

    _changelog_round(store, [item.value for item in items[:200]], 0)
    events_at[DeltaTable(settings.changelog_uri()).version()] = 200
    writer = threading.Thread(target=grow, daemon=True)
    mirrors = threading.Thread(target=follow, daemon=True)
    reader = CurrentStates(settings)
    tables = [f"bench.t{i:02d}" for i in range(sink_bench.TABLES)]
    mirrors.start()
    writer.start()
    checked: set[int] = set()
    try:
        while writer.is_alive() or not checked:
            read = reader.read(tables)
            got = {table: _ids(rel.columns, rel.fetchall()) for table, rel in read.items()}
            while reader.through not in events_at and writer.is_alive():
                time.sleep(0.01)  # the writer records a version just after committing it
            truth = _truth(events_at[reader.through])
            assert got == {table: keys for table, keys in truth.items() if keys or table in got}, reader.through
            checked.add(reader.through)
    finally:
        stop.set()
        writer.join(60)
        mirrors.join(60)
        reader.close()
    assert not failures, failures
    done = follower.Progress(settings.mirror_checkpoint()).state()[0]
    assert done is not None and done >= 3, done  # the mirror writer made batches while the reads ran
    assert len(checked) >= 5, checked  # reads saw the changelog at several versions


def test_binlake_current_prints_a_table_as_the_changelog_holds_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "lake")
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    _changelog_round(store, [avro.encode(e) for e in ROUND_1], 0)  # no mirror yet: all of it is the tail
    keyed = next(e.source.table for e in ROUND_1)
    table = f"{ROUND_1[0].source.database}.{keyed}"
    out = io.StringIO()
    assert current(settings, table, as_json=True, out=out) == 0
    document = json.loads(out.getvalue())
    assert document["changelog_version"] == DeltaTable(settings.changelog_uri()).version()
    rows = [dict(zip(document["columns"], row, strict=True)) for row in document["rows"]]
    # id 1 updated (a unknown in the update: kept), 2 deleted, 5 moved to 6
    assert sorted((r["id"], r["a"], r["b"]) for r in rows) == [(1, 1, "y"), (6, 6, "k")]
    out = io.StringIO()
    current(settings, table, sql="SELECT count(*) AS n, max(id) AS top FROM current", out=out)
    assert out.getvalue().splitlines()[:2] == ["n  top", "2    6"]
    with pytest.raises(LakeError, match=r"holds nothing of source table nowhere\.t"):
        current(settings, "nowhere.t", out=io.StringIO())
