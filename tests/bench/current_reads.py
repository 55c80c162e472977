"""A dashboard's current-state reads in a process of their own, for the sink bench's sustained part.

``python -m tests.bench.current_reads --out FILE TABLE...`` starts a Spark session built like the sink's
(``BINLAKE_SINK_*`` from the environment, as ``binlake current`` does), then reads every table's current state in
full (``current_state.current_tables``, the mirror merged with the changelog's tail) ``--pause`` seconds after
the previous read ended, until SIGTERM, appending one JSON line per completed read to ``FILE``:
``{"started": wall s, "ended": wall s, "rows": n}``. A line is written only once its read ended, so the
file never holds a read half done. ``sink_sustained.ReaderProcess`` runs it (at nice 10, as a reader on
other cores would not take the changelog's CPU) and reads the file back.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType


def main(argv: list[str] | None = None) -> int:
    from binlake.shared.config.settings import load
    from binlake.spark_sink.lake.cli import spark_session
    from binlake.spark_sink.mirror import current_state
    from binlake.spark_sink.settings import SinkSettings
    from tests.bench.sink_sustained import read_in_full

    parser = argparse.ArgumentParser(prog="python -m tests.bench.current_reads")
    parser.add_argument("tables", nargs="+", metavar="TABLE")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one per completed read")
    parser.add_argument("--pause", type=float, default=5.0, help="seconds between one read's end and the next")
    args = parser.parse_args(argv)
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    logging.getLogger().setLevel(logging.ERROR)
    settings = load(SinkSettings)
    with spark_session(settings, app_name="bench-current-reads", command="current_reads", verbose=False) as spark:
        args.out.write_text("")  # the session is up: the bench waits for this file before it starts its input
        while not stop.is_set():
            started = time.time()
            rows = sum(read_in_full(f) for f in current_state.current_tables(spark, settings, args.tables).values())
            with args.out.open("a") as out:
                out.write(json.dumps({"started": started, "ended": time.time(), "rows": rows}) + "\n")
            stop.wait(args.pause)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
