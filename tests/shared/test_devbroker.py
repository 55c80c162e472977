"""The development broker's pure parts."""

from __future__ import annotations

import socket

import pytest

from binlake.shared.devbroker.broker import PORTS_FROM, _cluster_id, _ephemeral_low, free_port

pytestmark = pytest.mark.unit


def test_broker_cluster_ids_never_look_like_options() -> None:
    # A leading '-' made kafka-storage read the id as an option (a real CI failure).
    ids = {_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert not any(cluster_id.startswith("-") for cluster_id in ids)
    assert all(len(cluster_id) == 22 for cluster_id in ids)


def test_free_ports_lie_below_the_ephemeral_range_and_are_free() -> None:
    # A port from bind(0) is ephemeral: any outgoing connection may take it before the
    # service binds it (a demo normalizer died with "address already in use" in CI).
    low = _ephemeral_low()
    ports = [free_port() for _ in range(50)]
    assert all(PORTS_FROM <= port < low for port in ports)
    for port in ports[:5]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_is_handed_out_once() -> None:
    # A broker stopped for an outage restarts on its ports: a service started meanwhile must not get one.
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
