"""The dev cluster's pure parts: its nodes' settings, the Metadata v4 exchange, and how binlake replicates topics."""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import pytest

from binlake.shared.cli.dev import add_arguments
from binlake.shared.devbroker import metadata
from binlake.shared.devbroker.cluster import node_properties
from binlake.shared.kafka.topics import replication

pytestmark = pytest.mark.unit


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_every_node_votes_and_the_internal_topics_have_three_replicas(tmp_path: Path) -> None:
    ports = {1: (1001, 2001), 2: (1002, 2002), 3: (1003, 2003)}
    settings = _properties(node_properties(tmp_path / "node-2", 2, ports))
    assert settings["node.id"] == "2"
    assert settings["process.roles"] == "broker,controller"
    assert settings["controller.quorum.voters"] == "1@127.0.0.1:2001,2@127.0.0.1:2002,3@127.0.0.1:2003"
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:1002,CONTROLLER://127.0.0.1:2002"
    assert settings["advertised.listeners"] == "PLAINTEXT://127.0.0.1:1002"
    assert settings["log.dirs"] == str(tmp_path / "node-2" / "data")
    for name in ("offsets.topic", "transaction.state.log", "share.coordinator.state.topic"):
        assert settings[f"{name}.replication.factor"] == "3"
    assert settings["default.replication.factor"] == "3"
    assert settings["transaction.state.log.min.isr"] == settings["min.insync.replicas"] == "2"
    assert settings["auto.create.topics.enable"] == "false"


def test_a_cluster_of_two_keeps_writes_going_with_one_node_down(tmp_path: Path) -> None:
    settings = _properties(node_properties(tmp_path, 1, {1: (1001, 2001), 2: (1002, 2002)}))
    assert settings["offsets.topic.replication.factor"] == "2"
    assert settings["min.insync.replicas"] == "1"


def test_binlakes_topics_are_replicated_as_the_cluster_allows() -> None:
    assert replication(1).factor == 1
    assert replication(1).configs == {}  # one broker: its own default, as before
    assert (replication(2).factor, replication(2).configs) == (2, {"min.insync.replicas": "1"})
    for brokers in (3, 5, 9):
        assert (replication(brokers).factor, replication(brokers).configs) == (3, {"min.insync.replicas": "2"})
    assert replication(0).factor == 1


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text)) + text.encode()


def _ints(values: list[int]) -> bytes:
    return struct.pack(">i", len(values)) + b"".join(struct.pack(">i", value) for value in values)


def test_a_metadata_v4_answer_gives_brokers_leaders_and_isr() -> None:
    brokers = [(1, "127.0.0.1", 1001, None), (3, "127.0.0.1", 1003, "rack-a")]
    body = struct.pack(">ii", 7, 0) + struct.pack(">i", len(brokers))
    for node, host, port, rack in brokers:
        body += struct.pack(">i", node) + _string(host) + struct.pack(">i", port) + _string(rack)
    body += _string("cluster-id") + struct.pack(">i", 3)
    body += struct.pack(">i", 2)
    body += struct.pack(">h", 0) + _string("orders") + struct.pack(">b", 0) + struct.pack(">i", 2)
    body += struct.pack(">hii", 0, 1, 3) + _ints([2, 3, 1]) + _ints([3, 1])
    body += struct.pack(">hii", 5, 0, -1) + _ints([2, 1, 3]) + _ints([])
    body += struct.pack(">h", 0) + _string("__consumer_offsets") + struct.pack(">b", 1) + struct.pack(">i", 0)
    known = metadata.parse(body)
    assert known.brokers == {1: ("127.0.0.1", 1001), 3: ("127.0.0.1", 1003)}
    assert known.controller == 3
    assert [(p.partition, p.leader, p.replicas, p.isr, p.error) for p in known.topics["orders"]] == [
        (0, -1, (2, 1, 3), (), 5),
        (1, 3, (2, 3, 1), (3, 1), 0),
    ]
    assert known.internal == frozenset({"__consumer_offsets"})


def test_the_metadata_request_asks_for_every_topic_and_creates_none() -> None:
    request = metadata.request(correlation_id=9)
    size, api, version, correlation = struct.unpack_from(">ihhi", request)
    assert (size, api, version, correlation) == (len(request) - 4, 3, 4, 9)
    assert request.endswith(b"binlake" + struct.pack(">ib", -1, 0))


def test_node_ids_on_the_command_line() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["broker", "stop", "--node", "2"]).node == [2]
    assert parser.parse_args(["broker", "start", "--node", "1,2,3"]).node == [1, 2, 3]
    assert parser.parse_args(["broker", "start"]).node is None
    for wrong in ("0", "a", "1,,2"):
        with pytest.raises(SystemExit):
            parser.parse_args(["broker", "start", "--node", wrong])
