"""A table whose events carry hundreds of column descriptors in one batch, on real Kafka + Spark + Delta.

Formats without types (Maxwell) type every value on its own: a NULL is
``unknown``, text is ``string``, a number ``int64``; a table then has one
descriptor per combination of NULL columns and value kinds, a thousand in a
batch of 9,000 Maxwell events. The mirror's projection is linear in the
columns whatever their number (docs in ``spark_sink.mirror.project``); here
several hundred descriptors in one batch, absent columns (untouched), NULLs
(written), a column that is a number in some events and text in others (its
fallback column), key moves and deletes, are folded by the batch's fold, read by
``current_state`` and MERGEd into the mirror, and both equal a fold of the events
in Python.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import job
from binlake.spark_sink.changelog.table import ensure_table
from binlake.spark_sink.delta import quote
from binlake.spark_sink.mirror import batch_facts, current_state
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

TEXT = tuple(f"c{i}" for i in range(8))
NUMBER = "n"
"""An int64 in most events, text in some: the text goes to the fallback column ``n__string``."""
LOGICAL = ("id", *TEXT, NUMBER)
KEYS = 30
EVENTS = 900
Row = dict[str, Any]


def _column(name: str, value: object) -> Column:
    if name == "id":
        return Column("id", None, "int64", inferred=True)
    if value is None:
        return Column(name, None, "unknown", inferred=True)
    return Column(name, None, "int64" if isinstance(value, int) else "string", inferred=True)


def _event(n: int, op: str, before: Image | None, after: Image | None, table: str) -> ChangeEvent:
    image = after if after is not None else before
    assert image is not None
    # Like Maxwell: the descriptor lists the columns of the event's data, each typed by its value.
    columns = Columns(_column(name, value) for name, value in image.items())
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # the test's ops are valid Op literals
        source=Source("maxwell-json", "mysql", "d", None, table),
        order_key=f"{n:020d}.{0:020d}.{0:06d}",
        ts_ms=n,
        ingest_ts_ms=None,
        primary_key=["id"],
        columns=columns,
        before=before,
        after=after,
        changed_columns=None,
        ddl=None,
        origin=Origin("vendor", 0, n, 0),
    )


def _image(rng: random.Random, key: int) -> Image:
    """Each column absent, NULL or a value: a descriptor per combination."""
    image: Image = {"id": key}
    for name in TEXT:
        kind = rng.random()
        if kind < 0.3:
            continue
        image[name] = None if kind < 0.6 else f"{name}-{rng.randrange(1000)}"
    kind = rng.random()
    if kind < 0.6:
        image[NUMBER] = rng.randrange(-(2**40), 2**40)
    elif kind < 0.8:
        image[NUMBER] = f"text-{rng.randrange(100)}"
    elif kind < 0.9:
        image[NUMBER] = None
    return image


def _apply(rows: dict[int, Row], image: Image, *, fresh: bool) -> Row:
    """The row after ``image``: absent columns untouched (NULL for a new row)."""
    key = image["id"]
    assert isinstance(key, int)
    row: Row = dict.fromkeys(LOGICAL) if fresh else dict(rows[key])
    row.update(image)
    return row


def _physical(events: list[ChangeEvent]) -> tuple[str, str]:
    """The number's two physical columns, (int64, text): the first event that types it gives ``n`` its type,
    the other kind goes to a fallback column."""
    for event in events:
        value = (event.after or event.before or {}).get(NUMBER)
        if isinstance(value, int):
            return NUMBER, f"{NUMBER}__string"
        if isinstance(value, str):
            return f"{NUMBER}__bigint", NUMBER
    raise AssertionError("no event types the number")


def _expected(rows: dict[int, Row], events: list[ChangeEvent]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The mirror's columns and rows: the number's value in the physical column its kind routes to, NULL in
    the other."""
    as_int, as_text = _physical(events)
    names = ["id", *TEXT, as_int, as_text]
    found = []
    for row in rows.values():
        value = row[NUMBER]
        kinds = {as_int: value if isinstance(value, int) else None, as_text: value if isinstance(value, str) else None}
        found.append(tuple(kinds.get(name, row.get(name)) for name in names))
    return names, _sorted(found)


def _events(table: str, seed: int, count: int) -> tuple[list[ChangeEvent], dict[int, Row]]:
    rng = random.Random(seed)
    events: list[ChangeEvent] = []
    rows: dict[int, Row] = {}
    for n in range(1, count + 1):
        key = rng.randrange(KEYS)
        if key not in rows:
            after = _image(rng, key)
            events.append(_event(n, "INSERT", None, after, table))
            rows[key] = _apply(rows, after, fresh=True)
        elif rng.random() < 0.1:
            events.append(_event(n, "DELETE", {"id": key}, None, table))
            del rows[key]
        elif rng.random() < 0.05 and (moved := KEYS + n) not in rows:
            after = _image(rng, moved)  # the key moves: the old key is deleted
            events.append(_event(n, "UPDATE", {"id": key}, after, table))
            rows[moved] = _apply(rows, after, fresh=True)  # a new key: what the image does not hold is NULL
            del rows[key]
        else:
            after = _image(rng, key)
            events.append(_event(n, "UPDATE", {"id": key}, after, table))
            rows[key] = _apply(rows, after, fresh=False)
    return events, rows


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


async def test_hundreds_of_descriptors(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    topic = f"desc-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    # Two tables of hundreds of descriptors each, one with more row events than the other, in one batch's fold
    # (and in one current-state read).
    own, own_rows = _events("own", 1, EVENTS)
    shared, shared_rows = _events("shared", 2, EVENTS - 200)
    settings = sink_settings_for_tests(topic=topic, lake_uri=(tmp_path / "lake").as_uri(), mirrors="follow")
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in [*own, *shared]])
    ids = job.owned_app_ids(spark, settings)
    version = ensure_table(spark, settings.changelog_uri(), list(settings.changelog_partition_by))
    kafka = kafka_settings(kafka_bootstrap)
    await asyncio.to_thread(_until_done, job.start_changelog(spark, settings, kafka, ids.changelog, version=version))

    changelog = spark.read.format("delta").load(settings.changelog_uri())
    facts = batch_facts.collect(changelog)
    found, counts = facts.descriptors, facts.counts
    assert len(found["d.own"]) > 300 and len(found["d.shared"]) > 300, {t: len(d) for t, d in found.items()}
    assert counts["d.own"].rows == EVENTS and counts["d.shared"].rows < EVENTS

    truth = {"d.own": own_rows, "d.shared": shared_rows}
    sent = {"d.own": own, "d.shared": shared}
    for table, frame in current_state.current_tables(spark, settings, list(truth)).items():
        names, rows = _expected(truth[table], sent[table])
        assert sorted(c for c in frame.columns if not c.startswith("_binlake")) == sorted(names), table
        assert _sorted([tuple(r) for r in frame.select(*[quote(c) for c in names]).collect()]) == rows, table
    await asyncio.to_thread(_until_done, job.start_mirrors(spark, settings, ids.mirrors))
    for table, table_rows in truth.items():
        mirror = spark.read.format("delta").load(settings.mirror_uri(table))
        names, rows = _expected(table_rows, sent[table])
        assert _sorted([tuple(r) for r in mirror.select(*[quote(c) for c in names]).collect()]) == rows, table


def _until_done(query: Any) -> None:
    query.awaitTermination()
    assert query.exception() is None, query.exception()
