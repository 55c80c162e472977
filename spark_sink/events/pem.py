"""The Kafka client's TLS files as Spark source options: PEM contents, read once on the driver.

Kafka's Java client takes PEM material inline (``ssl.truststore.certificates``,
``ssl.keystore.certificate.chain``, ``ssl.keystore.key``), so the executors that
open the Kafka connections need no copy of the files, and a certificate and
its key may live in two files (a Kubernetes TLS Secret's ``tls.crt`` and
``tls.key``, as the normalizer reads them) where Kafka's file-based PEM key
store wants one. The key travels in the options: the session's redaction
pattern (``spark_sink.session``) covers ``ssl.keystore.key``, as Spark's own
covers passwords.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.errors import ConfigError

_BLOCK: Final = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.+?-----END \1-----", re.DOTALL)
PKCS8: Final = frozenset({"PRIVATE KEY", "ENCRYPTED PRIVATE KEY"})


def blocks(path: str, setting: str, kinds: frozenset[str]) -> str:
    """The PEM blocks of ``kinds`` in the file ``path`` (named by ``setting`` in errors), one per line group."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror}") from None
    found = [match.group(0) for match in _BLOCK.finditer(text) if match.group(1) in kinds]
    if found:
        return "\n".join(found)
    others = sorted({match.group(1) for match in _BLOCK.finditer(text)})
    if kinds == PKCS8 and any(kind.endswith("PRIVATE KEY") for kind in others):
        raise ConfigError(
            f"{setting}: {path} holds a {others[0]} key; Kafka's Java client (the sink) reads PKCS#8 keys only: "
            "convert it with `openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES` (encrypted) or `-nocrypt`"
        )
    wanted = " or ".join(sorted(kinds))
    raise ConfigError(f"{setting}: no PEM {wanted} in {path}" + (f" (it holds {', '.join(others)})" if others else ""))


def ssl_options(kafka: KafkaSettings) -> dict[str, str]:
    """``kafka.ssl.*`` options of Spark's Kafka source for the SSL and SASL_SSL protocols."""
    options: dict[str, str] = {}
    if kafka.ssl_cafile:
        options["kafka.ssl.truststore.type"] = "PEM"
        certificates = blocks(kafka.ssl_cafile, "BINLAKE_KAFKA_SSL_CAFILE", frozenset({"CERTIFICATE"}))
        options["kafka.ssl.truststore.certificates"] = certificates
    if kafka.ssl_certfile:
        options["kafka.ssl.keystore.type"] = "PEM"
        chain = blocks(kafka.ssl_certfile, "BINLAKE_KAFKA_SSL_CERTFILE", frozenset({"CERTIFICATE"}))
        options["kafka.ssl.keystore.certificate.chain"] = chain
        # Without a key file the key is in the certificate's file, as Python's ssl module reads it too.
        key_file, setting = (
            (kafka.ssl_keyfile, "BINLAKE_KAFKA_SSL_KEYFILE")
            if kafka.ssl_keyfile
            else (kafka.ssl_certfile, "BINLAKE_KAFKA_SSL_CERTFILE")
        )
        options["kafka.ssl.keystore.key"] = blocks(key_file, setting, PKCS8)
    if kafka.ssl_key_password is not None:
        options["kafka.ssl.key.password"] = kafka.ssl_key_password.get_secret_value()
    if not kafka.ssl_check_hostname:
        options["kafka.ssl.endpoint.identification.algorithm"] = ""
    return options
