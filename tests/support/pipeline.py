"""Generate -> Kafka -> normalizer -> unified topic, for one vendor format, on a real broker."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import ConsumerRecord

from binlake.shared.codec import avro
from binlake.shared.config.settings import NormalizerSettings, kafka_settings
from binlake.shared.event.model import ChangeEvent
from binlake.shared.generate import render
from binlake.shared.generate.workload import Change, Workload
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools


@dataclass
class Topics:
    vendor: str
    events: str
    dlq: str
    group: str

    @classmethod
    def fresh(cls, name: str) -> Topics:
        return cls(
            kafka_tools.unique(f"{name}-in"),
            kafka_tools.unique(f"{name}-events"),
            kafka_tools.unique(f"{name}-dlq"),
            kafka_tools.unique(f"{name}-group"),
        )

    def normalizer_env(self) -> dict[str, str]:
        """The topic and group settings of a ``binlake normalizer`` process on these topics."""
        return {
            "BINLAKE_INPUT_TOPICS": self.vendor,
            "BINLAKE_OUTPUT_TOPIC": self.events,
            "BINLAKE_DLQ_TOPIC": self.dlq,
            "BINLAKE_GROUP_ID": self.group,
        }


@dataclass
class Sent:
    changes: list[Change]
    by_origin: dict[tuple[int, int], Change] = field(default_factory=dict)


def normalizer_settings(format_id: str, topics: Topics, tmp: Path, zone_name: str) -> NormalizerSettings:
    # auto has no renderer of its own (its input mixes other formats') and takes no option.
    parse = render.parse_options(format_id) if format_id in render.RENDERERS else {}
    schema_file = None
    if "avro_schema" in parse:
        schema_file = tmp / f"{format_id}.avsc"
        schema_file.write_text(json.dumps(parse["avro_schema"]))
    source_table = parse.get("source_table")
    return NormalizerSettings(
        format=format_id,
        input_topics=[topics.vendor],
        output_topic=topics.events,
        dlq_topic=topics.dlq,
        group_id=topics.group,
        source_timezone=zone_name,
        topic_tables={topics.vendor: source_table} if source_table else {},
        format_options={k: str(v) for k, v in parse.get("options", {}).items()},
        avro_schema_file=str(schema_file) if schema_file else None,
        metrics_port=0,
        metrics_host="127.0.0.1",
        batch_max_messages=500,
    )


async def send_workload(
    bootstrap: str,
    format_id: str,
    topics: Topics,
    *,
    events: int,
    seed: int,
    zone_name: str,
    database: str = "shop",
    tables: int = 3,
) -> Sent:
    from binlake.shared.parsing.context import zone

    workload = Workload(seed=seed, tables=tables, database=database)
    changes = list(workload.run(events))
    render_fn = render.get(format_id)
    ctx = render.RenderContext(zone=zone(zone_name))
    items = [(f"{c.database}.{c.table}.{c.key}".encode(), render_fn(c, ctx)) for c in changes]
    positions = await kafka_tools.produce(bootstrap, topics.vendor, items)
    return Sent(changes, dict(zip(positions, changes, strict=True)))


async def normalize_workload(
    bootstrap: str, format_id: str, unified: str, tmp: Path, *, events: int, seed: int, database: str, tables: int
) -> None:
    """A generated workload (UTC) in ``format_id`` on a fresh vendor topic, through a real normalizer into the
    existing topic ``unified``; every message must be normalized (no dead letter)."""
    topics = Topics.fresh(format_id)
    topics.events = unified
    await kafka_tools.create_topics(bootstrap, {topics.vendor: 2, topics.dlq: 1})
    await send_workload(
        bootstrap, format_id, topics, events=events, seed=seed, zone_name="UTC", database=database, tables=tables
    )
    await run_normalizer_until_caught_up(bootstrap, normalizer_settings(format_id, topics, tmp, "UTC"), 2)
    assert await kafka_tools.read_all(bootstrap, topics.dlq) == []


async def run_normalizer_until_caught_up(bootstrap: str, settings: NormalizerSettings, partitions: int) -> Normalizer:
    normalizer = Normalizer(settings, kafka_settings(bootstrap))
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(bootstrap, settings.group_id, settings.input_topics[0], partitions)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)
    return normalizer


def decode(records: list[ConsumerRecord[bytes, bytes]]) -> list[tuple[ConsumerRecord[bytes, bytes], ChangeEvent]]:
    return [(record, avro.decode(record.value or b"")) for record in records]
