"""``binlake dev broker start|stop|status``: a local Apache Kafka broker, or cluster, for development.

``start`` prints the bootstrap address (``127.0.0.1:PORT``) on stdout once the
broker answers; the run folder (``--run-dir``, default ``$BINLAKE_RUN_DIR`` or
``./run/broker``) holds its config, data, ``broker.log`` and ``broker.json``.

``start --nodes 3`` starts a cluster instead: three combined broker+controller
nodes in ``node-1`` ... ``node-3`` of the run folder, internal topics with three
replicas and min ISR 2 (shared/devbroker/cluster.py); it prints every node's
address. ``stop --node N`` stops one node (a controlled shutdown: its leaders move
to the others) and ``start --node N`` starts it again on its data: a broker
failure, on purpose (``--node 1,2,3`` for several; a stopped cluster must get a
majority back at once). ``start`` without ``--node`` formats anew. ``status``
prints JSON on stdout (for a cluster: the nodes, every partition's leader,
replicas and ISR) and, for a cluster, a table on stderr; it exits 0 when every
node answers, 3 otherwise.

A SIGTERM or Ctrl-C while ``start`` waits stops what it launched before it exits:
no broker is left running that no ``broker.json`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from dataclasses import asdict
from pathlib import Path

from binlake.shared.devbroker import broker, cluster, interrupts
from binlake.shared.devbroker.broker import BrokerError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dev_command", required=True, metavar="TOOL")
    tool = sub.add_parser("broker", help="a local Kafka broker or cluster (KRaft)")
    tool.add_argument("action", choices=("start", "stop", "status"))
    tool.add_argument(
        "--run-dir",
        type=Path,
        default=Path(os.environ.get("BINLAKE_RUN_DIR", "run/broker")),
        help="the broker's folder (default $BINLAKE_RUN_DIR or ./run/broker)",
    )
    tool.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the broker to answer")
    tool.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="start: a cluster of N broker+controller nodes (RF 3, min ISR 2 from 3 nodes); default 1, or the "
        "run folder's cluster",
    )
    tool.add_argument(
        "--node",
        type=_node_list,
        metavar="N[,M...]",
        help="start/stop: only these nodes, on their data (a cluster's 1..N; a single broker is node 1). Start a "
        "majority together: a node answers once a majority of the controllers is up",
    )


def _node_list(text: str) -> list[int]:
    try:
        nodes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"node ids, comma-separated: {text!r}") from None
    if not nodes or min(nodes) < 1:
        raise argparse.ArgumentTypeError(f"node ids start at 1: {text!r}")
    return nodes


def run(args: argparse.Namespace) -> int:
    run_dir: Path = args.run_dir.resolve()
    if args.action == "start":
        try:
            with interrupts.interruptible():
                return _start(run_dir, args)
        except interrupts.Interrupted as stop:
            print(f"binlake dev broker: {stop} while starting; stopped what this start launched", file=sys.stderr)
            # A one-shot command ends by the signal's default action (status -15), as the others do.
            signal.signal(stop.signum, signal.SIG_DFL)
            signal.raise_signal(stop.signum)
            return 128 + stop.signum
    if args.action == "stop":
        return _stop(run_dir, args.node)
    if cluster.read_layout(run_dir) is not None:
        return _cluster_status(run_dir)
    recorded, answering = broker.status(run_dir)
    report = {
        "running": answering,
        "bootstrap": recorded.bootstrap if recorded else None,
        "pid": recorded.pid if recorded else None,
    }
    print(json.dumps(report))
    return 0 if answering else 3


def _start(run_dir: Path, args: argparse.Namespace) -> int:
    layout = cluster.read_layout(run_dir)
    nodes = args.nodes if args.nodes is not None else (layout.nodes if layout is not None else 1)
    if args.node is not None:
        if layout is None:
            if args.node != [1]:
                raise BrokerError(f"a single broker is node 1; {run_dir} holds no cluster")
            info = broker.restart(run_dir, timeout_s=args.timeout)
            print(info.bootstrap)
            return 0
        started = cluster.start_nodes(run_dir, args.node, timeout_s=args.timeout)
        print(cluster.bootstrap_of(node.port for node in cluster.status(run_dir).nodes))
        for node, info in zip(args.node, started, strict=True):
            print(f"node {node} started: pid {info.pid}, port {info.port}", file=sys.stderr)
        return 0
    if nodes == 1:
        if layout is not None:
            cluster.forget(run_dir)  # a single broker where a stopped cluster was
        info = broker.start(run_dir, timeout_s=args.timeout)
        print(info.bootstrap)
        print(f"broker pid {info.pid}, Kafka {info.kafka_version}, log {run_dir / 'broker.log'}", file=sys.stderr)
        return 0
    infos = cluster.start(run_dir, nodes=nodes, timeout_s=args.timeout)
    print(cluster.bootstrap_of(info.port for info in infos))
    for node, info in enumerate(infos, start=1):
        log = Path(info.run_dir) / "broker.log"
        print(f"node {node}: pid {info.pid}, port {info.port}, Kafka {info.kafka_version}, log {log}", file=sys.stderr)
    return 0


def _stop(run_dir: Path, nodes: list[int] | None) -> int:
    if cluster.read_layout(run_dir) is None:
        if nodes not in (None, [1]):
            raise BrokerError(f"a single broker is node 1; {run_dir} holds no cluster")
        stopped = broker.stop(run_dir)
        print("stopped" if stopped else "no broker was running", file=sys.stderr)
        return 0
    if nodes is not None:
        for node in nodes:
            was_running = cluster.stop_node(run_dir, node)
            print(f"node {node} stopped" if was_running else f"node {node} was not running", file=sys.stderr)
        return 0
    nodes = cluster.stop(run_dir)
    print(f"stopped nodes {nodes}" if nodes else "no node was running", file=sys.stderr)
    return 0


def _cluster_status(run_dir: Path) -> int:
    state = cluster.status(run_dir)
    known = state.metadata
    report = {
        "running": state.running,
        "bootstrap": state.bootstrap,
        "nodes": [asdict(node) for node in state.nodes],
        "brokers": sorted(known.brokers) if known else [],
        "topics": {
            name: [
                {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isr)}
                for p in partitions
            ]
            for name, partitions in sorted(known.topics.items())
        }
        if known
        else {},
    }
    print(json.dumps(report))
    lines = [f"node {n.node}  127.0.0.1:{n.port}  {_node_state(n)}" for n in state.nodes]
    if known:
        lines.append(f"{'topic':40} {'part':>4}  leader  replicas  isr")
        for name, partitions in sorted(known.topics.items()):
            for p in partitions:
                replicas, isr = ",".join(map(str, p.replicas)), ",".join(map(str, p.isr))
                lines.append(f"{name:40} {p.partition:>4}  {p.leader:>6}  {replicas:8}  {isr}")
    print("\n".join(lines), file=sys.stderr)
    return 0 if state.running else 3


def _node_state(node: cluster.NodeStatus) -> str:
    if node.pid is None:
        return "stopped"
    return f"up (pid {node.pid})" if node.answering else f"not answering (pid {node.pid})"
