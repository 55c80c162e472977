"""The Prometheus files, checked by promtool: the rules, the config, and a unit test for every alert."""

from __future__ import annotations

import pytest
import yaml

from tests.deploy.deployment_files import ALERTS, PROMETHEUS
from tests.deploy.tools import run, tool

pytestmark = [pytest.mark.unit, pytest.mark.deploy]

ALERT_TESTS = ALERTS.with_name("alerts.test.yml")


def test_promtool_checks_rules_and_config() -> None:
    run(tool("promtool"), "check", "rules", str(ALERTS))
    run(tool("promtool"), "check", "config", str(PROMETHEUS))


def test_promtool_unit_tests_pass() -> None:
    run(tool("promtool"), "test", "rules", str(ALERT_TESTS))


def test_every_alert_has_a_unit_test_that_fires_it_and_one_that_stays_silent() -> None:
    alerts = {rule["alert"] for group in yaml.safe_load(ALERTS.read_text("utf-8"))["groups"] for rule in group["rules"]}
    fires: set[str] = set()
    silent: set[str] = set()
    for case in yaml.safe_load(ALERT_TESTS.read_text("utf-8"))["tests"]:
        for check in case.get("alert_rule_test", []):
            expected = check.get("exp_alerts", [])
            (fires if expected else silent).add(check["alertname"])
            for alert in expected:
                # Labels and annotations are compared whole by promtool: a test names them all.
                assert alert.get("exp_annotations", {}).get("summary"), case["name"]
    assert alerts == fires, f"no firing test: {sorted(alerts - fires)}"
    assert alerts == silent, f"no healthy test: {sorted(alerts - silent)}"
