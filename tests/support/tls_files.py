"""A throwaway certificate authority and the PEM files a SASL_SSL test needs, made with the openssl CLI.

The venv has no ``cryptography`` package (nothing binlake runs needs it), and
openssl is on every machine that runs the tests: one CA, a broker certificate
for 127.0.0.1 and localhost, a client certificate, and a second CA that signed
none of them (what an untrusted broker looks like to a client). Keys are EC
P-256 in PKCS#8, the form Kafka's PEM key store reads; the broker's and the
client's are encrypted with a password (Kafka's file-based PEM key store takes
no other, and the client's is the secret ``BINLAKE_KAFKA_SSL_KEY_PASSWORD``)
by a scheme Java decrypts.
The certificates carry what strict verifiers ask for (Python 3.13's default
``VERIFY_X509_STRICT``): key identifiers, a critical CA basic constraint, key usages.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

_CA_EXTENSIONS = """basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
"""
_LEAF_EXTENSIONS = """basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage={usage}
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
subjectAltName={names}
"""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca: Path
    """The CA certificate that signed the broker's and the client's certificates."""
    other_ca: Path
    """A CA that signed neither: a client trusting only it must refuse the broker."""
    broker_keystore: Path
    """The broker's encrypted key and its certificate, one PEM file (Kafka's PEM key store)."""
    broker_key_password: str
    client_cert: Path
    client_key: Path
    """The client's key, encrypted with ``client_key_password``."""
    client_key_password: str


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {done.stderr[-2000:]}")


def _key(folder: Path, name: str, password: str | None) -> Path:
    """An EC P-256 key in PKCS#8, encrypted when ``password`` is given: with PBE-SHA1-3DES, as Java's
    PEM reader (Kafka's) cannot decrypt OpenSSL 3's default PBES2 ("PBES2 SecretKeyFactory not available")."""
    plain = folder / f"{name}.plain.key"
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", plain.name, cwd=folder)
    if password is None:
        return plain
    encrypted = folder / f"{name}.key"
    _openssl(
        "pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-in", plain.name, "-out", encrypted.name,
        "-passout", f"pass:{password}", cwd=folder,
    )  # fmt: skip
    plain.unlink()
    return encrypted


def _ca(folder: Path, name: str) -> tuple[Path, Path]:
    key = _key(folder, name, None)
    cert = folder / f"{name}.pem"
    (folder / f"{name}.ext").write_text(_CA_EXTENSIONS)
    _openssl(
        "req", "-x509", "-new", "-key", key.name, "-out", cert.name, "-days", "2", "-subj", f"/CN=binlake test {name}",
        "-extensions", "v3", "-config", _request_config(folder, f"{name}.ext"), cwd=folder,
    )  # fmt: skip
    return cert, key


def _request_config(folder: Path, extensions: str) -> str:
    """An openssl config whose [v3] section holds ``extensions`` (``req -x509`` reads them from a config)."""
    config = folder / f"{extensions}.cnf"
    config.write_text("[req]\ndistinguished_name=dn\n[dn]\n[v3]\n" + (folder / extensions).read_text())
    return config.name


def _leaf(
    folder: Path, name: str, ca: tuple[Path, Path], *, usage: str, names: str, password: str
) -> tuple[Path, Path]:
    key = _key(folder, name, password)
    request, cert = folder / f"{name}.csr", folder / f"{name}.pem"
    _openssl(
        "req", "-new", "-key", key.name, "-passin", f"pass:{password}", "-out", request.name,
        "-subj", f"/CN=binlake test {name}", "-config", _request_config(folder, "empty.ext"), cwd=folder,
    )  # fmt: skip
    (folder / f"{name}.ext").write_text(_LEAF_EXTENSIONS.format(usage=usage, names=names))
    _openssl(
        "x509", "-req", "-in", request.name, "-CA", ca[0].name, "-CAkey", ca[1].name, "-CAcreateserial",
        "-out", cert.name, "-days", "2", "-extfile", f"{name}.ext", cwd=folder,
    )  # fmt: skip
    return cert, key


def make(folder: Path) -> TlsFiles:
    """A CA, the broker's and a client's certificates and keys, and an unrelated CA, in ``folder``."""
    if shutil.which("openssl") is None:
        pytest.skip("the SASL_SSL test makes its certificates with the openssl CLI")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty.ext").write_text("")
    ca = _ca(folder, "ca")
    other_ca, _ = _ca(folder, "other-ca")
    broker_password, client_password = "broker-key-pw-7f3a", "client-key-pw-91c2"
    broker_cert, broker_key = _leaf(
        folder, "broker", ca, usage="serverAuth", names="IP:127.0.0.1,DNS:localhost", password=broker_password
    )
    client_cert, client_key = _leaf(
        folder, "client", ca, usage="clientAuth", names="DNS:binlake", password=client_password
    )
    keystore = folder / "broker-keystore.pem"
    keystore.write_text(broker_key.read_text() + broker_cert.read_text())
    return TlsFiles(ca[0], other_ca, keystore, broker_password, client_cert, client_key, client_password)
