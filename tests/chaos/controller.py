"""The chaos controller: SIGKILLs aimed inside transactions and micro-batches, a broker restart, restarts.

**A normalizer kill** picks a live normalizer that owns an input partition the traffic goes to, and aims
at an open transaction: it freezes the victim (SIGSTOP) a random moment of up to ``AIM_AFTER_CHUNK_S``
after a chunk of traffic is in (when the owners' transactions open; random moments missed in CI) and asks
the transaction coordinator which transactional ids have a transaction open (``coordinator``: state
``Ongoing``). A frozen process can neither commit nor abort, so an id listed there stays open through the
SIGKILL. The kill counts as *inside a transaction* when one of the ids is the victim's: the id of an input
partition the traffic goes to that the victim's ``/metrics`` said it owned just before the freeze, and its
group peer's did not. After ``FREEZE_TRIES`` freezes without one it kills anyway (outside). An aim gives
way to a broker restart that waits for it (the restart holds the traffic back, so no transaction opens
while it waits) and goes on once the broker is up again.

**A sink kill** aims at an open micro-batch of one of its two queries (the changelog query's or the
mirror query's), or of both at once (of either after ``BOTH_AIM_S`` without), as
``tests/sink/test_sink_kill.py`` does: it waits until a batch planned by this incarnation is open (the one
a previous kill left open has been replayed and committed first, so the sink makes progress between
kills), waits a random moment inside it, waits for an open batch again and SIGKILLs the driver and its JVM
together. It counts as *inside a micro-batch* when the checkpoints, read after the kill, show a batch
planned and not committed in each query aimed at (in either, once aimed at either)
(``tests.support.sink_checkpoint``).

Every killed role is started again after a random pause. The broker (every node of a cluster) is stopped
and started again once (same data directory and ports) while no traffic is being produced and no aim is
under way (``gate``); a cluster's own faults are in ``brokers``.
The supervisor starts again any role that exits by itself, and records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aiokafka import TopicPartition

from binlake.shared.kafka.assignment import transactional_id
from tests.chaos.brokers import OUTAGE_S, Cluster, SingleBroker
from tests.chaos.cast import Cast, Role
from tests.chaos.gate import BrokerGate
from tests.chaos.player import TICK_S, Player
from tests.support.sink_checkpoint import batch_ids, fresh_open, open_batch, planned

FREEZE_TRIES = 480
"""Freezes a kill aims with before it kills outside a transaction. At a short run's traffic (a chunk every
``player.TICK_S``, one transaction per partition) a transaction is open a few % of the time: 480 freezes at
random moments missed four times in a row in CI, so a freeze follows a chunk while the traffic lasts."""
AIM_AFTER_CHUNK_S = 0.05
"""A freeze falls this long at most after a chunk is in: the fetch, the parse and the commit of its batch."""
FREEZE_S = 0.03
"""How long a frozen victim is left before the coordinator is asked: requests it had sent are answered."""
SINK_AIM_TIMEOUT_S = 300.0
BOTH_AIM_S = 60.0
"""How long a kill aimed at both queries waits for a batch of each open at once before it takes an open batch
of either: on a busy machine the two queries' batches can follow each other without overlapping for a whole
short run (seen in CI: no kill inside a batch in 300 s)."""
FROZEN_PAST_SESSION_S = 12.0
"""A frozen normalizer's pause: twice the chaos normalizers' group session (``cast.NORMALIZER_ENV``)."""
QUERIES = {"sink": "changelog query", "mirrors": "mirror query"}
"""The sink's queries by their checkpoint's folder name (``SinkSettings.checkpoint`` and ``.mirror_checkpoint``)."""


@dataclass
class Kill:
    target: str
    at_s: float
    inside: bool
    evidence: str
    """What showed the kill landed inside (or why it is not counted so)."""


@dataclass
class Controller:
    cast: Cast
    kafka: SingleBroker | Cluster
    rng: random.Random
    echo: Callable[[str], None] = print
    started: float = field(default_factory=time.monotonic)
    gate: BrokerGate = field(default_factory=BrokerGate)
    kills: list[Kill] = field(default_factory=list)
    unplanned: list[dict[str, object]] = field(default_factory=list)
    broker_restarts: int = 0
    player: Player | None = None
    """The traffic (None: none): which partitions it reaches, and when a chunk is in."""
    _frozen: set[str] = field(default_factory=set)
    _restarts: set[asyncio.Task[None]] = field(default_factory=set)

    def say(self, text: str) -> None:
        self.echo(f"[{self.elapsed():7.1f} s] {text}")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # ---------------------------------------------------------------- normalizers

    async def kill_normalizer(self) -> Kill:
        """A random live normalizer, one that owns input partitions if any does (a member that has just
        joined, or whose peer holds every partition, has no transaction to be caught in)."""
        while not (live := self._killable()):
            await asyncio.sleep(0.2)
        tries = FREEZE_TRIES
        while True:
            async with self.gate.use():
                live = self._killable() or live  # as of now: a freeze may have taken one meanwhile
                owners = [role for role in live if self._aimable_ids(role)]
                victim = self.rng.choice(owners or live)
                self._frozen.add(victim.name)  # no freeze aims at it meanwhile
                try:
                    kill, tries = await self._aim_at_transaction(victim, tries)
                    if kill is not None:
                        self.cast.kill(victim)
                        return self._record(kill, victim)
                finally:
                    self._frozen.discard(victim.name)
            # A broker restart is waiting for this aim (it holds the traffic back, so no transaction would open
            # while the aim goes on), or the victim's partitions moved: aim again, after the restart (the tries
            # left carry over).
            while not (live := self._killable()):
                await asyncio.sleep(0.2)

    def _killable(self) -> list[Role]:
        """Live normalizers no other aim holds (a kill's or a freeze's: one's SIGCONT would thaw the other's)."""
        return [role for role in self.cast.normalizers if self.cast.live(role) and role.name not in self._frozen]

    async def freeze_normalizer(self) -> Kill:
        """A normalizer frozen inside an open transaction for longer than its group session (a long GC pause,
        a stalled VM), then let go: its partitions have moved to its peer meanwhile, whose producer fenced the
        frozen one's; thawed, it finds its producer fenced and the partition no longer its own, and leaves the
        group to join again. Recorded with the kills (target ``frozen ...``); the process lives on.

        A victim whose aim misses is left for another until each has missed once: one format's normalizers may
        hold their transactions open for far less time than another's."""
        missed: set[str] = set()
        while True:
            live = self._killable()
            pairs = [r for r in live if self._aimable_ids(r) and any(p is not r and p.group == r.group for p in live)]
            if not pairs:
                await asyncio.sleep(0.2)
                continue
            victim = self.rng.choice([r for r in pairs if r.name not in missed] or pairs)
            self._frozen.add(victim.name)
            try:
                async with self.gate.use():
                    kill, _ = await self._aim_at_transaction(victim, FREEZE_TRIES)
                if kill is None:
                    continue
                if not kill.inside and any(r.name not in missed | {victim.name} for r in pairs):
                    missed.add(victim.name)
                    self.say(f"freeze: no open transaction of {victim.name} in {FREEZE_TRIES} freezes, another")
                    continue
                assert victim.service is not None
                if kill.inside:
                    await asyncio.sleep(FROZEN_PAST_SESSION_S)  # frozen by the aim: left so past its session
                    os.kill(victim.service.pid, signal.SIGCONT)
            finally:
                self._frozen.discard(victim.name)
            frozen = Kill(
                f"frozen {victim.name}", kill.at_s, kill.inside, f"{kill.evidence}, {FROZEN_PAST_SESSION_S:.0f} s"
            )
            self.kills.append(frozen)
            self.say(
                f"freeze: {victim.name} frozen {FROZEN_PAST_SESSION_S:.0f} s past its session, let go ({kill.evidence})"
            )
            return frozen

    async def _aim_at_transaction(self, victim: Role, tries: int) -> tuple[Kill | None, int]:
        """The kill (None: a broker restart is pending, or the victim owns no partition the traffic goes to;
        aim again after it) and the freeze tries left."""
        assert victim.service is not None
        pid = victim.service.pid
        peers = [r for r in self.cast.normalizers if r.group == victim.group and r is not victim]
        while tries > 0:
            if self.gate.outage_pending():
                return None, tries
            tries -= 1
            ids = self._aimable_ids(victim)
            for peer in peers:
                # A partition both claim (a rebalance under way) proves nothing.
                ids -= self.cast.transactional_ids(peer)
            if not ids:
                # It owns no partition the traffic goes to now (a rebalance moved them): another victim.
                await asyncio.sleep(0.2)
                return None, tries
            if victim.service.exited() is None:
                if self.player is not None and await self.player.next_chunk(4 * TICK_S):
                    await asyncio.sleep(self.rng.uniform(0.0, AIM_AFTER_CHUNK_S))
                    if victim.service.exited() is not None:
                        continue
                os.kill(pid, signal.SIGSTOP)
                await asyncio.sleep(FREEZE_S)
                try:
                    caught = ids & await asyncio.to_thread(self.kafka.ongoing)
                except (OSError, ValueError):
                    caught = set()
                if caught:
                    kill = Kill(victim.name, self.elapsed(), True, f"coordinator: {sorted(caught)} Ongoing, frozen")
                    return kill, tries
                os.kill(pid, signal.SIGCONT)
            await asyncio.sleep(self.rng.uniform(0.0, 0.2))
        return Kill(victim.name, self.elapsed(), False, f"no open transaction in {FREEZE_TRIES} freezes"), 0

    def _aimable_ids(self, role: Role) -> set[str]:
        """The transactional ids of the input partitions ``role`` owns now that carry the traffic."""
        ids = self.cast.transactional_ids(role)
        if self.player is None:
            return ids
        busy = {transactional_id(role.group, TopicPartition(t, p)) for t, p in self.player.truth.busy()}
        return ids & busy

    # ---------------------------------------------------------------- the sink

    async def kill_sink(self, queries: list[str]) -> Kill:
        """SIGKILL the sink while a batch of each of ``queries`` (``sink``: the changelog query, ``mirrors``) is
        open at once."""
        sink = self.cast.sink
        checkpoints = [self.cast.lake / "_checkpoints" / query for query in queries]
        while True:
            while not self.cast.live(sink):  # started again after the last kill (or an exit of its own)
                await asyncio.sleep(0.2)
            need = len(checkpoints)
            already = dict(sink.planned_at_start)
            opened = await self._until_open(sink, checkpoints, already, need, BOTH_AIM_S if need > 1 else None)
            if not opened and need > 1 and self.cast.live(sink):
                need = 1  # either query's batch, rather than none while the traffic lasts
                opened = await self._until_open(sink, checkpoints, already, need)
            if opened:
                await asyncio.sleep(self.rng.uniform(0.0, 2.0))  # somewhere inside the batch
                opened = await self._until_open(sink, checkpoints, already, need)
            if self.cast.live(sink):
                break
        self.cast.kill(sink)
        found = []
        for checkpoint in checkpoints:
            batch = max(planned(checkpoint), default=None)
            inside = open_batch(checkpoint)
            found.append((inside, f"offsets/{batch} without commits/{batch}" if inside else "no batch open"))
        evidence = "; ".join(f"{query}: {text}" for query, (_, text) in zip(queries, found, strict=True))
        if need < len(checkpoints):
            evidence += f" (not open at once in {BOTH_AIM_S:.0f} s: aimed at either)"
        if not opened:
            evidence += f" (no fresh batch open in {SINK_AIM_TIMEOUT_S:.0f} s)"
        aimed = (" and " if need > 1 else " or ").join(QUERIES[query] for query in queries)
        landed = sum(inside for inside, _ in found) >= need
        kill = Kill(f"sink ({aimed} batch)", self.elapsed(), landed, evidence)
        return self._record(kill, sink)

    async def _until_open(
        self,
        sink: Role,
        checkpoints: list[Path],
        already: dict[Path, set[int]],
        need: int,
        give_up_s: float | None = None,
    ) -> bool:
        """Wait until a batch this incarnation planned is open in ``need`` of ``checkpoints`` at once; False
        if the sink ended, after ``give_up_s`` if given, or after ``SINK_AIM_TIMEOUT_S`` once each query has
        at least committed the batches planned before this incarnation (the previous kill's open batch,
        replayed): so every kill follows progress, and a sink with nothing left to do is killed all the same."""
        start = time.monotonic()
        deadline = start + SINK_AIM_TIMEOUT_S
        while self.cast.live(sink):
            opened = [fresh_open(checkpoint, already) for checkpoint in checkpoints]  # each query, every time
            if sum(opened) >= need:
                return True
            if give_up_s is not None and time.monotonic() > start + give_up_s:
                return False
            if time.monotonic() > deadline and all(
                batch_ids(checkpoint / "commits") >= sink.planned_at_start[checkpoint] for checkpoint in checkpoints
            ):
                return False
            await asyncio.sleep(0.05)
        return False

    # ---------------------------------------------------------------- restarts

    def _record(self, kill: Kill, role: Role) -> Kill:
        self.kills.append(kill)
        where = "INSIDE" if kill.inside else "outside"
        self.say(f"kill {len(self.kills)}: {kill.target} ({where}: {kill.evidence})")
        task = asyncio.create_task(self._restart_later(role))
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)
        return kill

    async def _restart_later(self, role: Role) -> None:
        await asyncio.sleep(self.rng.uniform(0.5, 4.0))
        async with self.gate.use():  # not into a stopped broker
            self.cast.start(role)
        self.say(f"started {role.name} again (incarnation {role.incarnation})")

    async def restarts_done(self) -> None:
        while self._restarts:
            await asyncio.gather(*list(self._restarts))

    async def drop_restarts(self) -> None:
        """Cancel the pending restarts (an interrupted run): nothing may start after the services are stopped."""
        for task in list(self._restarts):
            await cancel(task)

    async def supervise(self) -> None:
        """Start again any role that exits by itself (an unplanned exit: recorded, never hidden)."""
        while True:
            for role, code in self.cast.exited():
                service = role.service
                assert service is not None
                self.unplanned.append({"role": role.name, "code": code, "at_s": round(self.elapsed(), 1)})
                self.say(f"UNPLANNED EXIT: {role.name} exited with {code}; log {service.log}:\n{service.log_tail(8)}")
                async with self.gate.use():
                    self.cast.start(role)
            await asyncio.sleep(0.5)

    # ---------------------------------------------------------------- the broker

    async def restart_broker(self) -> None:
        """The broker (every node of a cluster) stopped and started again on its data, with no traffic
        produced and no aim under way meanwhile. On the cluster a normalizer is also started while every node
        is down, as a pod starts before its Kafka: it cannot reach a broker and backs off until one answers."""
        async with self.gate.outage():
            self.say("stopping the broker" if isinstance(self.kafka, SingleBroker) else "stopping every node")
            await self.kafka.stop_all()
            if isinstance(self.kafka, Cluster) and (live := self._killable()):
                role = self.rng.choice(live)
                self.cast.kill(role)
                self.cast.start(role)
                self.kafka.faults.append({"fault": "normalizer started while every node is down", "role": role.name})
                self.say(f"{role.name} started again while every node is down (incarnation {role.incarnation})")
            await asyncio.sleep(OUTAGE_S)
            await self.kafka.start_all()
            self.broker_restarts += 1
            self.say("broker started again (same data directory and ports)")

    def summary(self) -> dict[str, object]:
        frozen = [kill for kill in self.kills if kill.target.startswith("frozen")]
        sink = [kill for kill in self.kills if kill.target.startswith("sink")]
        normalizers = [kill for kill in self.kills if kill not in sink and kill not in frozen]
        return {
            "kills": len(self.kills) - len(frozen),
            "freezes": len(frozen),
            "freezes_inside_transactions": sum(kill.inside for kill in frozen),
            "normalizer_kills": len(normalizers),
            "sink_kills": len(sink),
            "kills_inside_transactions": sum(kill.inside for kill in normalizers),
            "kills_inside_batches": sum(kill.inside for kill in sink),
            "broker_restarts": self.broker_restarts,
            "unplanned_exits": len(self.unplanned),
            "cluster_faults": self.kafka.faults if isinstance(self.kafka, Cluster) else [],
        }

    def details(self) -> dict[str, object]:
        return {"kills": [asdict(k) for k in self.kills], "unplanned_exits": self.unplanned}


async def cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
