"""``make chaos``: the whole pipeline under SIGKILLs and a broker restart, then checked for exactly once.

``python -m tests.chaos.run [--changes N] [--kills K] [--formats a,b] [--nodes 1|3] [--out DIR]`` starts
the dev broker (``--nodes 3``: the 3-node dev cluster), two ``binlake normalizer`` processes per format
(one consumer group sharing the vendor topic's three partitions) and ``binlake sink`` (history tables
for ``--history``), then produces the demo's traffic (``N`` changes over the formats' tables, with their
schema changes and poison) at a steady pace while the controller (``controller``) SIGKILLs normalizers
and the sink, aimed inside open transactions and micro-batches, and stops and restarts the broker once.
Every killed process is started again. Once the traffic is in and the kills are done, it waits until the
pipeline has caught up (``catchup``), stops the services, and checks (``checks``) the unified topic, the
dead letters, the changelog, every mirror and history table against the ground truth, and ``binlake lake
verify``.

On the cluster (``--nodes 3``) the broker's restart is every node's, and the cluster's own faults join
the kills, spread over the traffic (``brokers``): a leader kill, a transaction coordinator kill inside an
open transaction, a normalizer frozen inside an open transaction past its group session (``controller``),
two nodes down so that the ISRs fall below ``min.insync.replicas`` for longer than the normalizers'
transaction timeout (15 s here), and a normalizer started while every node is down. Each recovery path of
the normalizers' runtime must then be taken at least once: its log lines are counted (``recovery_paths``)
and a path never taken fails the run (on one broker they are counted, not required: the client's retries
absorb a short outage).

Progress goes to stderr; the summary, one JSON document, to stdout and ``DIR/summary.json`` (each
kill and its evidence in ``DIR/kills.json``, the services' logs in ``DIR/logs``). Exit status 1 on any
loss, duplicate or mismatch, or when the run could not prove what it is for (fewer kills than asked,
none inside a transaction or inside a micro-batch, no broker restart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import shutil
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from binlake.shared.cli.demo.pipeline import DLQ, UNIFIED, UNIFIED_PARTITIONS, VENDOR_PARTITIONS
from binlake.shared.devbroker import broker, cluster
from tests.chaos import catchup, checks
from tests.chaos.brokers import Cluster, SingleBroker
from tests.chaos.cast import Cast
from tests.chaos.controller import Controller, cancel
from tests.chaos.player import Player
from tests.chaos.truth import Truth
from tests.support import kafka_tools

REPO = Path(__file__).resolve().parents[2]
FORMATS = ("canal-json", "debezium-json", "maxwell-json", "oms-avro")
"""Two JSON formats with both schema changes, one with ADD COLUMN only, one binary (Avro)."""
RECOVERY_PATHS = ("producer fenced", "replacing producer", "broker error, backing off", "leaving the group")
"""The runtime's recovery paths, as its log lines say them (shared/kafka/runtime.py, assignment.py)."""
CLUSTER_NORMALIZER_ENV = {"BINLAKE_TRANSACTION_TIMEOUT_MS": "15000"}
"""On the cluster: a batch held open by the ISR fault is aborted (and its producer fenced) within the fault."""


