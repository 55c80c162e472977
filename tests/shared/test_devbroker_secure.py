"""The development broker's SASL_SSL listener: its settings, its SCRAM users, its ports on restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared.devbroker.broker import _listener_ports, _server_properties
from binlake.shared.devbroker.secure import SaslSslListener

pytestmark = pytest.mark.unit


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_the_listener_is_added_beside_plaintext_and_configured_on_its_own(tmp_path: Path) -> None:
    listener = SaslSslListener(tmp_path / "ks.pem", "kpw", {"svc": "pw1"}, truststore=tmp_path / "ca.pem")
    settings = _properties(_server_properties(tmp_path, 1001, 1002, (listener, 1003)))
    assert settings["listeners"] == ("PLAINTEXT://127.0.0.1:1001,SASL_SSL://127.0.0.1:1003,CONTROLLER://127.0.0.1:1002")
    assert settings["advertised.listeners"] == "PLAINTEXT://127.0.0.1:1001,SASL_SSL://127.0.0.1:1003"
    assert settings["inter.broker.listener.name"] == "PLAINTEXT"
    assert settings["listener.security.protocol.map"].endswith(",SASL_SSL:SASL_SSL")
    scoped = {key.removeprefix("listener.name.sasl_ssl."): value for key, value in settings.items()}
    assert scoped["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert scoped["ssl.keystore.type"] == scoped["ssl.truststore.type"] == "PEM"
    assert scoped["ssl.client.auth"] == "required"
    assert listener.format_arguments() == ["--add-scram", "SCRAM-SHA-512=[name=svc,password=pw1]"]
    assert _listener_ports(settings["listeners"]) == {"PLAINTEXT": 1001, "SASL_SSL": 1003, "CONTROLLER": 1002}


def test_without_a_truststore_clients_present_no_certificate(tmp_path: Path) -> None:
    listener = SaslSslListener(tmp_path / "ks.pem", "kpw", {"svc": "pw1"})
    assert not any("client.auth" in key or "truststore" in key for key in listener.properties(1003))


def test_a_plain_broker_keeps_its_two_listeners(tmp_path: Path) -> None:
    settings = _properties(_server_properties(tmp_path, 1001, 1002))
    assert _listener_ports(settings["listeners"]) == {"PLAINTEXT": 1001, "CONTROLLER": 1002}
    assert "sasl" not in _server_properties(tmp_path, 1001, 1002).lower()


def test_scram_users_must_survive_the_format_tools_list_syntax(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SCRAM user"):
        SaslSslListener(tmp_path / "ks.pem", "kpw", {"svc": "a,b]"})
