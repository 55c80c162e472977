"""When the chaos is over: wait until the pipeline has caught up, read from Kafka and the lake, not metrics.

The services' counters start again at each restart, so progress is read where it is kept:

1. every format's consumer group has committed every offset of its vendor topic (a committed offset
   means its batch's transaction, events and dead letters, is committed);
2. the changelog (and quarantine) holds as many rows as the unified topic has committed events (a
   ``read_committed`` count), read from the Delta log's statistics;
3. the mirror query's last committed batch has applied the changelog's newest version in full (its
   checkpoint's offset log, ``spark_sink.mirror.current_state.applied_by``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from binlake.shared.cli.demo.pipeline import UNIFIED, UNIFIED_PARTITIONS, VENDOR_PARTITIONS, count_committed
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.mirror.current_state import applied_by
from binlake.spark_sink.settings import SinkSettings
from tests.chaos.cast import Cast
from tests.support import kafka_tools
from tests.support.sink_checkpoint import batch_ids


@dataclass
class Lake:
    rows: int = 0
    """Changelog and quarantine rows."""
    version: int = -1
    """The changelog's newest Delta version."""
    applied: int = -1
    """The newest changelog version the mirror query applied in full."""


def lake_progress(lake: Path) -> Lake:
    reader = LakeReader(SinkSettings(lake_uri=str(lake)))
    try:
        found = Lake()
        changelog = reader.info("changelog", "changelog", reader.changelog())
        if changelog is not None:
            found.rows, found.version = changelog.rows, changelog.version
        quarantine = reader.info("quarantine", "quarantine", reader.quarantine())
        found.rows += quarantine.rows if quarantine is not None else 0
    finally:
        reader.close()
    checkpoint = lake / "_checkpoints" / "mirrors"
    committed = batch_ids(checkpoint / "commits")
    if committed:
        found.applied = applied_by((checkpoint / "offsets" / str(max(committed))).read_text())
    return found


async def wait(cast: Cast, formats: list[str], timeout_s: float, say: Callable[[str], None]) -> bool:
    """True once every stage has caught up; False after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    shown = 0.0
    groups_done: set[str] = set()
    target: int | None = None
    while time.monotonic() < deadline:
        for fmt in formats:
            if fmt not in groups_done and await kafka_tools.group_caught_up(
                cast.bootstrap, f"demo-{fmt}", f"vendor.{fmt}", VENDOR_PARTITIONS
            ):
                groups_done.add(fmt)
        if target is None and len(groups_done) == len(formats):
            target = await count_committed(cast.bootstrap, UNIFIED, UNIFIED_PARTITIONS)
        lake = lake_progress(cast.lake)
        if target is not None and lake.rows >= target and lake.applied >= lake.version >= 0:
            say(f"caught up: {target} events in the changelog, the mirrors at version {lake.version}")
            return True
        if time.monotonic() - shown > 15:
            shown = time.monotonic()
            say(
                f"catching up: groups {len(groups_done)}/{len(formats)} done, changelog {lake.rows}/"
                f"{target if target is not None else '?'} rows, mirrors at version {lake.applied} of {lake.version}"
            )
        await asyncio.sleep(2.0)
    return False