@dataclass
class Options:
    changes: int = 200_000
    kills: int = 20
    formats: list[str] = field(default_factory=lambda: list(FORMATS))
    tables: int = 3
    seed: int = 1
    out: Path = REPO / "build" / "chaos"
    traffic_s: float = 0.0
    """Seconds the traffic is spread over (0: one per 1,300 changes, at least 40)."""
    history: str = "*.t01"
    timeout_s: float = 3600.0
    verify: bool = True
    """Run ``binlake lake verify`` at the end (a Spark application: minutes on a busy machine)."""
    nodes: int = 1
    """1: the dev broker; 3: the 3-node dev cluster and its faults."""

    @property
    def sink_kills(self) -> int:
        return max(1, round(self.kills * 0.35))

    @property
    def max_offsets(self) -> int:
        """Records per changelog batch: about 15 batches (short runs: one per 1,000 records), so kills find
        batches open and each costs little."""
        return max(1000, self.changes // 15)

    @property
    def seconds(self) -> float:
        """On the cluster at least 5 minutes: its faults (each node back takes 20-30 s) fall inside the traffic,
        so the normalizers have work through each of them."""
        return self.traffic_s or max(300.0 if self.nodes == 3 else 40.0, self.changes / 1300)


def parse_args(argv: list[str] | None) -> Options:
    defaults = Options()
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.run", description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=defaults.changes, help="changes in all (default 200000)")
    parser.add_argument("--kills", type=int, default=defaults.kills, help="SIGKILLs in all (default 20)")
    parser.add_argument("--formats", default=",".join(defaults.formats), help="comma-separated format ids")
    parser.add_argument("--tables", type=int, default=defaults.tables, help="tables per format (default 3)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--out", type=Path, default=defaults.out, help="run folder (default build/chaos)")
    parser.add_argument("--traffic-seconds", type=float, default=0.0, help="how long the traffic takes")
    parser.add_argument("--history", default=defaults.history, help="source tables with history (globs)")
    parser.add_argument("--timeout", type=float, default=defaults.timeout_s, help="seconds to wait to catch up")
    parser.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="Kafka nodes: 1 or 3 (a cluster)")
    parser.add_argument(
        "--no-verify", action="store_true", help="skip `binlake lake verify` (the checks of the topic and lake remain)"
    )
    args = parser.parse_args(argv)
    return Options(
        changes=args.changes,
        kills=args.kills,
        formats=[f.strip() for f in args.formats.split(",") if f.strip()],
        tables=args.tables,
        seed=args.seed,
        out=args.out.resolve(),
        traffic_s=args.traffic_seconds,
        history=args.history,
        timeout_s=args.timeout,
        verify=not args.no_verify,
        nodes=args.nodes,
    )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _normalizer_chaos(controller: Controller, count: int, seconds: float, rng: random.Random) -> None:
    """``count`` normalizer kills spread over the traffic's ``seconds`` (while the normalizers have work)."""
    start = time.monotonic()
    for i in range(count):
        at = start + seconds * (i + rng.uniform(0.3, 1.0)) / count
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        await controller.kill_normalizer()


async def _sink_chaos(controller: Controller, count: int, rng: random.Random) -> None:
    """``count`` sink kills: the first while both queries have a batch open, then alternately aimed at the
    changelog query's and the mirror query's batches."""
    queries = ["sink", "mirrors"]
    rng.shuffle(queries)
    for i in range(count):
        await asyncio.sleep(rng.uniform(2.0, 10.0))
        await controller.kill_sink(queries if i == 0 else [queries[i % 2]])


async def _broker_chaos(controller: Controller, player: Player, messages: int) -> None:
    """The broker's restart, once half the traffic is in; on the cluster, its own faults before it."""
    kafka = controller.kafka
    if isinstance(kafka, Cluster):
        await _once_sent(player, messages * 0.15)
        await kafka.kill_leader()
        await _once_sent(player, messages * 0.3)
        await kafka.kill_coordinator(prefix="demo-")  # the chaos normalizers' groups (shared.cli.demo.pipeline)
        await controller.freeze_normalizer()
        await _once_sent(player, messages * 0.45)
        await kafka.isr_below_minimum()
    await _once_sent(player, messages * (0.75 if isinstance(kafka, Cluster) else 0.5))
    await controller.restart_broker()


async def _once_sent(player: Player, messages: float) -> None:
    while player.sent < messages and not player.finished.is_set():
        await asyncio.sleep(0.5)


def recovery_paths(logs: Path) -> dict[str, int]:
    """How often each recovery path's log line appears in the normalizers' logs."""
    counts = dict.fromkeys(RECOVERY_PATHS, 0)
    for log in logs.glob("normalizer-*.log"):
        for line in log.read_text("utf-8", errors="replace").splitlines():
            for path in RECOVERY_PATHS:
                counts[path] += path in line
    return counts


