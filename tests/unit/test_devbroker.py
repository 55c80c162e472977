"""The development broker's pure parts."""

from __future__ import annotations

import pytest

from shared.devbroker.broker import _cluster_id

pytestmark = pytest.mark.unit


def test_broker_cluster_ids_never_look_like_options() -> None:
    # A leading '-' made kafka-storage read the id as an option (a real CI failure).
    ids = {_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert not any(cluster_id.startswith("-") for cluster_id in ids)
    assert all(len(cluster_id) == 22 for cluster_id in ids)
