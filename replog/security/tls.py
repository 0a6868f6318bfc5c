"""TLS for every listener, from PEM files that are read again when they change.

cert-manager (or an operator) replaces the files of a mounted Secret in place; each new
connection then gets the new certificate, while open connections and their streams keep the
one they were made with. A half-written rotation (a new certificate with the old key) is not
taken: the files in use stay until the set on disk loads as a whole.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import grpc
import prometheus_client

from replog.config import ConfigError
from replog.rpc.channels import ClientSecurity, read_bytes

log = logging.getLogger(__name__)

# Files are looked at no more often than this: each new connection asks.
RELOAD_CHECK_INTERVAL_S = 1.0

CERTIFICATE_RELOADS = prometheus_client.Counter(
    "replog_tls_certificate_reloads_total",
    "Times this process found its TLS files changed on disk, by result: loaded, or kept the "
    "previous files because the new set did not load (a rotation half written, a key that does not match).",
    ["result"],
)
CERTIFICATE_EXPIRY = prometheus_client.Gauge(
    "replog_tls_certificate_expiry_timestamp_seconds",
    "When a certificate this process relies on stops being valid, as a Unix time: kind=certificate is the "
    "chain it presents, kind=ca the CA certificates it verifies others by (the first of each to expire). "
    "Only a process with TLS listeners has series.",
    ["kind"],
)

CLIENT_AUTH_CHOICES = ("none", "requested", "required")

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class ServerTls:
    """A listener's TLS: `ssl.certfile`, `ssl.keyfile`, `ssl.cafile`, `ssl.client.auth`."""

    certfile: str
    keyfile: str
    cafile: str
    client_auth: str = "none"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ServerTls | None:
        """The settings checked together, or None for a plaintext listener; a mistake is a ConfigError."""
        certfile, keyfile, cafile = config["ssl.certfile"], config["ssl.keyfile"], config["ssl.cafile"]
        client_auth = config["ssl.client.auth"]
        if not certfile:
            if keyfile or client_auth != "none":
                raise ConfigError("ssl.keyfile and ssl.client.auth need ssl.certfile: set the certificate "
                                  "this service presents, or leave all ssl.* settings empty for plaintext.")
            return None
        if not keyfile:
            raise ConfigError(f"ssl.certfile is {certfile} but ssl.keyfile is empty; set the file of its private key.")
        if not cafile:
            # Services call each other on these listeners: they verify each other by this CA.
            raise ConfigError("ssl.certfile needs ssl.cafile: the CA that the other services' certificates "
                              "(and clients' ones, under ssl.client.auth) chain to.")
        tls = cls(certfile, keyfile, cafile, client_auth)
        tls.load_context()  # every file readable and the key matching, or one sentence now
        return tls

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(path for path in (self.certfile, self.keyfile, self.cafile) if path)

    def load_context(self) -> ssl.SSLContext:
        """A server-side context from the files as they are now; ConfigError if they do not load."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.certfile, self.keyfile)
            if self.cafile:
                context.load_verify_locations(self.cafile)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(f"cannot load the TLS files {', '.join(self.paths)}: "
                              f"{getattr(error, 'strerror', None) or error}.") from None
        context.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                               "required": ssl.CERT_REQUIRED}[self.client_auth]
        return context

    def read_pem(self) -> tuple[bytes, bytes, bytes | None]:
        """(key, certificate chain, CA certificates) as bytes."""
        return read_bytes(self.keyfile), read_bytes(self.certfile), read_bytes(self.cafile) if self.cafile else None


def service_client_security(config: Mapping[str, Any]) -> ClientSecurity:
    """A service calls the others with its own certificate, verifying them by its CA."""
    tls = ServerTls.from_config(config)
    if tls is None:
        return ClientSecurity()
    return ClientSecurity(tls.cafile, tls.certfile, tls.keyfile, server_name=config["ssl.server.name"])


class Reloading:
    """Something built from TLS files, built again when the files change and the new set loads.

    `current()` is cheap enough for every new connection: the files are stat()ed at most
    once every RELOAD_CHECK_INTERVAL_S.
    """

    def __init__(self, tls: ServerTls, build: Callable[[ServerTls], T]) -> None:
        self._tls = tls
        self._build = build
        self._lock = threading.Lock()
        self._signature = _signature(tls.paths)
        self._value = build(tls)
        self._checked_s = time.monotonic()
        _record_expiry(tls)

    def current(self) -> tuple[Any, bool]:
        """The value now, and whether it changed since the previous call."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked_s < RELOAD_CHECK_INTERVAL_S:
                return self._value, False
            self._checked_s = now
            signature = _signature(self._tls.paths)
            if signature == self._signature:
                return self._value, False
            try:
                self._tls.load_context()
                value = self._build(self._tls)
            except (ConfigError, OSError) as error:
                CERTIFICATE_RELOADS.labels("kept").inc()
                log.warning("the TLS files changed but do not load yet; still using the previous ones: %s", error)
                return self._value, False
            self._signature, self._value = signature, value
        CERTIFICATE_RELOADS.labels("loaded").inc()
        _record_expiry(self._tls)
        log.info("loaded the changed TLS files %s; new connections use them", ", ".join(self._tls.paths))
        return value, True


def grpc_server_credentials(tls: ServerTls) -> grpc.ServerCredentials:
    """Credentials for `add_secure_port` that pick up rotated files on each new connection."""
    if tls.client_auth == "requested":
        # gRPC's TLS asks for a client certificate only when it also requires one.
        log.warning("ssl.client.auth=requested: the gRPC listener does not ask for client certificates; "
                    "clients without one identify with a bearer token or are ANONYMOUS")

    def configuration(current: ServerTls) -> Any:
        key, chain, ca = current.read_pem()
        return grpc.ssl_server_certificate_configuration([(key, chain)], root_certificates=ca)

    files = Reloading(tls, configuration)

    def fetch() -> Any:
        value, changed = files.current()
        return value if changed else None

    return grpc.dynamic_ssl_server_credentials(
        files.current()[0], fetch, require_client_authentication=tls.client_auth == "required")


def metrics_ssl_context(tls: ServerTls) -> ssl.SSLContext:
    """The /metrics listener's context: each handshake switches to the newest loaded files."""
    files = Reloading(tls, ServerTls.load_context)

    def pick(connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        context, _ = files.current()
        connection.context = context

    context = tls.load_context()
    context.sni_callback = pick
    return context


def _signature(paths: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    """What changes when a file is replaced or rewritten (a Secret volume swaps a symlink)."""
    signature = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            signature.append((0, 0, 0))
            continue
        signature.append((status.st_ino, status.st_mtime_ns, status.st_size))
    return tuple(signature)


def _record_expiry(tls: ServerTls) -> None:
    for kind, path in (("certificate", tls.certfile), ("ca", tls.cafile)):
        expiry = first_expiry(path)
        if expiry is not None:
            CERTIFICATE_EXPIRY.labels(kind).set(expiry)


def first_expiry(path: str) -> float | None:
    """When the first of the PEM certificates in `path` stops being valid (Unix time); None when the file
    has none that load, or the tls extra (cryptography) is not installed: serving does not need it."""
    try:
        from cryptography import x509
    except ImportError:
        return None
    try:
        certificates = x509.load_pem_x509_certificates(read_bytes(path))
    except (OSError, ValueError):
        return None
    return min(certificate.not_valid_after_utc.timestamp() for certificate in certificates)
