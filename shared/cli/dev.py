"""``binlake dev broker start|stop|status``: a local Apache Kafka broker for development.

``start`` prints the bootstrap address (``127.0.0.1:PORT``) on stdout once the
broker answers; the run folder (``--run-dir``, default ``$BINLAKE_RUN_DIR`` or
``./run/broker``) holds its config, data, ``broker.log`` and ``broker.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from binlake.shared.devbroker import broker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dev_command", required=True, metavar="TOOL")
    tool = sub.add_parser("broker", help="a local single-node Kafka broker (KRaft)")
    tool.add_argument("action", choices=("start", "stop", "status"))
    tool.add_argument(
        "--run-dir",
        type=Path,
        default=Path(os.environ.get("BINLAKE_RUN_DIR", "run/broker")),
        help="the broker's folder (default $BINLAKE_RUN_DIR or ./run/broker)",
    )
    tool.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the broker to answer")


def run(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir.resolve()
    if args.action == "start":
        info = broker.start(run_dir, timeout_s=args.timeout)
        print(info.bootstrap)
        print(f"broker pid {info.pid}, Kafka {info.kafka_version}, log {run_dir / 'broker.log'}", file=sys.stderr)
        return 0
    if args.action == "stop":
        stopped = broker.stop(run_dir)
        print("stopped" if stopped else "no broker was running", file=sys.stderr)
        return 0
    recorded, answering = broker.status(run_dir)
    report = {
        "running": answering,
        "bootstrap": recorded.bootstrap if recorded else None,
        "pid": recorded.pid if recorded else None,
    }
    print(json.dumps(report))
    return 0 if answering else 3
