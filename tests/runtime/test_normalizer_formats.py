"""Every vendor format end to end on a real broker: generated traffic in, the truth out."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from binlake.shared.generate import render
from binlake.shared.generate.compare import check_event
from binlake.shared.parsing.context import zone
from tests.support import kafka_tools
from tests.support.pipeline import (
    Topics,
    decode,
    normalizer_settings,
    run_normalizer_until_caught_up,
    send_workload,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

EVENTS = 300


# Every format with TIMESTAMPs read in Asia/Shanghai; canal-json also in UTC.
CASES = [(format_id, "Asia/Shanghai") for format_id in sorted(render.RENDERERS)] + [("canal-json", "UTC")]


@pytest.mark.parametrize(("format_id", "zone_name"), CASES)
async def test_format_end_to_end(kafka_bootstrap: str, format_id: str, zone_name: str, tmp_path: Path) -> None:
    topics = Topics.fresh(format_id)
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 3, topics.events: 4, topics.dlq: 1})
    sent = await send_workload(kafka_bootstrap, format_id, topics, events=EVENTS, seed=7, zone_name=zone_name)
    settings = normalizer_settings(format_id, topics, tmp_path, zone_name)
    normalizer = await run_normalizer_until_caught_up(kafka_bootstrap, settings, partitions=3)

    assert await kafka_tools.read_all(kafka_bootstrap, topics.dlq) == []
    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    # Exactly one event per change: nothing lost, nothing doubled.
    origins = [(event.origin.partition, event.origin.offset) for _, event in events]
    assert sorted(origins) == sorted(sent.by_origin)
    flags = render.flags(format_id)
    tz = zone(zone_name)
    per_row: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
    for record, event in events:
        change = sent.by_origin[(event.origin.partition, event.origin.offset)]
        problems = check_event(
            change,
            event,
            zone=tz,
            partial_before=flags.partial_before,
            partial_after=flags.partial_after,
            upsert=flags.upsert,
            old_null_as_empty=flags.old_null_as_empty,
        )
        assert problems == [], (change.sequence, problems)
        assert record.key is not None
        per_row[(change.table, str(change.key))].append((record.partition, record.offset, change.sequence))
    # All changes of one row land in one partition of the unified topic, in source order.
    for row, placed in per_row.items():
        assert len({partition for partition, _, _ in placed}) == 1, row
        sequences = [sequence for _, _, sequence in sorted(placed)]
        assert sequences == sorted(sequences), row
    assert normalizer.metrics.transactions._value.get() >= 1
