"""Transactional ids never collide across consumer groups (they fence each other when they do)."""

from __future__ import annotations

import itertools

import pytest
from aiokafka import TopicPartition

from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.kafka.runtime import Normalizer

pytestmark = pytest.mark.unit


def _id(group: str, topic: str, partition: int) -> str:
    settings = NormalizerSettings(format="canal-json", input_topics=[topic], group_id=group)
    return Normalizer(settings, KafkaSettings()).transactional_id(TopicPartition(topic, partition))


def test_dotted_names_do_not_collide() -> None:
    # With <group>.<topic>.<partition>, group a.b on topic c and group a on topic b.c shared an id.
    assert _id("a.b", "c", 0) != _id("a", "b.c", 0)


def test_ids_are_unambiguous() -> None:
    """Topic names hold only [a-zA-Z0-9._-]: the id splits back into its parts from the right."""
    groups = ["a", "a.b", "a:b", "a.b:c", "a:", ":a", "binlake-dlq-replay", "g.replay"]
    topics = ["c", "b.c", "b-c", "b_c.d"]
    parts = list(itertools.product(groups, topics, [0, 1, 12]))
    ids = {_id(*part): part for part in parts}
    assert len(ids) == len(parts)
    for made, (group, topic, partition) in ids.items():
        assert made.rsplit(":", 2) == [group, topic, str(partition)]
        # binlake dlq replay's id, binlake-dlq-replay:<ledger topic>, has one colon: never a normalizer's.
        assert made.count(":") >= 2
