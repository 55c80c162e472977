"""A dashboard beside the sink: a process reading every table's current state without Spark, in a loop.

``python -m tests.bench.current_reader TABLE...`` reads the tables with ``current_duckdb.CurrentStates`` (the
lake and mirror checkpoint from ``BINLAKE_SINK_*``), each read in full (``sink_sustained.duckdb_read_in_full``),
``BINLAKE_BENCH_SINK_READ_PAUSE_S`` after the previous read ended, until SIGTERM; one JSON line per read on
stdout: wall times started and ended, rows, the changelog version it holds. A process of its own, as a reader
is in a deployment: in the bench's process its Python work would hold the changelog writer's interpreter lock.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from types import FrameType

from tests.bench.sink_sustained import duckdb_read_in_full


def main(tables: list[str]) -> int:
    from binlake.spark_sink.mirror.current_duckdb import CurrentStates
    from binlake.spark_sink.settings import SinkSettings

    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    pause_s = float(os.environ.get("BINLAKE_BENCH_SINK_READ_PAUSE_S", "5"))
    states = CurrentStates(SinkSettings())
    try:
        while not stop.is_set():
            started = time.time()
            rows = sum(duckdb_read_in_full(relation) for relation in states.read(tables).values())
            line = {"started": started, "ended": time.time(), "rows": rows, "through": states.through}
            print(json.dumps(line), flush=True)
            stop.wait(pause_s)
    finally:
        states.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
