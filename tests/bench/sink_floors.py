"""What the sink cannot do faster than on this machine: the costs its design has to pay, measured alone.

The throughput target compares the sink with a bare copy of the raw bytes.
Two costs of the sink's required work have nothing to do with how well it is
written, and this part of the bench measures them on the same SparkSession:

- ``decode_s``: decoding the run's events from Avro (the sink's ``decode``,
  binlake's ``EventDecoder``) beyond reading them from Kafka: reading and
  decoding the topic into Spark's no-op sink, minus reading it alone (medians
  of ``ROUNDS``). The changelog must hold decoded events, so it pays at least
  the bare copy plus this.
- ``merge_s``: one Delta MERGE whose own work is negligible (3 columns, 3,000
  source rows into a 10,000-row table: an upsert on the key), the median of
  ``MERGES`` after ``WARMUP_MERGES`` warm-ups: the fixed cost of a MERGE
  (planning, snapshot, file scan, commit). Each mirror batch MERGEs every
  table it touches, so the mirrors of one batch cost at least ``tables x
  merge_s``, divided by the cores when the tables run side by side.

``sink_floor_s`` = bare copy + ``decode_s`` + tables x ``merge_s`` / cores is
a lower bound of the sink's time for the run (everything else free, one
mirror batch, perfect parallelism), and ``best_ratio`` = bare copy /
``sink_floor_s`` the best ratio any implementation of this design could reach.
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Any, Final

from binlake.shared.config.settings import KafkaSettings

ROUNDS: Final = 3
WARMUP_MERGES: Final = 3
MERGES: Final = 8
TARGET_ROWS: Final = 10_000
SOURCE_ROWS: Final = 3_000


def _timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def decode_seconds(spark: Any, kafka: KafkaSettings, topic: str) -> dict[str, float]:
    """Median seconds to read the topic, and to read and decode it, into the no-op sink."""
    from binlake.spark_sink.events.source import decode, kafka_options

    def raw() -> Any:
        reader = spark.read.format("kafka").options(**kafka_options(kafka)).option("subscribe", topic)
        return reader.option("startingOffsets", "earliest").option("endingOffsets", "latest").load()

    def read_only() -> None:
        raw().write.format("noop").mode("overwrite").save()

    def read_and_decode() -> None:
        decode(raw()).write.format("noop").mode("overwrite").save()

    read_s = statistics.median(_timed(read_only) for _ in range(ROUNDS))
    decoded_s = statistics.median(_timed(read_and_decode) for _ in range(ROUNDS))
    return {"read_s": round(read_s, 3), "read_decode_s": round(decoded_s, 3)}


def merge_seconds(spark: Any, lake: Path) -> float:
    """Median seconds of a MERGE with negligible work of its own (its fixed cost)."""
    from delta.tables import DeltaTable

    path = str(lake / "merge-floor")
    spark.range(TARGET_ROWS).selectExpr("id", "CAST(id AS string) AS v", "id * 2 AS w").write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    seconds = []
    for i in range(WARMUP_MERGES + MERGES):
        first = i * 100
        source = spark.range(first, first + SOURCE_ROWS).selectExpr("id", "concat('x', id) AS v", "id AS w")
        merge = (
            table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll()
        )
        seconds.append(_timed(merge.execute))
    shutil.rmtree(path, ignore_errors=True)
    return statistics.median(seconds[WARMUP_MERGES:])


def floors(
    spark: Any, kafka: KafkaSettings, topic: str, lake: Path, *, bare_s: float, tables: int, cores: int
) -> dict[str, Any]:
    """The measured costs and the lower bound they put on the sink's time for the run (see the module doc)."""
    decoding = decode_seconds(spark, kafka, topic)
    decode_s = max(0.0, decoding["read_decode_s"] - decoding["read_s"])
    merge_s = merge_seconds(spark, lake)
    floor_s = bare_s + decode_s + tables * merge_s / cores
    return {
        **decoding,
        "decode_s": round(decode_s, 3),
        "merge_s": round(merge_s, 3),
        "tables": tables,
        "cores": cores,
        "sink_floor_s": round(floor_s, 3),
        "best_ratio": round(bare_s / floor_s, 3),
    }
