"""A SASL_SSL listener for the development broker: TLS from PEM files, SCRAM users made at format time.

The broker keeps its PLAINTEXT listener (its own inter-broker and controller
traffic, and tools that set topics up) and gets a second one, ``SASL_SSL``, the
way a production cluster exposes itself to clients: TLS with a PEM key store
(``ssl.keystore.type=PEM``: no JKS, no keytool), SCRAM authentication, and,
with a trust store, client certificates required (mutual TLS). KRaft keeps
SCRAM credentials in the metadata log, so the users are written when the
storage is formatted (``kafka-storage format --add-scram``, KIP-900): the
listener authenticates from its first request, with no admin call first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

LISTENER: Final = "SASL_SSL"
ScramMechanism = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
_PLAIN_VALUE: Final = re.compile(r"[A-Za-z0-9._@+-]+")
"""What ``--add-scram``'s ``name=...,password=...`` list carries unquoted (its separators are , = [ ])."""


@dataclass(frozen=True, slots=True)
class SaslSslListener:
    """The extra listener: its key store, trust store and SCRAM users."""

    keystore: Path
    """PEM file: the broker's private key (PKCS#8, encrypted with ``key_password``) and its certificate chain.
    Kafka's file-based PEM key store takes only an encrypted key."""
    key_password: str
    users: Mapping[str, str] = field(default_factory=dict)
    """SCRAM users, name -> password."""
    truststore: Path | None = None
    """PEM CA certificates a client certificate must chain to: with one, clients must present a certificate
    (``ssl.client.auth=required``); without, TLS only encrypts and SCRAM authenticates."""
    mechanism: ScramMechanism = "SCRAM-SHA-512"

    def __post_init__(self) -> None:
        for name, password in self.users.items():
            if not (_PLAIN_VALUE.fullmatch(name) and _PLAIN_VALUE.fullmatch(password)):
                raise ValueError(f"SCRAM user {name!r}: names and passwords of the dev broker are [A-Za-z0-9._@+-]")

    def properties(self, port: int) -> dict[str, str]:
        """The broker settings of the listener on ``port`` (listener-scoped, so PLAINTEXT stays as it is)."""
        scoped = f"listener.name.{LISTENER.lower()}."
        values = {
            f"{scoped}sasl.enabled.mechanisms": self.mechanism,
            f"{scoped}{self.mechanism.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            f"{scoped}ssl.keystore.type": "PEM",
            f"{scoped}ssl.keystore.location": str(self.keystore),
            f"{scoped}ssl.key.password": self.key_password,
        }
        if self.truststore is not None:
            values[f"{scoped}ssl.truststore.type"] = "PEM"
            values[f"{scoped}ssl.truststore.location"] = str(self.truststore)
            values[f"{scoped}ssl.client.auth"] = "required"
        return values

    def format_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create the SCRAM users."""
        arguments: list[str] = []
        for name, password in self.users.items():
            arguments += ["--add-scram", f"{self.mechanism}=[name={name},password={password}]"]
        return arguments
