"""aiokafka connection settings from ``KafkaSettings`` (security included)."""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.errors import ConfigError


def connection_kwargs(settings: KafkaSettings) -> dict[str, Any]:
    """Keyword arguments every aiokafka client of binlake gets.

    Raises ConfigError naming the setting when a TLS file cannot be read or the client key not loaded.
    """
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "security_protocol": settings.security_protocol,
    }
    if settings.security_protocol in ("SSL", "SASL_SSL"):
        kwargs["ssl_context"] = ssl_context(settings)
    if settings.security_protocol.startswith("SASL_"):
        kwargs["sasl_mechanism"] = settings.sasl_mechanism
        kwargs["sasl_plain_username"] = settings.sasl_username
        kwargs["sasl_plain_password"] = settings.sasl_password.get_secret_value() if settings.sasl_password else None
    return kwargs


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext:
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = getattr(settings, name)
        if path is not None:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                raise ConfigError(f"BINLAKE_KAFKA_{name.upper()}: cannot read {path}: {exc.strerror}") from None
    # Never None: OpenSSL would then ask for an encrypted key's password on the terminal (a hang in a shell).
    password = settings.ssl_key_password.get_secret_value() if settings.ssl_key_password else ""
    try:
        context = create_ssl_context(
            cafile=settings.ssl_cafile, certfile=settings.ssl_certfile, keyfile=settings.ssl_keyfile, password=password
        )
    except ssl.SSLError as exc:
        what = "BINLAKE_KAFKA_SSL_CAFILE" if settings.ssl_certfile is None else "BINLAKE_KAFKA_SSL_CAFILE/_CERTFILE"
        raise ConfigError(
            f"{what}: cannot load the TLS files ({exc.reason or exc}): PEM certificates are needed, and the "
            "client key must be the certificate's, with BINLAKE_KAFKA_SSL_KEY_PASSWORD set when it is encrypted"
        ) from None
    context.check_hostname = settings.ssl_check_hostname
    return context
