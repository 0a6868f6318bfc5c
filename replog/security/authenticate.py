"""The principal behind each call: a bearer token's subject, else the client certificate's
subject mapped by `ssl.principal.mapping.rules`, else ANONYMOUS."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import prometheus_client

from replog.config import ConfigError
from replog.core.acl import ANONYMOUS
from replog.core.principal import MappingError, PrincipalMapper
from replog.core.tokens import (
    CLOCK_SKEW_S,
    HMAC_SECRET_BYTES_MIN,
    Claims,
    TokenError,
    Verify,
    hmac_verifier,
    verify_token,
)

AUTHENTICATION_FAILURES = prometheus_client.Counter(
    "replog_authentication_failures_total",
    "Calls refused because their bearer token or certificate subject named no principal, by reason.",
    ["reason"],
)


class AuthenticationError(Exception):
    """The caller's credentials prove nothing; the message is for the caller."""


@dataclasses.dataclass(frozen=True)
class Session:
    principal: str
    host: str


class Authenticator:
    def __init__(self, mapper: PrincipalMapper, verifiers: Sequence[Verify]) -> None:
        self._mapper = mapper
        self._verifiers = tuple(verifiers)
        self._subjects: dict[str, str] = {}  # subject -> principal, bounded below
        # A token verified once names its principal until it expires: every call carries its token,
        # and the security and quota interceptors both ask (bounded below).
        self._tokens: dict[str, Claims] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Authenticator:
        try:
            mapper = PrincipalMapper.parse(config["ssl.principal.mapping.rules"])
        except MappingError as error:
            raise ConfigError(f"ssl.principal.mapping.rules: {error}.") from None
        verifiers: list[Verify] = []
        if config["token.hmac.secret.file"]:
            secret = _read(config["token.hmac.secret.file"], "token.hmac.secret.file").strip()
            if len(secret) < HMAC_SECRET_BYTES_MIN:
                raise ConfigError(f"token.hmac.secret.file holds fewer than {HMAC_SECRET_BYTES_MIN} bytes; use a "
                                  "longer random secret.")
            verifiers.append(hmac_verifier(secret))
        if config["token.public.key.file"]:
            from replog.security.public_keys import public_key_verifier

            verifiers.append(public_key_verifier(_read(config["token.public.key.file"], "token.public.key.file")))
        return cls(mapper, verifiers)

    @property
    def verifies_tokens(self) -> bool:
        return bool(self._verifiers)

    def session(self, context: Any) -> Session:
        host = _peer_host(context.peer())
        token = _bearer(context.invocation_metadata() or ())
        if token is not None:
            return Session(self._token_principal(token), host)
        subjects = context.auth_context().get("x509_subject")
        if subjects:
            return Session(self._certificate_principal(subjects[0].decode("utf-8", "replace")), host)
        return Session(ANONYMOUS, host)

    def _token_principal(self, token: str) -> str:
        now_s = time.time()
        claims = self._tokens.get(token)
        if claims is not None and now_s <= claims.expires_s + CLOCK_SKEW_S:
            return claims.principal
        self._tokens.pop(token, None)
        claims = self._verified(token, now_s)
        _remember(self._tokens, token, claims)
        return claims.principal

    def _verified(self, token: str, now_s: float) -> Claims:
        if not self._verifiers:
            AUTHENTICATION_FAILURES.labels("token_not_accepted").inc()
            raise AuthenticationError("this service accepts no bearer tokens (token.hmac.secret.file and "
                                      "token.public.key.file are unset)")
        errors = []
        for verify in self._verifiers:
            try:
                return verify_token(token, verify, now_s)
            except TokenError as error:
                errors.append(str(error))
        AUTHENTICATION_FAILURES.labels("bad_token").inc()
        raise AuthenticationError("; ".join(dict.fromkeys(errors)))

    def _certificate_principal(self, subject: str) -> str:
        principal = self._subjects.get(subject)
        if principal is None:
            try:
                principal = self._mapper.principal_of(subject)
            except MappingError as error:
                AUTHENTICATION_FAILURES.labels("unmapped_subject").inc()
                raise AuthenticationError(str(error)) from None
            _remember(self._subjects, subject, principal)
        return principal


CACHED_MAX = 10_000  # subjects or tokens each service remembers; all are forgotten at once past this


def _remember(cache: dict, key: str, value: Any) -> None:
    if len(cache) >= CACHED_MAX:
        cache.clear()
    cache[key] = value


def _bearer(metadata: Sequence[Any]) -> str | None:
    for key, value in metadata:
        if key == "authorization":
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            raise AuthenticationError("the authorization header is not 'Bearer <token>'")
    return None


def _peer_host(peer: str) -> str:
    """"ipv4:10.0.0.1:5000" -> "10.0.0.1"; "ipv6:[::1]:5000" -> "::1"."""
    _, _, address = peer.partition(":")
    host = address.rsplit(":", 1)[0]
    return host.strip("[]") or peer


def _read(path: str, setting: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise ConfigError(f"cannot read {setting} {path}: {error.strerror}.") from None
