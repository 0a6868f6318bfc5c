"""A certificate authority for local clusters and tests: `replog dev up --tls` makes one.

Each certificate is an ECDSA P-256 key and an X.509 certificate as PEM files. Servers get
`localhost` and `127.0.0.1` as subject alternative names, so clients verify them by the
address they dial; every certificate can serve as a client certificate too.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY_DAYS = 365
LOCAL_NAMES = ("localhost", "127.0.0.1")


@dataclasses.dataclass(frozen=True)
class CertificateFiles:
    """PEM paths of one identity: what `ssl.certfile`, `ssl.keyfile` and `ssl.cafile` name."""

    certfile: str
    keyfile: str
    cafile: str


@dataclasses.dataclass(frozen=True)
class Authority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    cafile: str

    @classmethod
    def create(cls, directory: str, name: str = "replog dev CA") -> Authority:
        """A new self-signed CA, written to `directory`/ca.pem (its key to ca-key.pem)."""
        os.makedirs(directory, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _now()
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256())
        )
        cafile = os.path.join(directory, "ca.pem")
        _write(cafile, certificate.public_bytes(serialization.Encoding.PEM))
        _write(os.path.join(directory, "ca-key.pem"), _key_pem(key), private=True)
        return cls(key, certificate, cafile)

    @classmethod
    def load(cls, directory: str) -> Authority:
        """The CA that `create` wrote to `directory`."""
        cafile = os.path.join(directory, "ca.pem")
        with open(os.path.join(directory, "ca-key.pem"), "rb") as handle:
            key = serialization.load_pem_private_key(handle.read(), None)
        with open(cafile, "rb") as handle:
            certificate = x509.load_pem_x509_certificate(handle.read())
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory}/ca-key.pem is not an EC key of replog's dev CA")
        return cls(key, certificate, cafile)

    def issue(
        self,
        directory: str,
        name: str,
        *,
        subject: Sequence[tuple[str, str]] = (),
        hosts: Sequence[str] = LOCAL_NAMES,
        not_before: datetime.datetime | None = None,
        valid_for: datetime.timedelta = datetime.timedelta(days=VALIDITY_DAYS),
    ) -> CertificateFiles:
        """A key and certificate for `name` (the CN, then `subject`'s (attribute, value) pairs such
        as ("OU", "payments")), written as `directory`/`name`.pem and `name`-key.pem."""
        os.makedirs(directory, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        start = not_before or _now() - datetime.timedelta(minutes=5)
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
        attributes += [x509.NameAttribute(_OIDS[attribute], value) for attribute, value in subject]
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + valid_for)
            .add_extension(x509.SubjectAlternativeName([_general_name(host) for host in hosts]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        certfile = os.path.join(directory, f"{name}.pem")
        keyfile = os.path.join(directory, f"{name}-key.pem")
        _write(keyfile, _key_pem(key), private=True)
        _write(certfile, certificate.public_bytes(serialization.Encoding.PEM))
        return CertificateFiles(certfile, keyfile, self.cafile)


_OIDS = {
    "CN": NameOID.COMMON_NAME,
    "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
    "O": NameOID.ORGANIZATION_NAME,
    "L": NameOID.LOCALITY_NAME,
    "ST": NameOID.STATE_OR_PROVINCE_NAME,
    "C": NameOID.COUNTRY_NAME,
}


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: str, data: bytes, *, private: bool = False) -> None:
    """Write whole or not at all: a reader (a reloading server) never sees half a file."""
    temporary = path + ".tmp"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644), "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)