async def run(options: Options) -> dict[str, object]:
    wall = time.monotonic()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # the run's own clients reconnect through the outage
    phases: dict[str, float] = {}
    if options.out.exists():
        shutil.rmtree(options.out)
    options.out.mkdir(parents=True)
    rng = random.Random(options.seed)
    broker_dir = options.out / "broker"
    kafka: SingleBroker | Cluster
    if options.nodes == 3:
        nodes = await asyncio.to_thread(cluster.start, broker_dir, nodes=3, timeout_s=180)
        bootstrap = cluster.bootstrap_of(node.port for node in nodes)
        kafka = Cluster(broker_dir, UNIFIED, say)
    else:
        info = await asyncio.to_thread(broker.start, broker_dir, timeout_s=120)
        bootstrap = info.bootstrap
        kafka = SingleBroker(broker_dir, info.port)
    cluster_env = CLUSTER_NORMALIZER_ENV if options.nodes == 3 else {}
    cast = Cast(bootstrap, options.out, options.history, options.max_offsets, normalizer_env=cluster_env)
    controller = Controller(cast, kafka, rng, echo=say)
    findings = checks.Findings()
    stopped: dict[str, int | None] = {}
    leftovers: list[int] = []
    truth: Truth | None = None
    try:
        topics = {f"vendor.{fmt}": VENDOR_PARTITIONS for fmt in options.formats}
        # The vendor's topics keep min ISR 1 (its own choice): traffic goes on while binlake's cannot be written.
        vendor = {name: {"min.insync.replicas": "1"} for name in topics}
        await kafka_tools.create_topics(bootstrap, {**topics, UNIFIED: UNIFIED_PARTITIONS, DLQ: 1}, vendor)
        cast.add(options.formats)
        for role in cast.roles:
            cast.start(role)
        say(f"broker at {bootstrap}; the sink and {len(cast.normalizers)} normalizers started ({cast.fleet.logs})")
        truth = await asyncio.to_thread(Truth.build, options.formats, options.changes, options.tables, options.seed)
        phases["start, traffic rendered"] = time.monotonic() - wall
        say(f"traffic: {truth.changes} changes, {truth.messages} messages over {options.seconds:.0f} s")
        supervisor = asyncio.create_task(controller.supervise())
        try:
            player = Player(bootstrap, truth, controller.gate, options.seconds)
            controller.player = player
            await asyncio.gather(
                player.play(),
                _normalizer_chaos(controller, options.kills - options.sink_kills, options.seconds, rng),
                _sink_chaos(controller, options.sink_kills, rng),
                _broker_chaos(controller, player, truth.messages),
            )
            await controller.restarts_done()
            phases["traffic and chaos"] = time.monotonic() - wall - sum(phases.values())
            if not await catchup.wait(cast, options.formats, options.timeout_s, say):
                findings.problems.append(f"the pipeline did not catch up within {options.timeout_s:.0f} s")
            phases["catching up"] = time.monotonic() - wall - sum(phases.values())
        finally:
            await controller.drop_restarts()
            await cancel(supervisor)
            current = {f"{role.name}.{role.incarnation}" for role in cast.roles}
            stopped = {name: code for name, code in cast.fleet.stop_all(grace_s=60.0).items() if name in current}
        # Checked also when the pipeline did not catch up: the counts then say what is missing.
        await checks.check_topic(bootstrap, truth, findings)
        checks.check_lake(cast.lake, truth, options.history, findings)
        phases["checks"] = time.monotonic() - wall - sum(phases.values())
        if options.verify:
            checks.check_verify(cast.lake, bootstrap, cast.fleet.logs / "lake-verify.log", findings)
            phases["binlake lake verify"] = time.monotonic() - wall - sum(phases.values())
    finally:
        kafka.stop()
        leftovers = cast.fleet.leftovers()
    report = _report(
        options,
        truth=truth,
        controller=controller,
        findings=findings,
        stopped=stopped,
        leftovers=leftovers,
        recovery=recovery_paths(cast.fleet.logs),
    )
    report["phases_s"] = {name: round(seconds, 1) for name, seconds in phases.items()}
    report["duration_s"] = round(time.monotonic() - wall, 1)
    (options.out / "kills.json").write_text(json.dumps(controller.details(), indent=2) + "\n")
    (options.out / "summary.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _report(
    options: Options,
    *,
    truth: Truth | None,
    controller: Controller,
    findings: checks.Findings,
    stopped: dict[str, int | None],
    leftovers: list[int],
    recovery: dict[str, int],
) -> dict[str, object]:
    chaos = controller.summary()
    problems = list(findings.problems)
    if options.nodes == 3:
        problems += [f"recovery path never taken: {path!r}" for path, count in recovery.items() if not count]
        done = (
            {str(fault["fault"]) for fault in controller.kafka.faults}
            if isinstance(controller.kafka, Cluster)
            else set()
        )
        missing = {
            "leader kill",
            "coordinator kill",
            "ISR below the minimum",
            "cluster stop and start",
            "normalizer started while every node is down",
        } - done
        problems += [f"cluster fault not done: {fault}" for fault in sorted(missing)]
        coordinator_kills = [f for f in chaos_faults(controller) if f["fault"] == "coordinator kill"]
        if not any(f.get("inside") for f in coordinator_kills):
            problems.append("no coordinator kill landed inside an open transaction")
        if not chaos["freezes_inside_transactions"]:
            problems.append("no normalizer was frozen inside an open transaction")
    if chaos["kills"] != options.kills:
        problems.append(f"{chaos['kills']} kills, {options.kills} asked")
    if not chaos["kills_inside_transactions"]:
        problems.append("no kill landed inside an open transaction")
    if not chaos["kills_inside_batches"]:
        problems.append("no kill landed inside a sink micro-batch")
    if chaos["broker_restarts"] != 1:
        problems.append("the broker was not restarted")
    unclean = {name: code for name, code in stopped.items() if code not in (0, None)}
    if unclean:
        problems.append(f"services that did not stop cleanly at the end (exit codes): {unclean}")
    if leftovers:
        problems.append(f"processes left running: {leftovers}")
    topic, changelog = findings.topic, findings.changelog
    return {
        "changes": truth.changes if truth else 0,
        "messages": truth.messages if truth else 0,
        "formats": options.formats,
        "kafka_nodes": options.nodes,
        "source_tables": len(truth.source_tables()) if truth else 0,
        "normalizers": 2 * len(options.formats),
        **chaos,
        "recovery_paths": recovery,
        "events": topic.found,
        "events_expected": topic.expected,
        "lost": topic.lost + changelog.lost,
        "duplicated": topic.duplicated + changelog.duplicated + findings.changelog_records_twice,
        "unified_topic": asdict(topic),
        "dead_letters": asdict(findings.dead_letters),
        "changelog": {**asdict(changelog), "kafka_records_twice": findings.changelog_records_twice},
        "quarantined": findings.quarantined,
        "tables": findings.tables,
        "tables_matching": findings.tables_matching,
        "history_tables": findings.history_tables,
        "history_matching": findings.history_matching,
        "lake_verify_exit": findings.verify_code,
        "problems": problems,
        "passed": not problems,
    }


def chaos_faults(controller: Controller) -> list[dict[str, object]]:
    return controller.kafka.faults if isinstance(controller.kafka, Cluster) else []


async def _until_stopped(options: Options) -> dict[str, object]:
    """``run``, cancelled by SIGTERM as by Ctrl-C: its cleanup stops every process it started either way."""
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await run(options)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    try:
        report = asyncio.run(_until_stopped(options))
    except (asyncio.CancelledError, KeyboardInterrupt):
        say("interrupted: the processes it started are stopped")
        return 1
    print(json.dumps(report, indent=2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
