"""A record Kafka will never accept: its input message is dead-lettered and the partition moves on.

A 601 KB Canal UPDATE whose large column did not change becomes a 1.2 MB
canonical event (the column is in the before and the after image), over the
broker's default ``message.max.bytes`` (1,048,588). The broker refuses it for
good (``MessageSizeTooLargeError``, not retriable); retrying it, as an outage,
stalled the partition for ever with ``/healthz`` green. Here the message must
land in the dead-letter topic (with its bytes, or as much of them as fits), the
good messages before and after it must reach the unified topic exactly once,
and nothing may stall. Three dead-letter topics: one that takes the whole
message, one where ``BINLAKE_DLQ_MAX_VALUE_BYTES`` cuts it, one whose own
``max.message.bytes`` refuses even the cut letter (it goes bare).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
from collections import Counter
from pathlib import Path

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from binlake.shared.config.settings import kafka_settings
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka import letters, records
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

NOTE = base64.b64encode(random.Random(5).randbytes(450_000)).decode()  # incompressible: lz4 cannot shrink it
"""A 600 KB column value (the payload the dead letter's reason must not quote)."""


def _big_update() -> bytes:
    return orjson.dumps(
        {
            "data": [{"id": "1", "note": NOTE, "updated_at": "2024-01-01 00:00:01"}],
            "database": "shop",
            "es": 1700000000000,
            "id": 7,
            "isDdl": False,
            "mysqlType": {"id": "int(11)", "note": "longtext", "updated_at": "timestamp"},
            "old": [{"updated_at": "2024-01-01 00:00:00"}],
            "pkNames": ["id"],
            "sql": "",
            "sqlType": {"id": 4, "note": 2005, "updated_at": 93},
            "table": "docs",
            "ts": 1700000000001,
            "type": "UPDATE",
        }
    )


async def _create(bootstrap: str, topics: Topics, dlq_config: dict[str, str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(topics.vendor, 2, 1),
                NewTopic(topics.events, 2, 1),
                NewTopic(topics.dlq, 1, 1, topic_configs=dlq_config),
            ]
        )
    finally:
        await admin.close()
    await asyncio.sleep(0.5)


@pytest.mark.parametrize(
    ("case", "dlq_config", "max_value"),
    [
        ("whole", {}, 1_000_000),
        ("cut", {}, 100_000),
        ("bare", {"max.message.bytes": "50000"}, 1_000_000),
    ],
)
async def test_a_refused_event_dead_letters_its_message(
    kafka_bootstrap: str, tmp_path: Path, case: str, dlq_config: dict[str, str], max_value: int
) -> None:
    topics = Topics.fresh(f"refused-{case}")
    await _create(kafka_bootstrap, topics, dlq_config)
    render_fn = render.get("canal-json")
    ctx = render.RenderContext()
    good = [(f"k{c.key}".encode(), render_fn(c, ctx)) for c in Workload(seed=23, tables=2).run(300)]
    big = _big_update()
    assert 600_000 < len(big) < 1_000_000  # the input topic takes it
    items = [*good[:150], (b"big-key", big), *good[150:]]
    positions = await kafka_tools.produce(kafka_bootstrap, topics.vendor, items)
    big_origin = positions[150]
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"batch_max_messages": 40, "dlq_max_value_bytes": max_value}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap))
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 2, timeout_s=90)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(positions) - {big_origin}, "good messages lost, or the refused one published"

    [letter] = await kafka_tools.read_all(kafka_bootstrap, topics.dlq)
    headers = records.header_map(letter.headers)
    assert (int(headers[records.H_PARTITION]), int(headers[records.H_OFFSET])) == big_origin
    assert headers[records.H_ERROR_CLASS] == "refused"
    assert "MessageSizeTooLargeError" in headers[records.H_REASON]
    assert NOTE[:16] not in headers[records.H_REASON]  # no row value in the reason
    assert all(len(value) <= letters.MAX_HEADER_BYTES for _, value in letter.headers)
    digest = hashlib.sha256(big).hexdigest()
    if case == "whole":
        assert (letter.key, letter.value) == (b"big-key", big)
        assert letters.H_VALUE_TRUNCATED not in headers
    elif case == "cut":
        assert (letter.key, letter.value) == (b"big-key", big[:max_value])
        assert headers[letters.H_VALUE_TRUNCATED] == "true"
        assert (headers[letters.H_VALUE_LENGTH], headers[letters.H_VALUE_SHA256]) == (str(len(big)), digest)
    else:
        assert letter.key is None and letter.value == b""
        assert headers[letters.H_VALUE_TRUNCATED] == "true"
        assert (headers[letters.H_VALUE_LENGTH], headers[letters.H_VALUE_SHA256]) == (str(len(big)), digest)
        assert headers[letters.H_KEY_LENGTH] == "7"
        assert headers[letters.H_KEY_SHA256] == hashlib.sha256(b"big-key").hexdigest()

    registry = normalizer.metrics.registry
    assert registry.get_sample_value("binlake_dead_letters_total", {"topic": topics.vendor, "reason": "refused"}) == 1
    assert (registry.get_sample_value("binlake_transaction_aborts_total", {"cause": "refused"}) or 0) >= 1
    assert not registry.get_sample_value("binlake_broker_errors_total", {"error": "MessageSizeTooLargeError"})
