"""Spark sink configuration: environment variables with the ``BINLAKE_SINK_`` prefix.

Same house style as ``shared.config.settings``: every field has a description,
``binlake sink`` options override the environment. Kafka connection settings
come from ``KafkaSettings`` (``BINLAKE_KAFKA_*``), shared with the normalizer.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Mapping
from typing import Annotated, Literal, TypeVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from binlake.shared.config.lists import comma_list
from binlake.spark_sink.layout import (
    CHANGELOG_DIR,
    DELETED_KEYS_DIR,
    HISTORY_DIR,
    MIRROR_DIR,
    QUARANTINE_DIR,
    TOMBSTONES_DIR,
    table_dir,
)

TriggerKind = Literal["processing-time", "available-now"]
PartitionColumn = Literal["source_table", "event_date"]
MirrorMode = Literal["follow", "inline"]
Queries = Literal["both", "changelog", "mirrors"]
T = TypeVar("T")

DEFAULT_PACKAGES: tuple[str, ...] = (
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
    "io.delta:delta-spark_4.2_2.13:4.4.0",
)
"""Resolved through ``spark.jars.packages``. See docs/spark-sink.md: the exact coordinates
(delta-spark_2.13 4.4.1) are not on Maven Central here. Events are decoded by binlake's own jar."""

DEFAULT_EXCLUDES: tuple[str, ...] = ()
DEFAULT_STANDALONE: tuple[str, ...] = ()


