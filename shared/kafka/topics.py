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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

REPLICAS: Final = 3
"""The replication factor of a production topic; fewer only where the cluster has fewer brokers."""


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
