"""Topics binlake's own tools create, replicated as the cluster they land on allows.

On one broker a topic can only have one replica. On a cluster of three or more,
binlake's topics (the demo's vendor topics, unified topic and dead letters, the
replay ledger, the tests' and chaos runs' topics) get replication factor 3 and
``min.insync.replicas`` 2: acks=all writes (the producers' default with
idempotence) survive one broker down, and fail rather than rest on a single copy
with two down. The count of brokers comes from the cluster's metadata at creation,
so nobody has to remember a flag; the topic config is set explicitly, so it holds on
a cluster whose brokers default to ``min.insync.replicas=1``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError, for_code

from binlake.shared.errors import BinlakeError

REPLICAS: Final = 3
"""The replication factor of a production topic; fewer only where the cluster has fewer brokers."""
SETTLE_TRIES: Final = 40
SETTLE_PAUSE_S: Final = 0.25
"""How long a report waits for the brokers to know a topic created a moment ago (its partitions, its configs)."""


@dataclass(frozen=True, slots=True)
class Replication:
    factor: int
    configs: dict[str, str] = field(default_factory=dict)


def replication(brokers: int) -> Replication:
    """Replication factor and topic configs for a cluster of ``brokers`` brokers.

    ``min.insync.replicas`` is one less than the factor (2 of 3): one replica may be down or behind
    without stopping writes. A lone broker keeps the broker's own default (1).
    """
    factor = max(1, min(REPLICAS, brokers))
    if factor == 1:
        return Replication(1)
    return Replication(factor, {"min.insync.replicas": str(factor - 1)})


async def broker_count(admin: AIOKafkaAdminClient) -> int:
    """How many brokers the cluster's metadata lists now (registered and not fenced)."""
    return len((await admin.describe_cluster())["brokers"])


async def new_topics(
    admin: AIOKafkaAdminClient, topics: Mapping[str, int], configs: Mapping[str, Mapping[str, str]] | None = None
) -> list[NewTopic]:
    """``NewTopic`` specs for ``topics`` (name -> partitions), replicated for the cluster ``admin`` talks to.

    ``configs``: further topic configs, by topic name.
    """
    plan = replication(await broker_count(admin))
    extra = configs or {}
    return [
        NewTopic(name, partitions, plan.factor, topic_configs={**plan.configs, **extra.get(name, {})})
        for name, partitions in topics.items()
    ]


def asked(brokers: int, factor: int | None = None, min_insync: int | None = None) -> Replication:
    """The replication a topic is created with: ``factor`` / ``min_insync`` where given, else :func:`replication`.

    Refused before anything is created (``BinlakeError``) when the cluster cannot hold it: more replicas than
    brokers, or a ``min.insync.replicas`` above the factor (every acks=all write would fail).
    """
    if factor is None:
        plan = replication(brokers)
    elif factor < 1:
        raise BinlakeError(f"--replication-factor must be at least 1, got {factor}")
    elif factor > brokers:
        raise BinlakeError(
            f"{factor} replicas asked but the cluster has {brokers} broker(s): start more brokers, "
            f"or pass --replication-factor {brokers}"
        )
    else:
        # Set explicitly even for one replica: a cluster's brokers may default to min.insync.replicas 2.
        plan = Replication(factor, {"min.insync.replicas": str(max(1, factor - 1))})
    if min_insync is None:
        return plan
    if not 1 <= min_insync <= plan.factor:
        raise BinlakeError(
            f"--min-insync-replicas {min_insync} with {plan.factor} replica(s): it must be 1..{plan.factor}, "
            "or every acks=all write fails"
        )
    return Replication(plan.factor, {"min.insync.replicas": str(min_insync)})


@dataclass(frozen=True, slots=True)
class TopicReport:
    """A topic as ``ensure`` left it, and how it falls short of what was asked (empty: it does not)."""

    topic: str
    created: bool
    partitions: int
    replication_factor: int
    min_insync_replicas: int | None
    shortfalls: tuple[str, ...] = ()


