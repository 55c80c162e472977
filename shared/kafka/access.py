"""Why the brokers refuse this client, when the answer is the configuration: say so, and stop.

aiokafka's bootstrap swallows the cause of a failed connection (it logs it and
raises ``KafkaConnectionError: Unable to bootstrap``), so a wrong SASL password
or a broker certificate the client does not trust looked like an unreachable
broker: the normalizer backed off and retried forever. ``diagnose`` opens one
connection of its own, the way aiokafka does (TLS, ApiVersions, SASL), and
raises ``KafkaAccessError`` for the failures no retry can mend, with what to
change. Everything else (refused, timed out, closed) it leaves to the caller's
back-off: a broker that is down or restarting looks like that.

No message carries a secret: aiokafka's errors hold the broker's message, which
names the mechanism, never the password.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Final

from aiokafka.conn import create_conn
from aiokafka.errors import (
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.errors import BinlakeError
from binlake.shared.kafka.client import connection_kwargs

HOSTNAME_MISMATCH: Final = 62
"""OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH: the certificate is trusted but names other hosts."""


class KafkaAccessError(BinlakeError):
    """The brokers refuse this client's credentials or it refuses theirs: a configuration error, not an outage."""


async def diagnose(kafka: KafkaSettings, *, timeout_s: float = 10.0) -> None:
    """Raise ``KafkaAccessError`` if a bootstrap server refuses the credentials or is not trusted; else return.

    Only SSL and SASL protocols are probed (PLAINTEXT has nothing to get wrong but the address). Each
    bootstrap server is tried until one answers, within ``timeout_s`` in all.
    """
    if kafka.security_protocol == "PLAINTEXT":
        return
    client = connection_kwargs(kafka)
    options = {key: value for key, value in client.items() if key != "bootstrap_servers"}
    try:
        async with asyncio.timeout(timeout_s):
            for server in client["bootstrap_servers"].split(","):
                host, colon, port = server.strip().rpartition(":")
                if not colon:  # no port: Kafka's default, as aiokafka takes it
                    host, port = port, "9092"
                if port.isdigit() and await _probe(kafka, host.strip("[]"), int(port), options):
                    return
    except TimeoutError:
        return  # slow or unreachable: the caller's back-off decides


async def _probe(kafka: KafkaSettings, host: str, port: int, options: dict[str, Any]) -> bool:
    """True once ``host:port`` accepted the connection; raise on a configuration error; False otherwise."""
    where = f"{host}:{port}"
    try:
        conn = await create_conn(host, port, client_id="binlake-access-check", request_timeout_ms=5000, **options)
    except ssl.SSLCertVerificationError as exc:
        raise KafkaAccessError(_untrusted(where, exc)) from None
    except SaslAuthenticationFailed as exc:
        raise KafkaAccessError(
            f"the broker at {where} refused SASL authentication as user {kafka.sasl_username!r} with "
            f"{kafka.sasl_mechanism} ({_broker_says(exc)}): check BINLAKE_KAFKA_SASL_USERNAME and "
            f"BINLAKE_KAFKA_SASL_PASSWORD, and that the user has {kafka.sasl_mechanism} credentials on the cluster"
        ) from None
    except (UnsupportedSaslMechanismError, IllegalSaslStateError) as exc:
        raise KafkaAccessError(
            f"the broker at {where} does not take SASL mechanism {kafka.sasl_mechanism} on this listener "
            f"({_broker_says(exc)}): set BINLAKE_KAFKA_SASL_MECHANISM to one it enables"
        ) from None
    except (OSError, TimeoutError, KafkaError):
        return False  # refused, reset, closed, timed out: not a configuration error this can name
    conn.close()
    return True


def _untrusted(where: str, exc: ssl.SSLCertVerificationError) -> str:
    reason = exc.verify_message or str(exc)
    if exc.verify_code == HOSTNAME_MISMATCH:
        return (
            f"the certificate of the broker at {where} does not name that host ({reason}): connect by a name "
            "its certificate holds (BINLAKE_KAFKA_BOOTSTRAP_SERVERS and the brokers' advertised listeners), "
            "or set BINLAKE_KAFKA_SSL_CHECK_HOSTNAME=false"
        )
    return (
        f"the certificate of the broker at {where} is not trusted ({reason}): set BINLAKE_KAFKA_SSL_CAFILE to "
        "a PEM file holding the CA certificate that signed the brokers' certificates"
    )


def _broker_says(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
