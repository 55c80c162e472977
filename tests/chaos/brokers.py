"""The Kafka a chaos run stands on: the dev broker, or the 3-node dev cluster and the faults only a cluster has.

Both answer what the controller asks of its Kafka: the transactional ids with a transaction open now (every
node's transaction coordinator, asked in turn), a whole stop and a start again (the broker's restart; on the
cluster, every node at once, then started again together on its data).

The cluster's own faults (``Cluster``), each reported with what it did:

- **leader kill**: SIGKILL the node leading most of the unified topic's partitions; its leaders move once
  the controllers fence it; started again on its data after ``LEADER_DOWN_S``;
- **coordinator kill**: SIGKILL the node coordinating a normalizer's transaction while the coordinator lists
  it ``Ongoing`` (the transaction is open), started again after ``LEADER_DOWN_S``;
- **ISR below the minimum**: two nodes stopped one after the other (each a controlled shutdown, so the
  controllers shrink the ISRs to the last node before its quorum goes): every replicated topic's ISR is one,
  below its ``min.insync.replicas`` 2, and every acks=all write of the normalizers (the unified topic, the
  transaction log, the group's offsets) fails with NotEnoughReplicas, for ``ISR_OUTAGE_S``, longer than the
  normalizers' transaction timeout. The vendor topics keep min ISR 1 (a vendor's own durability choice), so
  the traffic goes on and the normalizers have work through it. Both nodes start again together.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from binlake.shared.devbroker import broker, cluster
from tests.chaos import coordinator

LEADER_DOWN_S: Final = 6.0
ISR_OUTAGE_S: Final = 40.0
OUTAGE_S: Final = 8.0
COORDINATOR_AIM_S: Final = 120.0


@dataclass
class SingleBroker:
    run_dir: Path
    port: int

    def ongoing(self) -> set[str]:
        return coordinator.ongoing(self.port)

    async def stop_all(self) -> None:
        await asyncio.to_thread(broker.stop, self.run_dir)

    async def start_all(self) -> None:
        await asyncio.to_thread(broker.restart, self.run_dir)

    def stop(self) -> None:
        with contextlib.suppress(broker.BrokerError):
            broker.stop(self.run_dir)


@dataclass
class Cluster:
    run_dir: Path
    topic: str
    """The unified topic: its leaders are the ones a leader kill aims at."""
    say: Callable[[str], None] = print
    faults: list[dict[str, object]] = field(default_factory=list)

    def _status(self) -> cluster.ClusterStatus:
        return cluster.status(self.run_dir)

    def _live(self) -> dict[int, cluster.NodeStatus]:
        return {node.node: node for node in self._status().nodes if node.pid is not None}

    def ongoing(self) -> set[str]:
        return set(self._coordinated())

    def _coordinated(self) -> dict[str, int]:
        """Transactional id -> the node coordinating it, for every transaction open now."""
        found: dict[str, int] = {}
        for node in self._live().values():
            with contextlib.suppress(OSError, ValueError):
                found.update(dict.fromkeys(coordinator.ongoing(node.port), node.node))
        return found

    async def stop_all(self) -> None:
        await asyncio.to_thread(cluster.stop, self.run_dir)

    async def start_all(self) -> None:
        await asyncio.to_thread(cluster.start_nodes, self.run_dir, [1, 2, 3])
        self._record("cluster stop and start", nodes=[1, 2, 3])

    def stop(self) -> None:
        with contextlib.suppress(broker.BrokerError):
            cluster.stop(self.run_dir)

    async def kill_leader(self) -> None:
        status = self._status()
        assert status.metadata is not None, "no node answers"
        leaders = [p.leader for p in status.metadata.topics.get(self.topic, []) if p.leader >= 0]
        node = max(set(leaders), key=leaders.count)
        await self._kill_and_restart(
            node, f"leader of {leaders.count(node)} of {len(leaders)} partitions of {self.topic}"
        )
        self._record("leader kill", nodes=[node], led=leaders.count(node))

    async def kill_coordinator(self, prefix: str) -> None:
        """SIGKILL the node coordinating an open transaction of an id starting with ``prefix``."""
        deadline = time.monotonic() + COORDINATOR_AIM_S
        while time.monotonic() < deadline:
            open_now = {tid: node for tid, node in self._coordinated().items() if tid.startswith(prefix)}
            if open_now:
                tid, node = sorted(open_now.items())[0]
                await self._kill_and_restart(node, f"coordinator of {tid}, Ongoing")
                self._record("coordinator kill", nodes=[node], inside=tid)
                return
            await asyncio.sleep(0.05)
        self._record("coordinator kill", nodes=[], inside=None)

    async def isr_below_minimum(self) -> None:
        live = sorted(self._live())
        kept = live[-1]
        down = [node for node in live if node != kept][:2]
        for node in down:
            await asyncio.to_thread(cluster.stop_node, self.run_dir, node)
            self.say(f"node {node} stopped (controlled shutdown)")
        status = self._status()
        isr = sorted({len(p.isr) for p in (status.metadata.topics.get(self.topic, []) if status.metadata else [])})
        self.say(f"nodes {down} down: {self.topic}'s ISR sizes {isr}, min.insync.replicas 2; held {ISR_OUTAGE_S:.0f} s")
        await asyncio.sleep(ISR_OUTAGE_S)
        await asyncio.to_thread(cluster.start_nodes, self.run_dir, down)
        self.say(f"nodes {down} started again")
        self._record("ISR below the minimum", nodes=down, isr_sizes=isr, held_s=ISR_OUTAGE_S)

    async def _kill_and_restart(self, node: int, why: str) -> None:
        pid = self._live()[node].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        self.say(f"SIGKILL node {node} ({why})")
        await asyncio.sleep(LEADER_DOWN_S)
        await asyncio.to_thread(cluster.start_nodes, self.run_dir, [node])
        self.say(f"node {node} started again on its data")

    def _record(self, fault: str, **details: object) -> None:
        self.faults.append({"fault": fault, **details})
