"""``binlake current``: a source table as the changelog holds it now (``current_state``, Spark), printed exactly."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.spark_sink import delta, job
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.mirror.current_cli import _collected, _json_value, _text, current
from tests.sink.test_sink_semantics import ROUND_1
from tests.support import kafka_tools
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

__all__ = ["spark"]


@pytest.mark.unit
def test_lake_current_prints_values_exactly() -> None:
    assert _json_value(Decimal("99999999999999999999.000001")) == "99999999999999999999.000001"
    assert _json_value(2**64 - 1) == str(2**64 - 1)
    assert _json_value(2**53) == 2**53
    assert _json_value(True) is True
    assert _json_value(b"\x00\xff") == "0x00ff"
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert _json_value(when) == "2024-01-02T03:04:05.000006+00:00"
    assert _text(dt.date(2024, 2, 29)) == "2024-02-29"


@pytest.mark.integration
def test_instants_are_collected_in_utc_to_the_microsecond(spark: SparkSession) -> None:
    frame = spark.sql("SELECT TIMESTAMP'2024-01-02 03:04:05.000006 UTC' AS t, CAST(NULL AS TIMESTAMP) AS n, 1 AS i")
    assert _collected(frame) == (["t", "n", "i"], [(dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC), None, 1)])


@pytest.mark.integration
@pytest.mark.asyncio
async def test_binlake_current_prints_a_table_as_the_changelog_holds_it(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = kafka_tools.unique("current")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in ROUND_1])
    settings = sink_settings_for_tests(topic=topic, lake_uri=str(tmp_path / "lake"), queries="changelog")
    # The changelog only, no mirror yet: all of it is the tail the read folds.
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))
    keyed = next(e.source.table for e in ROUND_1)
    table = f"{ROUND_1[0].source.database}.{keyed}"
    out = io.StringIO()
    assert current(spark, settings, table, as_json=True, out=out) == 0
    document = json.loads(out.getvalue())
    assert document["changelog_version"] == delta.current_version(spark, settings.changelog_uri())
    rows = [dict(zip(document["columns"], row, strict=True)) for row in document["rows"]]
    # id 1 updated (a unknown in the update: kept), 2 deleted, 5 moved to 6
    assert sorted((r["id"], r["a"], r["b"]) for r in rows) == [(1, 1, "y"), (6, 6, "k")]
    out = io.StringIO()
    current(spark, settings, table, sql="SELECT count(*) AS n, max(id) AS top FROM current", out=out)
    assert out.getvalue().splitlines()[:2] == ["n  top", "2    6"]
    out = io.StringIO()
    current(spark, settings, table, limit=1, out=out)
    assert out.getvalue().splitlines()[-1].startswith("(1 rows;")
    with pytest.raises(LakeError, match=r"holds nothing of source table nowhere\.t"):
        current(spark, settings, "nowhere.t", out=io.StringIO())
    with pytest.raises(LakeError, match="no changelog"):
        current(spark, sink_settings_for_tests(lake_uri=str(tmp_path / "none")), table, out=io.StringIO())

    # The command itself: its own Spark session (built like the sink's), the JVM's output kept out of stdout.
    command = binlake_command(
        "current", table, "--lake", settings.lake_uri, "--sql", "SELECT max(id) AS top FROM current"
    )
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, "--json"],
        env=sink_env(settings, kafka_bootstrap),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["rows"] == [[6]]
