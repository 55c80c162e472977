"""``binlake topics create``'s pure parts: its arguments, the replication it asks for, what it reports lacking."""

from __future__ import annotations

import pytest

from binlake.shared.cli.topics import parse_configs, parse_topics
from binlake.shared.errors import BinlakeError
from binlake.shared.kafka.topics import Replication, asked, shortfalls

pytestmark = pytest.mark.unit


def test_topics_take_their_own_partitions_or_the_default() -> None:
    assert parse_topics(["a", "b:1", "c:12"], 3) == {"a": 3, "b": 1, "c": 12}
    assert parse_topics(["a", "a:4"], 4) == {"a": 4}


@pytest.mark.parametrize(
    ("spec", "says"),
    [(":3", "has no name"), ("a:x", "whole number"), ("a:0", "at least 1"), ("a:-1", "at least 1")],
)
def test_a_bad_topic_is_refused_by_name(spec: str, says: str) -> None:
    with pytest.raises(BinlakeError, match=says):
        parse_topics([spec], 3)


def test_a_topic_given_twice_must_agree() -> None:
    with pytest.raises(BinlakeError, match="given with 3 and 5 partitions"):
        parse_topics(["a", "a:5"], 3)


def test_configs_are_key_value_pairs() -> None:
    assert parse_configs(["retention.ms=1", "cleanup.policy=compact", "x="]) == {
        "retention.ms": "1",
        "cleanup.policy": "compact",
        "x": "",
    }
    with pytest.raises(BinlakeError, match="KEY=VALUE"):
        parse_configs(["retention.ms"])


def test_by_default_three_replicas_where_the_cluster_has_them() -> None:
    assert asked(1) == Replication(1)
    assert asked(2) == Replication(2, {"min.insync.replicas": "1"})
    assert asked(3) == Replication(3, {"min.insync.replicas": "2"})
    assert asked(5) == Replication(3, {"min.insync.replicas": "2"})


def test_an_asked_factor_sets_min_insync_explicitly_even_for_one_replica() -> None:
    # A cluster's brokers may default to min.insync.replicas 2: a one-replica topic inheriting it takes no write.
    assert asked(3, 1) == Replication(1, {"min.insync.replicas": "1"})
    assert asked(5, 5) == Replication(5, {"min.insync.replicas": "4"})
    assert asked(3, 3, 3) == Replication(3, {"min.insync.replicas": "3"})
    assert asked(3, None, 1) == Replication(3, {"min.insync.replicas": "1"})


@pytest.mark.parametrize(
    ("brokers", "factor", "min_insync", "says"),
    [
        (1, 3, None, "3 replicas asked but the cluster has 1 broker"),
        (3, 0, None, "at least 1"),
        (3, 3, 4, "must be 1..3"),
        (3, None, 0, "must be 1..3"),
        (1, None, 2, "must be 1..1"),
    ],
)
def test_what_the_cluster_cannot_hold_is_refused_before_creating(
    brokers: int, factor: int | None, min_insync: int | None, says: str
) -> None:
    with pytest.raises(BinlakeError, match=says):
        asked(brokers, factor, min_insync)


def test_an_existing_topic_short_of_replicas_or_min_insync_names_the_fix() -> None:
    plan = Replication(3, {"min.insync.replicas": "2"})
    assert shortfalls("t", 3, 2, plan) == ()
    assert shortfalls("t", 3, 3, plan) == ()
    replicas, insync = shortfalls("t", 1, None, plan)
    assert "t has 1 replica(s), fewer than the 3 asked" in replicas
    assert "kafka-reassign-partitions.sh" in replicas
    assert "--replication-factor 1" in replicas
    assert "min.insync.replicas 1, below the 2 asked" in insync
    assert "--entity-name t --add-config min.insync.replicas=2" in insync
    assert shortfalls("t", 1, 1, Replication(1)) == ()
