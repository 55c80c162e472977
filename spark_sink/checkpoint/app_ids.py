"""Each query's Delta transaction app id, born with its checkpoint and kept in it.

Delta skips a commit whose (``txnAppId``, ``txnVersion``) the table already
holds; the sink's ``txnVersion`` is the micro-batch id, which a new checkpoint
restarts from 0. So an app id must never outlive its checkpoint: were a new
checkpoint to reuse it (the earlier default, a hash of the checkpoint path,
did after an operator deleted the checkpoint), Delta would skip the new run's
batches 0..N as "already committed" and the checkpoint would move past records
never written.

The app id is therefore made when the checkpoint is (random, in the file
``_binlake_app_id`` of the checkpoint folder) and read from there on every
start. A checkpoint made by an earlier release (Spark state, no such file)
keeps the id that release derived, so an upgrade continues exactly where it
stopped. A mirror checkpoint the mirror writer without Spark wrote (binlake
before issue #46: the offset and commit logs of the mirror query's format,
no Spark ``metadata``, no id file) keeps that writer's app id, so the mirror
query continues its batches (``resolve``'s ``writer``).

Before a query starts, the lake tables it writes are checked: every sink app
id that committed to them must be this checkpoint's (or one it adopted). A
foreign id means the lake was written from another checkpoint (deleted,
moved, or another sink's): the sink refuses to start and says how to go on.
With ``adopt_lake`` a *new* checkpoint takes the lake over: it records the
foreign ids as adopted and runs under its own new id; the changelog query then
reads the topic from ``starting_offsets`` (the earliest offset by default) and
appends only what the changelog lacks, and the mirror query re-applies the
changelog, which changes nothing already applied (floors, origins and history
versions make it idempotent).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql import SparkSession

from binlake.shared.errors import BinlakeError
from binlake.spark_sink import delta
from binlake.spark_sink.hadoop_files import HadoopFiles

ID_FILE: Final = "_binlake_app_id"
MIRROR_WRITER_ID: Final = "binlake-mirror-writer"
"""The app id of the mirror writer without Spark (binlake before issue #46) where ``BINLAKE_SINK_APP_ID`` was not
set (``<app id>.mirrors`` where it was, the mirror query's own)."""
SUFFIXES: Final = (".truncate", ".compact", ".flush")
"""Suffixes the sink appends to a query's app id for extra commits of one batch (``mirror.apply.TRUNCATE_APP``,
``mirror.apply.COMPACT_APP``), and for the MERGEs of deferred tails between batches (``mirror.batch.FLUSH_APP``,
whose commits may carry another suffix after it)."""


class LakeOwnershipError(BinlakeError):
    """The lake holds commits of sink app ids this checkpoint does not know: refusing to write it."""


@dataclass(frozen=True, slots=True)
class CheckpointId:
    """What the checkpoint's ``_binlake_app_id`` file holds."""

    app_id: str
    adopted: tuple[str, ...] = ()
    """App ids of earlier checkpoints whose commits this one took over (``adopt_lake``)."""

    def to_json(self) -> str:
        return json.dumps({"app_id": self.app_id, "adopted": list(self.adopted)})

    @staticmethod
    def from_json(text: str) -> CheckpointId:
        data = json.loads(text)
        return CheckpointId(str(data["app_id"]), tuple(str(a) for a in data.get("adopted", [])))


@dataclass(slots=True)
class Resolved:
    """A query's app id and whether its checkpoint was made just now (the file is written by ``keep``)."""

    checkpoint: str
    ident: CheckpointId
    new: bool
    """The id file is still to be written (``keep``)."""
    fresh: bool = False
    """The checkpoint holds no Spark state yet: its query starts from nothing."""
    foreign: list[str] = field(default_factory=list)
    """App ids adopted by this start (``adopt_lake``)."""
    writer: bool = False
    """The checkpoint is the mirror writer's without Spark, continued under its app id (``resolve``)."""

    def known(self) -> set[str]:
        """The ids whose commits this checkpoint owns (its own and those it adopted)."""
        return {self.ident.app_id, *self.ident.adopted}


def base_id(app_id: str) -> str:
    """The query app id a table's txn app id belongs to (without the sink's per-step suffixes)."""
    stripped = True
    while stripped:
        stripped = False
        for suffix in SUFFIXES:
            if app_id.endswith(suffix):
                app_id, stripped = app_id[: -len(suffix)], True
    return app_id


def resolve(
    spark: SparkSession, checkpoint: str, *, configured: str | None, legacy: str, writer: str | None = None
) -> Resolved:
    """The checkpoint's app id: from its file; else, for a checkpoint an earlier release made, ``legacy``, or
    (``writer`` given: the mirror checkpoint) ``configured`` or ``writer`` where the mirror writer without Spark
    made it (offset log, no Spark ``metadata``); else a new one (``configured`` if set, otherwise random)."""
    files = HadoopFiles(spark)
    text = files.read(f"{checkpoint}/{ID_FILE}")
    # Spark writes ``metadata`` when a query is first started: the writer without Spark never did.
    logged, started = files.exists(f"{checkpoint}/offsets"), files.exists(f"{checkpoint}/metadata")
    writers = writer is not None and logged and not started
    if text is not None:
        ident = CheckpointId.from_json(text)
        if configured and configured != ident.app_id:
            raise LakeOwnershipError(
                f"BINLAKE_SINK_APP_ID is {configured!r} but checkpoint {checkpoint} was made with app id "
                f"{ident.app_id!r}: an app id belongs to its checkpoint; unset BINLAKE_SINK_APP_ID"
            )
        # A writer's checkpoint whose id file was written, but not its ``metadata`` (a start stopped in between).
        return Resolved(checkpoint, ident, new=False, writer=writers and ident.app_id == (configured or writer))
    if writers:
        return Resolved(checkpoint, CheckpointId(configured or writer or ""), new=True, writer=True)
    if logged or started:
        return Resolved(checkpoint, CheckpointId(legacy), new=True)  # an earlier release's checkpoint: its id
    return Resolved(checkpoint, CheckpointId(configured or f"binlake-{secrets.token_hex(8)}"), new=True, fresh=True)


def lake_app_ids(spark: SparkSession, uris: list[str]) -> dict[str, list[str]]:
    """Query app id -> the tables (of ``uris``) holding commits under it (read from each Delta log)."""
    found: dict[str, list[str]] = {}
    for uri in uris:
        for app_id in delta.transactions(spark, uri):
            found.setdefault(base_id(app_id), []).append(uri)
    return found


def check(spark: SparkSession, resolved: Resolved, tables: list[str], *, known: set[str], adopt: bool) -> None:
    """Refuse (``LakeOwnershipError``) when ``tables`` hold commits of app ids neither this checkpoint nor
    ``known`` (the sink's other query) owns; with ``adopt`` and a new checkpoint, adopt them instead."""
    ident = resolved.ident
    owned = {ident.app_id, *ident.adopted, *known}
    holders = lake_app_ids(spark, tables)
    foreign = sorted(app_id for app_id in holders if app_id not in owned)
    if resolved.fresh and ident.app_id in holders:
        raise LakeOwnershipError(
            f"the app id {ident.app_id!r} (BINLAKE_SINK_APP_ID) already committed to {holders[ident.app_id][0]} "
            f"from another checkpoint; under a new checkpoint ({resolved.checkpoint}) Delta would skip its "
            "batches as already written. Unset BINLAKE_SINK_APP_ID (each checkpoint then gets an id of its own)"
        )
    if not foreign:
        return
    where = sorted({uri for app_id in foreign for uri in holders[app_id]})
    if adopt and resolved.fresh:
        resolved.ident = CheckpointId(ident.app_id, (*ident.adopted, *foreign))
        resolved.foreign = foreign
        return
    shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    raise LakeOwnershipError(
        f"the lake tables {shown} hold commits of sink app id(s) {', '.join(foreign)}, which checkpoint "
        f"{resolved.checkpoint} (app id {ident.app_id}) does not know: the lake was written from another "
        "checkpoint (deleted, moved, or another sink's). A lake has one sink. To continue that run, point "
        "BINLAKE_SINK_CHECKPOINT_URI (and BINLAKE_SINK_MIRROR_CHECKPOINT_URI) at its checkpoints. If they are "
        "gone for good and no other sink writes this lake, start once with a new, empty checkpoint and "
        "BINLAKE_SINK_ADOPT_LAKE=true (binlake sink --adopt-lake): the sink then re-reads the topic from "
        "BINLAKE_SINK_STARTING_OFFSETS (the earliest offset by default) and writes only what the lake lacks."
    )


def keep(spark: SparkSession, resolved: Resolved) -> None:
    """Write a new checkpoint's id file (before its query starts: the id must exist before any commit)."""
    if resolved.new:
        HadoopFiles(spark).create(f"{resolved.checkpoint}/{ID_FILE}", resolved.ident.to_json())
        resolved.new = False