def shortfalls(topic: str, replicas: int, min_insync: int | None, plan: Replication) -> tuple[str, ...]:
    """What an existing topic lacks against ``plan``: fewer replicas, or a lower ``min.insync.replicas``.

    Never fixed in place: moving replicas is a reassignment an operator plans, and binlake's client cannot
    change one topic config without replacing the others. Each message names the tool that does it.
    """
    found = []
    if replicas < plan.factor:
        found.append(
            f"{topic} has {replicas} replica(s), fewer than the {plan.factor} asked: binlake does not move "
            "replicas; add them with kafka-reassign-partitions.sh, or pass --replication-factor "
            f"{replicas} to accept them"
        )
    wanted = plan.configs.get("min.insync.replicas")
    if wanted is not None and (min_insync or 1) < int(wanted):
        found.append(
            f"{topic} has min.insync.replicas {min_insync or 1}, below the {wanted} asked: kafka-configs.sh "
            f"--alter --entity-type topics --entity-name {topic} --add-config min.insync.replicas={wanted}"
        )
    return tuple(found)


async def ensure(
    admin: AIOKafkaAdminClient,
    topics: Mapping[str, int],
    plan: Replication,
    configs: Mapping[str, str] | None = None,
) -> list[TopicReport]:
    """Create the missing ``topics`` (name -> partitions) with ``plan`` and ``configs``; report every one.

    An existing topic is left as it is (a partition added would move keys between partitions, and the
    Kafka-order keys of the formats compare only within one), and reported with what it lacks.
    """
    existing = set(await admin.list_topics())
    missing = {name: count for name, count in topics.items() if name not in existing}
    if missing:
        specs = [
            NewTopic(name, count, plan.factor, topic_configs={**plan.configs, **(configs or {})})
            for name, count in missing.items()
        ]
        answer = await admin.create_topics(specs)
        for error in answer.topic_errors:
            name, code = error[0], error[1]
            if code == TopicAlreadyExistsError.errno:  # another creator won the race: checked as an existing one
                del missing[name]
            elif code:
                detail = error[2] if len(error) > 2 and error[2] else for_code(code).__name__
                raise BinlakeError(f"the brokers refused to create topic {name}: {detail}")
    # Partitions are reported as found: fewer or more than asked is the operator's choice, never changed here.
    return [await _report(admin, name, created=name in missing, plan=plan) for name in topics]


async def _report(admin: AIOKafkaAdminClient, topic: str, *, created: bool, plan: Replication) -> TopicReport:
    for _ in range(SETTLE_TRIES):  # a topic created a moment ago may have no partition metadata yet
        described = [d for d in await admin.describe_topics([topic]) if d["error_code"] == 0 and d["partitions"]]
        if described:
            break
        await asyncio.sleep(SETTLE_PAUSE_S)
    else:
        raise BinlakeError(f"topic {topic} has no partitions the brokers name yet; run the command again")
    found = described[0]["partitions"]
    replicas = min(len(p["replicas"]) for p in found)
    value = await _min_insync(admin, topic)
    min_insync = int(value) if value is not None else None
    lacks = () if created else shortfalls(topic, replicas, min_insync, plan)
    return TopicReport(topic, created, len(found), replicas, min_insync, lacks)


async def _min_insync(admin: AIOKafkaAdminClient, topic: str) -> str | None:
    """The topic's ``min.insync.replicas`` as a broker states it (None: the topic sets none, nor does its broker).

    The admin client asks any broker; one that has not replayed a topic created a moment ago answers
    UNKNOWN_TOPIC_OR_PARTITION inside the resource, which is asked again rather than read as "not set".
    """
    code, message = 0, ""
    for _ in range(SETTLE_TRIES):
        (answer,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        code, message, *_rest, entries = answer.resources[0]
        if code == 0:
            return next((entry[1] for entry in entries if str(entry[0]) == "min.insync.replicas"), None)
        await asyncio.sleep(SETTLE_PAUSE_S)
    detail = message or for_code(code).__name__
    raise BinlakeError(f"the brokers did not describe topic {topic}'s configs: {detail}; run the command again")
