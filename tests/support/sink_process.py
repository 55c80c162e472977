"""The environment of a real ``binlake sink`` process started by a test or a benchmark."""

from __future__ import annotations

import json
import os

from binlake.spark_sink.settings import SinkSettings


def sink_env(settings: SinkSettings, bootstrap: str, **extra: str) -> dict[str, str]:
    """This process' environment without its ``BINLAKE_`` variables, then ``settings``' topic, lake and Spark
    session (master, shuffle partitions, Spark conf, Ivy cache), the processing-time trigger, ERROR logs and
    a free metrics port on loopback; ``extra`` (variable name -> value) last, over all of these."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(
        {
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "BINLAKE_SINK_TOPIC": settings.topic,
            "BINLAKE_SINK_LAKE_URI": settings.lake_uri,
            "BINLAKE_SINK_MASTER": settings.master,
            "BINLAKE_SINK_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
            "BINLAKE_SINK_SPARK_CONF": json.dumps(settings.spark_conf),
            "BINLAKE_SINK_SPARK_IVY_DIR": settings.spark_ivy_dir,
            "BINLAKE_SINK_TRIGGER": "processing-time",
            "BINLAKE_SINK_LOG_LEVEL": "ERROR",
            "BINLAKE_SINK_METRICS_PORT": "0",
            "BINLAKE_SINK_METRICS_HOST": "127.0.0.1",
        }
    )
    env.update(extra)
    return env
