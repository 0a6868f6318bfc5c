"""Every gRPC channel replog opens, to any service, is made here.

A channel is plaintext, or TLS that verifies the server against `cafile`, presents
`certfile`/`keyfile` when the server asks (mTLS), and sends a bearer token with each call
when one is given. A process sets its default once (a service: from its own ssl.* settings;
the command line: from --command-config or the local cluster); clients may pass their own.
The files are read when a channel is made, so channels made after a rotation use the new ones.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc

from replog.config import ConfigError

# Where a client's settings come from when nobody passes them: the environment.
ENV_CAFILE = "REPLOG_SSL_CAFILE"
ENV_CERTFILE = "REPLOG_SSL_CERTFILE"
ENV_KEYFILE = "REPLOG_SSL_KEYFILE"
ENV_TOKEN = "REPLOG_BEARER_TOKEN"
ENV_SERVER_NAME = "REPLOG_SSL_SERVER_NAME"

Options = Sequence[tuple[str, Any]]


# The client properties ClientSecurity.from_properties reads (a --command-config file).
CLIENT_PROPERTIES = ("ssl.cafile", "ssl.certfile", "ssl.keyfile", "ssl.server.name", "bearer.token",
                     "bearer.token.file")


@dataclasses.dataclass(frozen=True)
class ClientSecurity:
    """How to reach TLS listeners: the CA to verify servers by, an optional client certificate,
    an optional bearer token (or a function returning a fresh one). All empty: plaintext."""

    cafile: str = ""
    certfile: str = ""
    keyfile: str = ""
    token: str | Callable[[], str] = ""
    # Verify servers as this name instead of the address dialled (ssl.server.name).
    server_name: str = ""

    def __post_init__(self) -> None:
        if bool(self.certfile) != bool(self.keyfile):
            raise ConfigError("a client certificate needs both ssl.certfile and ssl.keyfile.")
        if (self.certfile or self.token) and not self.cafile:
            raise ConfigError("a client certificate or a bearer token is sent only over TLS: set ssl.cafile, "
                              "the CA the servers' certificates chain to.")

    @property
    def tls(self) -> bool:
        return bool(self.cafile)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ClientSecurity:  # reads CLIENT_PROPERTIES
        """Kafka's client-properties shape: ssl.cafile, ssl.certfile, ssl.keyfile, bearer.token(.file)."""
        token = properties.get("bearer.token", "")
        token_file = properties.get("bearer.token.file", "")
        if token_file:
            token = _token_reader(token_file)
        return cls(properties.get("ssl.cafile", ""), properties.get("ssl.certfile", ""),
                   properties.get("ssl.keyfile", ""), token, properties.get("ssl.server.name", ""))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientSecurity:
        env = os.environ if env is None else env
        return cls(env.get(ENV_CAFILE, ""), env.get(ENV_CERTFILE, ""), env.get(ENV_KEYFILE, ""),
                   env.get(ENV_TOKEN, ""), env.get(ENV_SERVER_NAME, ""))

    def check(self) -> None:
        """The files load as a whole now (the CA's certificates, the client certificate with its key), or a
        ConfigError of one sentence: for a client that refuses bad settings before it connects."""
        if not self.tls:
            return
        for path in (self.cafile, self.certfile, self.keyfile):
            if path and not os.access(path, os.R_OK):
                reason = "no such file" if not os.path.exists(path) else "not readable"
                raise ConfigError(f"cannot read the TLS file {path}: {reason}.")
        try:
            context = ssl.create_default_context(cafile=self.cafile)
            if self.certfile:
                context.load_cert_chain(self.certfile, self.keyfile)
        except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
            files = ", ".join(path for path in (self.cafile, self.certfile, self.keyfile) if path)
            raise ConfigError(f"the TLS files {files} do not load ({error}): the CA file must hold PEM "
                              "certificates and the key must be the certificate's.") from None

    def options(self, options: Options) -> list[tuple[str, Any]]:
        if self.server_name:
            return [*options, ("grpc.ssl_target_name_override", self.server_name)]
        return list(options)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        try:
            ca = read_bytes(self.cafile)
            key = read_bytes(self.keyfile) if self.keyfile else None
            chain = read_bytes(self.certfile) if self.certfile else None
        except OSError as error:
            raise ConfigError(f"cannot read the TLS file {error.filename}: {error.strerror}.") from None
        credentials = grpc.ssl_channel_credentials(ca, key, chain)
        if self.token:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.metadata_call_credentials(_BearerToken(self.token), name="bearer"))
        return credentials


class _BearerToken(grpc.AuthMetadataPlugin):
    def __init__(self, token: str | Callable[[], str]) -> None:
        self._token = token

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        try:
            token = self._token() if callable(self._token) else self._token
        except OSError as error:
            callback((), error)
            return
        callback((("authorization", f"Bearer {token}"),), None)


def _token_reader(path: str) -> Callable[[], str]:
    """Read the token at each call: a rotated token file (a projected service-account token) is followed."""

    def read() -> str:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()

    return read


_default: ClientSecurity | None = None


def set_default(security: ClientSecurity | None) -> None:
    """What channels made without explicit security use from now on, in this process."""
    global _default
    _default = security


def default() -> ClientSecurity:
    return _default if _default is not None else ClientSecurity.from_env()


def aio_channel(address: str, options: Options = (), security: ClientSecurity | None = None) -> grpc.aio.Channel:
    security = security or default()
    if security.tls:
        return grpc.aio.secure_channel(address, security.channel_credentials(), options=security.options(options))
    return grpc.aio.insecure_channel(address, options=list(options))


def channel(address: str, options: Options = (), security: ClientSecurity | None = None) -> grpc.Channel:
    """A blocking channel (health checks, tests, tools)."""
    security = security or default()
    if security.tls:
        return grpc.secure_channel(address, security.channel_credentials(), options=security.options(options))
    return grpc.insecure_channel(address, options=list(options))


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
