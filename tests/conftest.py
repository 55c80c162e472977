"""Test-wide settings: hypothesis profiles (CI runs derandomized, so a red build reproduces), the test order."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Integration tests first, then the deployment checks, then the unit tests (a stable sort).

    ``make test`` hands tests to its two workers one or two at a time, in this order: the long tests (a
    Spark application, a broker, processes) start early and the many short unit tests fill the end, so
    neither worker idles while the other runs a long test last."""
    items.sort(key=_rank)


def _rank(item: pytest.Item) -> int:
    """By marker, wherever the test file is: integration 0, deploy 1, the rest 2."""
    for rank, marker in enumerate(("integration", "deploy")):
        if item.get_closest_marker(marker) is not None:
            return rank
    return 2