class SinkSettings(BaseSettings):
    """The Spark sink: the unified topic in, a changelog and mirror Delta tables out, exactly once."""

    model_config = SettingsConfigDict(env_prefix="BINLAKE_SINK_", extra="ignore")

    topic: str = Field("binlake.events", description="The unified topic of canonical Avro events to read.")
    lake_uri: str = Field(
        "./lake",
        description="Root URI (or local path) of the lake: changelog/, quarantine/ and mirror/<table>/ live below.",
    )
    checkpoint_uri: str | None = Field(
        None, description="Streaming checkpoint URI (offsets). Default: <lake_uri>/_checkpoints/sink."
    )
    app_id: str | None = Field(
        None,
        description="Delta txnAppId of the changelog query's commits (the mirror query's is this + '.mirrors'), "
        "used when its checkpoint is created. Default: a random id made with the checkpoint and kept in it "
        "(file _binlake_app_id), so a new checkpoint never reuses an id (a reused id with a reset checkpoint "
        "would skip batches). The sink refuses an id the lake already holds from another checkpoint.",
    )
    adopt_lake: bool = Field(
        False,
        description="Let a new, empty checkpoint take over a lake written from another checkpoint (deleted or "
        "moved): the sink reads the topic from BINLAKE_SINK_STARTING_OFFSETS (the earliest offset by default) "
        "and writes only what the lake lacks. "
        "Without it the sink refuses to start on such a lake. Never with two sinks on one lake.",
    )
    master: str = Field("local[*]", description="Spark master URL; local[*] runs Spark inside the sink process.")
    trigger: TriggerKind = Field(
        "processing-time", description="processing-time: run forever; available-now: process what is there, stop."
    )
    trigger_interval_s: float = Field(10.0, gt=0, description="Seconds between micro-batches (processing-time).")
    max_offsets_per_trigger: int | None = Field(
        None, ge=1, description="At most this many Kafka records per micro-batch (all topic partitions together)."
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        "earliest", description="Where a new checkpoint starts reading the topic."
    )
    shuffle_partitions: int = Field(8, ge=1, description="spark.sql.shuffle.partitions of the sink's session.")
    mirrors: MirrorMode = Field(
        "follow",
        description="follow: a second streaming query reads the changelog (Delta source) and MERGEs the mirrors "
        "and history tables on its own trigger, so the changelog stays fresh while MERGE costs are shared by "
        "larger batches; inline: the mirrors are MERGEd in the changelog's own micro-batch, before its commit.",
    )
    queries: Queries = Field(
        "both",
        description="Which of the sink's queries this process runs (mirrors=follow): both, in one Spark "
        "application; changelog, only the changelog query; mirrors, only the mirror query. Run one process of "
        "each, both with the same lake and checkpoint settings, to give each query its own driver and cores: "
        "the mirror process at a lower CPU priority (nice), or on other machines, cannot slow the changelog "
        "down. The mirrors process waits for the changelog to exist; it never creates it.",
    )
    mirror_trigger_interval_s: float = Field(
        30.0,
        gt=0,
        description="Seconds between the mirror query's micro-batches (mirrors=follow, processing-time).",
    )
    mirror_max_files_per_trigger: int | None = Field(
        None,
        ge=1,
        description="At most this many changelog files per mirror micro-batch (Delta's maxFilesPerTrigger; "
        "default: Delta's 1000). mirrors=follow only.",
    )
    mirror_checkpoint_uri: str | None = Field(
        None,
        description="Checkpoint URI of the mirror query (mirrors=follow). Default: <lake_uri>/_checkpoints/mirrors.",
    )
    table_parallelism: int = Field(
        4,
        ge=1,
        description="Mirror tables a micro-batch MERGEs at the same time (Spark runs their jobs side by side).",
    )
    mirror_defer_rows: int = Field(
        0,
        ge=0,
        description="A keyed table whose pending row events in a mirror batch (with those deferred before) are "
        "fewer than this is not MERGEd by that batch: its changes wait in the changelog (read by binlake current) "
        "until they are this many or mirror_defer_max_s old, so many small tables cost a commit each only now "
        "and then. Not for tables with a history table, key-less tables, or a batch's TRUNCATE and DDL. "
        "0: every mirror batch MERGEs every table it touches. mirrors=follow only.",
    )
    mirror_defer_max_s: float = Field(
        300.0,
        gt=0,
        description="The longest a deferred table's changes wait before a MERGE (mirror_defer_rows), also when no "
        "new batch comes: the sink then MERGEs them between batches.",
    )
    mirror_rewrite_bytes_per_key: int = Field(
        4096,
        ge=0,
        description="A keyed mirror holding at most this many bytes of files per key of a batch (counted as the "
        "batch's row events of the table) is rewritten whole with the batch applied, in one commit, instead of "
        "MERGEd: a rewrite costs what the mirror holds, a MERGE what the batch changes, and they break even near "
        "5 KiB a key on 2 cores (a small or busy table takes the rewrite). 0: always MERGE.",
    )
    merge_key_filter_max: int = Field(
        20_000,
        ge=0,
        description="A mirror MERGE names its batch's keys (up to this many distinct ones) in its condition, so it "
        "reads and joins only the mirror's rows with those keys, not every row of the files holding them "
        "(0: never). A batch with more keys, into a mirror of under 1 KiB per key, or with a float or time-zoned "
        "key, is MERGEd without.",
    )
    tombstone_compact_files: int = Field(
        200,
        ge=0,
        description="When the lake's tombstone table (deleted_keys/) holds more data files than this beyond one per "
        "source table, a mirror batch rewrites it: one row per deleted key (its newest delete), one file per source "
        "table. Every mirror batch that deletes adds a file per table it deletes from, and a table's tombstones are "
        "read in every batch that writes the table. 0: after every batch that leaves more.",
    )
    tombstone_retention_hours: float = Field(
        168.0,
        ge=0,
        description="How long a deleted key's tombstone (deleted_keys/) is kept after the sink recorded the delete: "
        "a change of the key older than its delete that arrives later than this is applied as if the key had never "
        "been deleted (counted in binlake_sink_changes_older_than_retention_total). Expired tombstones go at the "
        "first mirror batch after, at most an hour later. 0: kept until a TRUNCATE of their table.",
    )
    changelog_partition_by: Annotated[list[PartitionColumn], NoDecode] = Field(
        default_factory=lambda: list[PartitionColumn](["source_table", "event_date"]),
        description="Partition columns of the changelog table (source_table, event_date), fixed at creation.",
    )
    primary_keys: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Key columns for tables whose events name none, as JSON {"db.table or glob": ["id"]}.',
    )
    table_names: dict[str, str] = Field(
        default_factory=dict,
        description="Folder names of source tables' mirror, tombstones and history tables, as JSON "
        '{"db.table or glob": "name"}; "{table}" in a name stands for the last part of the source table name '
        "(shop.orders -> orders). Default: the source table name made path-safe. Read when a table is written: "
        "a new name for a table that already has a mirror starts a new mirror (the old one stays).",
    )
    partition_by: dict[str, list[str]] = Field(
        default_factory=dict,
        description='Partition columns of mirror and history tables, as JSON {"db.table or glob": ["column"]} '
        "(source columns), fixed when the table is created.",
    )
    history_tables: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Source tables (names or globs, comma-separated or JSON) that also get a history (SCD type 2) "
        "table under history/<table>/. Keyed tables only.",
    )
    type_widening: bool = Field(
        True, description="Widen a mirror column's type (int -> bigint, decimal precision) instead of a fallback."
    )
    deletion_vectors: bool = Field(
        True,
        description="Mirror and history tables use Delta deletion vectors: a MERGE writes the changed rows and marks "
        "the old ones deleted instead of rewriting every file holding a changed key (a batch then costs what it "
        "changes more than what the table holds). Readers need Delta's deletionVectors reader feature (Delta "
        "Spark 2.3+ and DuckDB's delta extension have it; binlake lake reads such tables). Existing tables get "
        "it at their next batch; false leaves tables that have it as they are.",
    )
    spark_packages: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_PACKAGES),
        description="Maven coordinates for spark.jars.packages (Kafka source, Delta).",
    )
    spark_extra_packages: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Maven coordinates added to BINLAKE_SINK_SPARK_PACKAGES: the connector of the lake's object "
        "store (the sink image sets org.apache.hadoop:hadoop-aws for s3a://, resolved into its Ivy cache).",
    )
    spark_jars_excludes: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDES),
        description="group:artifact pairs kept out of the spark.jars.packages resolution.",
    )
    spark_standalone_packages: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_STANDALONE),
        description="Maven coordinates resolved one by one, without dependencies, into the Ivy cache and "
        "added with spark.jars (for an artifact whose matching version is missing from the repository).",
    )
    spark_ivy_dir: str = Field(
        "~/.cache/binlake/ivy",
        description="Ivy cache of the Spark packages: a second start is offline (the sink image has them "
        "resolved in its own, /opt/binlake/ivy).",
    )
    spark_class_archive: bool = Field(
        True,
        description="Start the driver JVM from this machine's class-data-sharing archive of Spark's classes when "
        "one exists for this Java and these jars (made by `make`, or python -m binlake.spark_sink.class_archive, in "
        "the Ivy folder's cds/): about 4 s less per start and 4 s less on its first jobs. false: never.",
    )
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description='Extra Spark settings as JSON, e.g. {"spark.driver.memory": "2g"}.'
    )
    log_level: str = Field("WARN", description="Spark log level: DEBUG, INFO, WARN, ERROR.")
    metrics_port: int = Field(
        9109,
        ge=0,
        description="Port of the sink's /metrics, /healthz and /readyz (0: pick a free one). 9109, next to the "
        "normalizer's 9108, so both can run on one host.",
    )
    metrics_host: str = Field(
        "127.0.0.1",
        description="Address the sink's metrics/health server binds: this host only by default; 0.0.0.0 (every "
        "interface) where Prometheus or probes reach it from elsewhere (a container, a pod).",
    )
    stop_grace_s: float = Field(
        30.0,
        ge=0,
        description="On SIGTERM/SIGINT, wait up to this many seconds for the micro-batches in progress to end "
        "before stopping the queries (a batch cut short is safe: it runs again at the next start). Keep it "
        "below the pod's terminationGracePeriodSeconds.",
    )

    @model_validator(mode="after")
    def _no_renamed_variables(self) -> SinkSettings:
        # Earlier releases read the Ivy cache from BINLAKE_SPARK_IVY_DIR (and a bare SPARK_IVY_DIR) while the
        # reference documented BINLAKE_SINK_SPARK_IVY_DIR; an old name left set must not be ignored silently.
        if "BINLAKE_SPARK_IVY_DIR" in os.environ:
            raise ValueError("BINLAKE_SPARK_IVY_DIR is no longer read: set BINLAKE_SINK_SPARK_IVY_DIR instead")
        return self

    @model_validator(mode="after")
    def _queries_need_follow(self) -> SinkSettings:
        if self.mirrors == "inline" and self.queries == "mirrors":
            raise ValueError(
                "BINLAKE_SINK_QUERIES=mirrors needs BINLAKE_SINK_MIRRORS=follow (inline: the changelog query "
                "writes the mirrors itself, there is no mirror query)"
            )
        return self

    @model_validator(mode="after")
    def _extra_packages(self) -> SinkSettings:
        # Kept apart from spark_packages so an image (or a chart) adds its connectors without restating the
        # defaults; merged here, once, so the session reads one list.
        self.spark_packages = self.spark_packages + [
            p for p in self.spark_extra_packages if p not in self.spark_packages
        ]
        return self

    @field_validator(
        "changelog_partition_by",
        "history_tables",
        "spark_packages",
        "spark_extra_packages",
        "spark_jars_excludes",
        "spark_standalone_packages",
        mode="before",
    )
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return comma_list(value)

    # ------------------------------------------------------------ derived locations

    def lake(self) -> str:
        return self.lake_uri.rstrip("/")

    def changelog_uri(self) -> str:
        return f"{self.lake()}/{CHANGELOG_DIR}"

    def quarantine_uri(self) -> str:
        return f"{self.lake()}/{QUARANTINE_DIR}"

    def table_name(self, source_table: str) -> str:
        """The folder name of the source table's mirror, tombstones and history tables (``table_names``)."""
        configured = for_table(self.table_names, source_table)
        if configured is None:
            return table_dir(source_table)
        return table_dir(configured.replace("{table}", source_table.rsplit(".", 1)[-1]))

    def mirror_partition_by(self, source_table: str) -> list[str]:
        """The configured partition columns of the source table's mirror and history tables (``partition_by``)."""
        return list(for_table(self.partition_by, source_table) or [])

    def mirror_uri(self, source_table: str) -> str:
        return f"{self.lake()}/{MIRROR_DIR}/{self.table_name(source_table)}"

    def tombstones_uri(self) -> str:
        """The lake's one tombstone table: every mirror's deleted keys (``spark_sink.mirror.tombstones``)."""
        return f"{self.lake()}/{DELETED_KEYS_DIR}"

    def legacy_tombstones_uri(self, source_table: str) -> str:
        """A source table's own tombstone table, as releases before ``deleted_keys`` wrote it (read only)."""
        return f"{self.lake()}/{TOMBSTONES_DIR}/{self.table_name(source_table)}"

    def history_uri(self, source_table: str) -> str:
        return f"{self.lake()}/{HISTORY_DIR}/{self.table_name(source_table)}"

    def wants_history(self, source_table: str) -> bool:
        lowered = source_table.lower()
        return any(fnmatch.fnmatchcase(lowered, pattern.lower()) for pattern in self.history_tables)

    def checkpoint(self) -> str:
        return self.checkpoint_uri or f"{self.lake()}/_checkpoints/sink"

    def legacy_app_id(self) -> str:
        """The changelog query's app id as releases before the id file derived it (their checkpoints keep it)."""
        if self.app_id:
            return self.app_id
        return "binlake-sink-" + hashlib.sha256(self.checkpoint().encode()).hexdigest()[:16]

    def mirror_checkpoint(self) -> str:
        return self.mirror_checkpoint_uri or f"{self.lake()}/_checkpoints/mirrors"

    def legacy_mirror_app_id(self) -> str:
        """The mirror query's app id as releases before the id file derived it (their checkpoints keep it)."""
        if self.app_id:
            return f"{self.app_id}.mirrors"
        return "binlake-mirrors-" + hashlib.sha256(self.mirror_checkpoint().encode()).hexdigest()[:16]


def for_table(settings: Mapping[str, T], source_table: str) -> T | None:
    """A per-table setting: the entry named exactly ``source_table``, else the first glob matching it (any case)."""
    if source_table in settings:
        return settings[source_table]
    lowered = source_table.lower()
    for pattern, value in settings.items():
        if fnmatch.fnmatchcase(lowered, pattern.lower()):
            return value
    return None
