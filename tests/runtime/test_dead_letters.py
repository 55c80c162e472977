"""Poison messages go to the dead-letter topic with their bytes and origin; good ones keep flowing."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from binlake.shared.cli import dlq
from binlake.shared.config.settings import kafka_settings
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka import records
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, run_normalizer_until_caught_up

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

POISON: dict[bytes, str] = {
    b'{"data": [': "malformed",
    b"\xff\xfe not utf-8": "malformed",
    b"": "malformed",
    b'{"payload": {"op": "c", "after": {"id": 1}}}': "wrong_format",
    b'{"type": "INSERT", "database": "shop", "table": "t00", "es": 1, "mysqlType": {"id": "int"}, '
    b'"data": [{"id": "twelve"}], "pkNames": ["id"]}': "bad_value",
    b'{"type": "INSERT", "database": "shop", "table": "t00", "data": [{"v": "1"}], "pkNames": ["id"]}': "inconsistent",
    b'{"type": "INSERT", "database": "shop", "table": "t00", "es": 1, "data": [{"id": "1"}], "pkNames": ["id"], '
    b'"ts": 1e999}': "bad_field",
}


async def test_poison_is_dead_lettered_and_replayable(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("dlq")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    render_fn = render.get("canal-json")
    ctx = render.RenderContext()
    items: list[tuple[bytes | None, bytes]] = []
    good = 0
    for index, change in enumerate(Workload(seed=9, tables=2).run(300)):
        items.append((b"k%d" % (index % 7), render_fn(change, ctx)))
        good += 1
        if index % 40 == 0:
            poison = list(POISON)[(index // 40) % len(POISON)]
            items.append((b"poison-%d" % index, poison))
    positions = await kafka_tools.produce(kafka_bootstrap, topics.vendor, items)
    sent = dict(zip(positions, items, strict=True))
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC")
    normalizer = await run_normalizer_until_caught_up(kafka_bootstrap, settings, partitions=2)

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    assert len(events) == good
    letters = await kafka_tools.read_all(kafka_bootstrap, topics.dlq)
    assert len(letters) == len(items) - good
    for letter in letters:
        headers = records.header_map(letter.headers)
        origin = (int(headers[records.H_PARTITION]), int(headers[records.H_OFFSET]))
        key, raw = sent[origin]
        assert headers[records.H_TOPIC] == topics.vendor
        assert letter.value == raw and letter.key == key  # the original bytes, untouched
        assert headers[records.H_ERROR_CLASS] == POISON[raw]
        assert headers[records.H_REASON]
        assert headers[records.H_FORMAT] == "canal-json"
        assert headers[records.H_PARSER_VERSION] == "1"
    registry = normalizer.metrics.registry
    counted = sum(
        registry.get_sample_value("binlake_dead_letters_total", {"topic": topics.vendor, "reason": reason}) or 0.0
        for reason in set(POISON.values())
    )
    assert counted == len(letters)

    # Replay one reason class back to its source topic: exactly those letters return, marked.
    args = argparse.Namespace(
        dlq_topic=topics.dlq,
        group_id=kafka_tools.unique("replay"),
        reason=["bad_value"],
        source_topic=[],
        format=[],
        max=0,
        idle_ms=1500,
        dry_run=False,
    )
    counts = await dlq.replay(args, kafka_settings(kafka_bootstrap))
    expected = sum(1 for letter in letters if records.header_map(letter.headers)[records.H_ERROR_CLASS] == "bad_value")
    assert counts == {
        "seen": len(letters),
        "replayed": expected,
        "already_replayed": 0,
        "truncated": 0,
        "skipped": len(letters) - expected,
    }
    vendor = await kafka_tools.read_all(kafka_bootstrap, topics.vendor)
    replayed = [r for r in vendor if records.H_REPLAYED_FROM in records.header_map(r.headers)]
    assert len(replayed) == expected
    assert all(r.value == next(iter(k for k, v in POISON.items() if v == "bad_value")) for r in replayed)
    # Each carries its original coordinates, which the normalizer reads it at.
    originals = {
        f"{h[records.H_TOPIC]}:{h[records.H_PARTITION]}:{h[records.H_OFFSET]}"
        for h in (records.header_map(letter.headers) for letter in letters)
        if h[records.H_ERROR_CLASS] == "bad_value"
    }
    assert {records.header_map(r.headers)[records.H_REPLAYED_ORIGIN] for r in replayed} == originals
    # A second replay with the same group has nothing left to do.
    assert (await dlq.replay(args, kafka_settings(kafka_bootstrap)))["replayed"] == 0
    # Nor has one under a new group (to scan again): the ledger remembers what was replayed, so no letter
    # goes back twice, while the letters an earlier filter skipped can still be replayed.
    again = argparse.Namespace(**{**vars(args), "group_id": kafka_tools.unique("replay"), "reason": []})
    counts = await dlq.replay(again, kafka_settings(kafka_bootstrap))
    assert counts["already_replayed"] == expected
    assert counts["replayed"] == len(letters) - expected
    vendor = await kafka_tools.read_all(kafka_bootstrap, topics.vendor)
    assert sum(1 for r in vendor if records.H_REPLAYED_FROM in records.header_map(r.headers)) == len(letters)
