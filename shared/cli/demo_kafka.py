"""The Kafka part of ``make demo``: vendor topics -> normalizers -> one unified topic, checked."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter
from pathlib import Path

from shared.codec import avro
from shared.config.settings import NormalizerSettings, kafka_settings
from shared.devbroker import broker
from shared.generate import render
from shared.generate.compare import check_event
from shared.generate.workload import Workload
from shared.kafka.runtime import Normalizer

FORMATS = {"canal-json": 3000, "debezium-json": 2000, "oms-default": 2000}


async def _pipeline(bootstrap: str) -> int:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics(
        [NewTopic(f"vendor.{fmt}", 3, 1) for fmt in FORMATS]
        + [NewTopic("binlake.events", 6, 1), NewTopic("binlake.dlq", 1, 1)]
    )
    await admin.close()
    await asyncio.sleep(0.5)

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5)
    await producer.start()
    changes = {}
    origin = {}
    for seed, (fmt, count) in enumerate(FORMATS.items(), start=1):
        workload = Workload(seed=seed, tables=3, database=fmt.replace("-", "_"))
        render_fn = render.get(fmt)
        batch = list(workload.run(count))
        futures = [
            await producer.send(f"vendor.{fmt}", render_fn(c, render.RenderContext()), key=str(c.key).encode())
            for c in batch
        ]
        for change, meta in zip(batch, await asyncio.gather(*futures), strict=True):
            origin[(f"vendor.{fmt}", meta.partition, meta.offset)] = (fmt, change)
        changes[fmt] = batch
        print(f"generated {count} {fmt} changes into vendor.{fmt}")
    await producer.stop()

    kafka = kafka_settings(bootstrap)
    normalizers = []
    for fmt in FORMATS:
        parse = render.parse_options(fmt)
        settings = NormalizerSettings(
            format=fmt,
            input_topics=[f"vendor.{fmt}"],
            group_id=f"demo-{fmt}",
            format_options={k: str(v) for k, v in parse.get("options", {}).items()},
            metrics_port=0,
            metrics_host="127.0.0.1",
        )
        normalizers.append(Normalizer(settings, kafka))
    started = time.monotonic()
    tasks = [asyncio.create_task(n.run()) for n in normalizers]

    reader = AIOKafkaConsumer(
        "binlake.events", bootstrap_servers=bootstrap, isolation_level="read_committed", auto_offset_reset="earliest"
    )
    await reader.start()
    events: list[ConsumerRecord[bytes, bytes]] = []
    expected = sum(FORMATS.values())
    while len(events) < expected and time.monotonic() - started < 180:
        for records in (await reader.getmany(timeout_ms=1000)).values():
            events.extend(records)
    elapsed = time.monotonic() - started
    end = await reader.end_offsets([TopicPartition("binlake.events", p) for p in range(6)])
    await reader.stop()
    for normalizer in normalizers:
        normalizer.stop()
    await asyncio.gather(*tasks)

    per_format: Counter[str] = Counter()
    wrong = 0
    for record in events:
        event = avro.decode(record.value or b"")
        fmt, change = origin[(event.origin.topic, event.origin.partition, event.origin.offset)]
        flags = render.flags(fmt)
        per_format[fmt] += 1
        problems = check_event(
            change,
            event,
            partial_before=flags.partial_before,
            partial_after=flags.partial_after,
            upsert=flags.upsert,
            old_null_as_empty=flags.old_null_as_empty,
        )
        wrong += bool(problems)
    log_end = sum(end.values())
    print(f"\nunified topic binlake.events: {len(events)} committed events in {elapsed:.1f}s (log end {log_end})")
    for fmt, count in FORMATS.items():
        print(f"  {fmt:16} {per_format[fmt]:>6} events for {count} changes")
    print(f"  events that differ from the ground truth: {wrong}")
    return 0 if wrong == 0 and len(events) == expected else 1


def kafka_demo(out: Path) -> int:
    if not (shutil.which("java") and shutil.which("mvn")):
        print("\n(skipping the Kafka part of the demo: it needs java and mvn on PATH)")
        return 0
    run_dir = out / "broker"
    print("\nstarting a local Apache Kafka broker (binlake dev broker)...")
    info = broker.start(run_dir)
    print(f"broker at {info.bootstrap} (Kafka {info.kafka_version})")
    try:
        return asyncio.run(_pipeline(info.bootstrap))
    finally:
        broker.stop(run_dir)
        print("broker stopped")
