"""Test-wide settings: hypothesis profiles (CI runs derandomized, so a red build reproduces), the test order."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.support.broker import kafka_bootstrap

__all__ = ["kafka_bootstrap"]  # the session's broker, for every test that asks for it (tests/support/broker.py)

settings.register_profile(
    "ci", derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Integration tests first, then the deployment checks, then the unit tests; within each, by file name
    (a stable sort: a file's tests keep their order).

    ``make test`` hands tests to its two workers one or two at a time, in this order: the long tests (a
    Spark application, a broker, processes) start early and the many short unit tests fill the end, so
    neither worker idles while the other runs a long test last. File names, not folders, order a tier, so a
    test moved to another folder keeps its place."""
    items.sort(key=_rank)


def _rank(item: pytest.Item) -> tuple[int, str]:
    """By marker, wherever the test file is: integration 0, deploy 1, the rest 2; then the file's name."""
    for rank, marker in enumerate(("integration", "deploy")):
        if item.get_closest_marker(marker) is not None:
            return rank, item.path.name
    return 2, item.path.name
