"""The Spark sink on a lake the sink's writers without Spark wrote (binlake before issue #46).

**The changelog.** The changelog writer without Spark kept no checkpoint: each of its commits recorded, per Kafka
partition, the next offset to read as a Delta transaction (``txn``) action
with app id ``<app id>/<topic>/<partition>`` in the changelog, and the
quarantine's progress under ``<app id>/<topic>/<partition>/quarantine`` (in
the changelog) and ``<app id>/<topic>/<partition>`` (in the quarantine, whose
commit came first). A changelog query under a new checkpoint
(``app_ids.Resolved.fresh``) whose tables hold no other unknown app id
continues from there (``continue_writer``): it takes those ids over as adopted
(kept in its checkpoint's id file, so later starts know them) and starts each
partition at the next offset the changelog's transaction records, a
partition it records none of at the earliest offset (the writer committed
nothing of it). Rejects the quarantine holds past that offset (a writer batch
killed between its two commits) are read again and found there: the batch
appends only what neither table holds (``changelog.batch``).

**The mirrors.** The mirror writer without Spark logged its batches in the
mirror checkpoint as the mirror query's Delta source does (``offsets/<batch
id>``, ``commits/<batch id>``), under its own app id, but never wrote the
``metadata`` file Spark makes when a query first starts, nor the session
settings Spark records with each batch's offsets: ``app_ids.resolve`` finds
such a checkpoint by its missing ``metadata`` and keeps the writer's app id;
``take_over_mirror_checkpoint`` then gives its last two offset entries the
shuffle partitions Spark reads back (it refuses a checkpoint whose last
entries lack them) and writes ``metadata`` last. The mirror query then runs
the writer's logged but uncommitted batch again with its range (a table
holding the batch's transaction is skipped) and continues with the next
batch id. The writer kept its checkpoint on a local path, so the entries are
replaced there, each whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from dataclasses import dataclass
from typing import Final

from aiokafka.admin import AIOKafkaAdminClient
from pyspark.sql import SparkSession

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.kafka.client import connection_kwargs
from binlake.spark_sink import delta
from binlake.spark_sink.checkpoint.app_ids import CheckpointId, Resolved, base_id
from binlake.spark_sink.local_files import local_root

_TXN: Final = re.compile(r"(?P<app>.+)/(?P<topic>[^/]+)/(?P<partition>[0-9]+)(?P<quarantine>/quarantine)?")
EARLIEST: Final = -2
"""Spark's Kafka source's offset for "the partition's earliest"."""
SHUFFLE_PARTITIONS: Final = "spark.sql.shuffle.partitions"


@dataclass(frozen=True, slots=True)
class WriterStart:
    """Where the changelog query starts on the writer's lake."""

    offsets: dict[int, int]
    """Per partition the writer's changelog records, the next offset to read."""
    adopted: list[str]
    """The writer's transaction app ids, now the checkpoint's."""

    def starting_offsets(self, topic: str, partitions: list[int]) -> str:
        """Spark's ``startingOffsets`` (every partition of the topic: ``EARLIEST`` where the writer recorded none)."""
        return json.dumps({topic: {str(p): self.offsets.get(p, EARLIEST) for p in sorted(partitions)}})


def writer_partition(app_id: str, topic: str) -> tuple[int, bool] | None:
    """(partition, whether it is the quarantine's) of a writer's transaction app id for ``topic``; None if
    ``app_id`` is none."""
    found = _TXN.fullmatch(app_id)
    if found is None or found["topic"] != topic:
        return None
    return int(found["partition"]), found["quarantine"] is not None


def continue_writer(
    spark: SparkSession, resolved: Resolved, changelog: str, quarantine: str, *, topic: str, known: set[str]
) -> WriterStart | None:
    """The writer's progress, where ``resolved`` is a new checkpoint and the changelog and quarantine hold no
    unknown app id (neither ``resolved``'s nor ``known``) but the writer's for ``topic``; the checkpoint then
    adopts them. None otherwise (nothing to continue, or another sink's commits: ``app_ids.check`` says)."""
    if not resolved.fresh:
        return None
    owned = resolved.known() | known
    changelog_txns = delta.transactions(spark, changelog) if delta.exists(spark, changelog) else {}
    quarantine_txns = delta.transactions(spark, quarantine) if delta.exists(spark, quarantine) else {}
    foreign = sorted({a for a in [*changelog_txns, *quarantine_txns] if base_id(a) not in owned})
    if not foreign or any(writer_partition(a, topic) is None for a in foreign):
        return None
    offsets: dict[int, int] = {}
    for app_id, version in changelog_txns.items():
        found = writer_partition(app_id, topic)
        if found is not None and not found[1]:
            offsets[found[0]] = version
    resolved.ident = CheckpointId(resolved.ident.app_id, (*resolved.ident.adopted, *foreign))
    return WriterStart(offsets, foreign)


def topic_partitions(kafka: KafkaSettings, topic: str) -> list[int]:
    """The topic's partitions, from the brokers' metadata."""

    async def described() -> list[int]:
        admin = AIOKafkaAdminClient(**connection_kwargs(kafka))
        await admin.start()
        try:
            found = await admin.describe_topics([topic])
        finally:
            await admin.close()
        return sorted(int(p["partition"]) for d in found if d.get("topic") == topic for p in d.get("partitions") or [])

    partitions = asyncio.run(described())
    if not partitions:
        raise RuntimeError(f"topic {topic} does not exist (or has no partitions): BINLAKE_SINK_TOPIC names it")
    return partitions


def take_over_mirror_checkpoint(spark: SparkSession, resolved: Resolved) -> None:
    """Make the mirror writer's checkpoint (``Resolved.writer``) one the mirror query starts from (module doc);
    after ``app_ids.keep``, so its id file says whose it is before Spark's ``metadata`` hides the writer's mark.
    Each step can be done again: a start stopped halfway is finished by the next."""
    if not resolved.writer:
        return
    root = local_root(resolved.checkpoint)
    if root is None:  # the writer refused any other checkpoint: not the writer's
        raise RuntimeError(f"the mirror checkpoint {resolved.checkpoint} has offsets but no metadata file")
    partitions = str(spark.conf.get(SHUFFLE_PARTITIONS))
    offsets = sorted((int(p.name) for p in (root / "offsets").iterdir() if p.name.isdigit()), reverse=True)
    for batch_id in offsets[:2]:
        path = root / "offsets" / str(batch_id)
        lines = path.read_text().splitlines()
        metadata = json.loads(lines[1])
        if metadata.get("conf", {}).get(SHUFFLE_PARTITIONS) is None:
            metadata["conf"] = {**metadata.get("conf", {}), SHUFFLE_PARTITIONS: partitions}
            lines[1] = json.dumps(metadata, separators=(",", ":"))
            _replace(path, "\n".join(lines))
    _replace(root / "metadata", json.dumps({"id": str(uuid.uuid4())}))
    resolved.writer = False


def _replace(path: os.PathLike[str], text: str) -> None:
    """Write ``path`` whole (a temporary file renamed over it: never half a file)."""
    temporary = f"{os.fspath(path)}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "w") as file:
        file.write(text)
    os.replace(temporary, path)
