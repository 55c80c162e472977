"""A development Kafka cluster: N combined broker+controller KRaft nodes on loopback, from the dev broker's jars.

Production Kafka is a cluster, and the faults only a cluster has (a leader moving, the
ISR below ``min.insync.replicas``, the transaction coordinator moving) need one to be
tried. Each node is a dev broker of its own (shared/devbroker/broker.py) in
``<run_dir>/node-<id>``: its config, data, log and ``broker.json``, so stopping one
node (``stop_node``) or starting it again on its data (``start_nodes``) is the single
broker's stop and restart. ``cluster.json`` in the run folder records the layout. Every
node votes in a static controller quorum (``controller.quorum.voters``): a majority
must be up for the cluster to act, so one node of three can be down.

Internal topics (group offsets, transaction state) have replication factor 3 and min
ISR 2, as do topics created without a factor (``default.replication.factor``): with a
node down, acks=all writes still succeed, with two down they fail with
``NotEnoughReplicas`` rather than being acknowledged by one copy. Heaps are small (many
JVMs share a developer's machine or CI's two cores). The start waits until every node
answers and the controllers list all of them as brokers (unfenced), so topics with
three replicas can be created at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from binlake.shared.devbroker import broker, metadata
from binlake.shared.devbroker.broker import BrokerError, BrokerInfo

LAYOUT_FILE: Final = "cluster.json"
DEFAULT_HEAP: Final = "384m"
"""Per node: plenty for development traffic; three nodes stay near a single default Kafka's 1 GB."""


@dataclass(frozen=True, slots=True)
class Layout:
    """What ``cluster.json`` records: the nodes and how they were started."""

    nodes: int
    heap: str
    cluster_id: str
    kafka_version: str

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))


@dataclass(frozen=True, slots=True)
class NodeStatus:
    node: int
    port: int
    pid: int | None
    """The recorded process while it runs; None for a stopped node."""
    answering: bool


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    nodes: list[NodeStatus]
    metadata: metadata.Metadata | None
    """As an answering node sees the cluster; None when no node answers."""

    @property
    def bootstrap(self) -> str:
        return bootstrap_of(node.port for node in self.nodes)

    @property
    def running(self) -> bool:
        return all(node.answering for node in self.nodes)


def bootstrap_of(ports: Iterable[int]) -> str:
    """``127.0.0.1:P1,127.0.0.1:P2,...``: a client bootstraps from whichever node answers."""
    return ",".join(f"127.0.0.1:{port}" for port in ports)


def node_dir(run_dir: Path, node: int) -> Path:
    return run_dir / f"node-{node}"


def read_layout(run_dir: Path) -> Layout | None:
    path = run_dir / LAYOUT_FILE
    if not path.exists():
        return None
    return Layout(**json.loads(path.read_text()))


def node_properties(folder: Path, node: int, ports: dict[int, tuple[int, int]]) -> str:
    """One node's ``server.properties``; ``ports``: node id -> (client port, controller port) of every node."""
    port, controller_port = ports[node]
    voters = ",".join(f"{other}@127.0.0.1:{controller}" for other, (_, controller) in sorted(ports.items()))
    replicas = min(3, len(ports))
    min_isr = max(1, replicas - 1)
    return f"""process.roles=broker,controller
node.id={node}
controller.quorum.voters={voters}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={folder / "data"}
num.partitions=1
auto.create.topics.enable=false
default.replication.factor={replicas}
min.insync.replicas={min_isr}
offsets.topic.replication.factor={replicas}
offsets.topic.num.partitions=4
transaction.state.log.replication.factor={replicas}
transaction.state.log.min.isr={min_isr}
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor={replicas}
share.coordinator.state.topic.min.isr={min_isr}
group.initial.rebalance.delay.ms=0
"""


