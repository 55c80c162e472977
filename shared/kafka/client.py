"""aiokafka connection settings from ``KafkaSettings`` (security included)."""

from __future__ import annotations

from typing import Any

from aiokafka.helpers import create_ssl_context

from shared.config.settings import KafkaSettings


def connection_kwargs(settings: KafkaSettings) -> dict[str, Any]:
    """Keyword arguments every aiokafka client of binlake gets."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "security_protocol": settings.security_protocol,
    }
    if settings.security_protocol in ("SSL", "SASL_SSL"):
        context = create_ssl_context(
            cafile=settings.ssl_cafile,
            certfile=settings.ssl_certfile,
            keyfile=settings.ssl_keyfile,
            password=settings.ssl_key_password.get_secret_value() if settings.ssl_key_password else None,
        )
        context.check_hostname = settings.ssl_check_hostname
        kwargs["ssl_context"] = context
    if settings.security_protocol.startswith("SASL_"):
        kwargs["sasl_mechanism"] = settings.sasl_mechanism
        kwargs["sasl_plain_username"] = settings.sasl_username
        kwargs["sasl_plain_password"] = settings.sasl_password.get_secret_value() if settings.sasl_password else None
    return kwargs
