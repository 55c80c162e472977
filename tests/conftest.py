"""Test-wide settings: hypothesis profiles (CI runs derandomized, so a red build reproduces)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


LONGEST_FIRST = (
    "tests/integration/test_sink_kill.py::test_sink_survives_sigkill_during_batches",
    "tests/integration/test_deploy_s3.py::test_sink_writes_and_verify_reads_a_lake_on_s3",
    "tests/integration/test_lake_cli.py::test_keyed_lake_matches_then_tampering_is_reported",
    "tests/integration/test_demo.py::test_demo_lands_every_format_in_the_lake_equal_to_the_truth",
    "tests/integration/test_sink_semantics.py::test_mirror_history_and_schema_rules",
    "tests/integration/test_sink_order.py::test_tied_order_keys_apply_in_source_order",
    "tests/integration/test_lake_cli.py::test_keyless_lake",
    "tests/integration/test_sink_batch_pass.py::test_one_pass_appends_counts_and_quarantines_exactly_once",
    "tests/integration/test_sink_split_queries.py::test_changelog_and_mirrors_in_two_applications",
    "tests/integration/test_spark_sink.py::test_tied_canal_traffic_end_to_end",
    "tests/integration/test_deploy_prometheus.py::test_prometheus_scrapes_both_and_every_expression_evaluates",
    "tests/integration/test_exactly_once.py::test_sigkill_loses_and_duplicates_nothing",
    "tests/integration/test_tombstones.py::test_one_commit_per_batch_and_an_earlier_releases_tombstones",
    "tests/integration/test_spark_sink.py::test_debezium_json_small_batches",
    "tests/integration/test_spark_sink.py::test_canal_json_to_delta_exactly_once",
    "tests/integration/test_broker_outage.py::test_normalizer_survives_a_broker_outage",
    "tests/integration/test_sink_metrics.py::test_scraped_metrics_match_the_lake",
)
"""The slowest tests (minutes each, from CI's ``--durations`` report), longest first.

``make test`` runs them before everything else and hands the workers one test
at a time (``--dist load --maxschedchunk 1``), so each worker takes the longest
test left when it is free: a run ends when the later worker does, and a
minutes-long test started last would keep the other worker idle for its length.
Only an order: a name missing here (a test renamed) runs in its usual place.
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {node_id: i for i, node_id in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))  # stable: the rest keep their order
