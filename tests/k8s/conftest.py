"""The cluster fixture of tests/k8s: one cluster for the session (bringing one up takes about a minute)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.k8s.cluster import Cluster, running_cluster

HELLO_IMAGE = os.environ.get("BINLAKE_K8S_HELLO_IMAGE", "localhost/binlake-hello:dev")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    images = [HELLO_IMAGE, *os.environ.get("BINLAKE_K8S_IMAGES", "").split()]
    with running_cluster(tmp_path_factory.mktemp("k8s") / "run", images) as up:
        yield up