def start(run_dir: Path, *, nodes: int = 3, timeout_s: float = 120.0, heap: str = DEFAULT_HEAP) -> list[BrokerInfo]:
    """Format a new cluster of ``nodes`` nodes and start it; return once every node is a registered broker.

    A cluster already running in ``run_dir`` is returned as it is; one with nodes stopped is an error (start
    them with ``start_nodes``, or ``stop`` it first). Anything else in the folder is replaced.
    """
    if nodes < 1:
        raise BrokerError("a cluster needs at least one node")
    run_dir.mkdir(parents=True, exist_ok=True)
    layout = read_layout(run_dir)
    if layout is not None:
        running = _running(run_dir, layout)
        if len(running) == layout.nodes and layout.nodes == nodes:
            return list(running.values())
        if running:
            raise BrokerError(
                f"{run_dir} holds a {layout.nodes}-node cluster with {len(running)} node(s) running: start the "
                "stopped ones with --node N, or stop it first"
            )
    else:
        single = broker.read_state(run_dir)
        if single is not None and broker.is_alive(single.pid):
            raise BrokerError(f"a single dev broker runs in {run_dir}: stop it first")
    libs = broker.ensure_jars()
    _remove(run_dir)
    chosen = broker._distinct_ports(2 * nodes)
    ports = {node: (chosen[2 * node - 2], chosen[2 * node - 1]) for node in range(1, nodes + 1)}
    layout = Layout(nodes, heap, broker._cluster_id(), broker.kafka_version())
    formats: list[subprocess.Popen[bytes]] = []
    try:
        for node in layout.node_ids:
            folder = node_dir(run_dir, node)
            folder.mkdir()
            (folder / "server.properties").write_text(node_properties(folder, node, ports))
            (folder / "log4j2.xml").write_text(broker._LOG4J2.format(log=folder / "broker.log"))
            # The nodes format side by side: each is a JVM start of its own (seconds).
            formats.append(
                subprocess.Popen(
                    [
                        *_base(folder, libs, heap),
                        "kafka.tools.StorageTool",
                        "format",
                        f"--cluster-id={layout.cluster_id}",
                        "-c",
                        str(folder / "server.properties"),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )
        for node, formatting in zip(layout.node_ids, formats, strict=True):
            output, _ = formatting.communicate()
            if formatting.returncode != 0:
                said = output.decode(errors="replace")[-2000:]
                raise BrokerError(f"formatting node {node}'s storage failed:\n{said}")
    finally:
        for formatting in formats:
            if formatting.poll() is None:
                formatting.kill()
                formatting.wait()
    (run_dir / LAYOUT_FILE).write_text(json.dumps(asdict(layout)))
    return start_nodes(run_dir, layout.node_ids, timeout_s=timeout_s)


def start_nodes(run_dir: Path, nodes: list[int], *, timeout_s: float = 120.0) -> list[BrokerInfo]:
    """Start stopped nodes of the cluster again, on their ports and data; return once each is a registered broker.

    All of them are launched before any is waited for: a node answers only once a majority of the
    controllers is up, so a whole cluster (or a majority of it) must come up together.
    """
    layout = _layout(run_dir)
    unknown = sorted(set(nodes) - set(layout.node_ids))
    if unknown:
        raise BrokerError(f"the cluster in {run_dir} has nodes {layout.node_ids}, not {unknown}")
    launched: dict[int, tuple[subprocess.Popen[bytes], BrokerInfo]] = {}
    before = set(broker._CHILDREN)
    try:
        for node in nodes:
            folder = node_dir(run_dir, node)
            base, properties, ports = broker.relaunch(folder, layout.heap)
            process = broker.spawn(folder, base, properties)
            info = BrokerInfo(process.pid, ports["PLAINTEXT"], ports["CONTROLLER"], str(folder), layout.kafka_version)
            launched[node] = (process, info)
        deadline = time.monotonic() + timeout_s
        for process, info in launched.values():
            broker.await_answer(process, info, deadline=deadline)
        _await_brokers(run_dir, set(launched), deadline)
    except BaseException:
        # Failed or interrupted (Ctrl-C, SIGTERM): no node of this start may outlive it unrecorded.
        broker.stop_launched(before)
        for _, info in launched.values():
            (Path(info.run_dir) / broker.STATE_FILE).unlink(missing_ok=True)
        raise
    return [info for _, info in launched.values()]


def _await_brokers(run_dir: Path, nodes: set[int], deadline: float) -> None:
    """Wait until the controllers list ``nodes`` among the registered, unfenced brokers."""
    layout = _layout(run_dir)
    seen: set[int] = set()
    while time.monotonic() < deadline:
        for info in _running(run_dir, layout).values():
            known = metadata.fetch(info.port)
            if known is not None:
                seen = set(known.brokers)
                if nodes <= seen:
                    return
        time.sleep(0.25)
    raise BrokerError(f"nodes {sorted(nodes - seen)} did not register as brokers in time:\n{_tails(run_dir, nodes)}")


def forget(run_dir: Path) -> None:
    """Remove a stopped cluster from ``run_dir`` (its layout and its nodes' folders, data included)."""
    layout = _layout(run_dir)
    running = _running(run_dir, layout)
    if running:
        raise BrokerError(f"{run_dir} holds a cluster with nodes {sorted(running)} running: stop it first")
    _remove(run_dir)


def _remove(run_dir: Path) -> None:
    for stale in [*run_dir.glob("node-*"), run_dir / LAYOUT_FILE]:
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()


def stop_node(run_dir: Path, node: int, *, grace_s: float = 20.0) -> bool:
    """Stop one node (SIGTERM: a controlled shutdown that moves its leaders away first); False if it was not running."""
    layout = _layout(run_dir)
    if node not in layout.node_ids:
        raise BrokerError(f"the cluster in {run_dir} has nodes {layout.node_ids}, not {node}")
    return broker.stop(node_dir(run_dir, node), grace_s=grace_s)


def stop(run_dir: Path, *, grace_s: float = 20.0) -> list[int]:
    """Stop every running node; return the ones that were running.

    All of them are signalled at once: stopped one by one, the last nodes would wait for a
    controller majority that is already gone, until the grace period's SIGKILL.
    """
    layout = _layout(run_dir)
    running = _running(run_dir, layout)
    for info in running.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for info in running.values():
        broker._terminate(info.pid, max(0.0, deadline - time.monotonic()))
    for node in layout.node_ids:
        (node_dir(run_dir, node) / broker.STATE_FILE).unlink(missing_ok=True)
    return sorted(running)


def status(run_dir: Path) -> ClusterStatus:
    """Each node (running, answering) and the cluster's metadata as the first answering node sees it."""
    layout = _layout(run_dir)
    nodes: list[NodeStatus] = []
    seen: metadata.Metadata | None = None
    for node in layout.node_ids:
        folder = node_dir(run_dir, node)
        info = broker.read_state(folder)
        port = info.port if info is not None else _port(folder)
        if info is None or not broker.is_alive(info.pid):
            nodes.append(NodeStatus(node, port, None, answering=False))
            continue
        known = metadata.fetch(info.port)
        nodes.append(NodeStatus(node, port, info.pid, answering=known is not None))
        seen = seen or known
    return ClusterStatus(nodes, seen)


def _running(run_dir: Path, layout: Layout) -> dict[int, BrokerInfo]:
    """The nodes whose recorded process is alive, by node id."""
    found = {}
    for node in layout.node_ids:
        info = broker.read_state(node_dir(run_dir, node))
        if info is not None and broker.is_alive(info.pid):
            found[node] = info
    return found


def _layout(run_dir: Path) -> Layout:
    layout = read_layout(run_dir)
    if layout is None:
        raise BrokerError(f"no dev cluster in {run_dir} (start one with: binlake dev broker start --nodes 3)")
    return layout


def _port(folder: Path) -> int:
    """A stopped node's client port, from its properties."""
    for line in (folder / "server.properties").read_text().splitlines():
        if line.startswith("listeners="):
            return broker._listener_ports(line.removeprefix("listeners="))["PLAINTEXT"]
    raise BrokerError(f"{folder / 'server.properties'} names no listeners")


def _base(folder: Path, libs: Path, heap: str) -> list[str]:
    return [broker._java(), f"-Xmx{heap}", "-cp", f"{libs}/*", f"-Dlog4j2.configurationFile={folder / 'log4j2.xml'}"]


def _tails(run_dir: Path, nodes: set[int]) -> str:
    return "\n".join(broker.log_tail(node_dir(run_dir, node), lines=15) for node in sorted(nodes))
