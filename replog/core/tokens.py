"""Bearer tokens: JSON Web Tokens (RFC 7519) a client sends as `authorization: Bearer <token>`.

The token's `sub` claim names the principal (`User:<sub>`); `exp` (seconds since the epoch) is
required and checked, `nbf` when present. HS256 tokens are signed with a secret the services
share; RS256 and ES256 ones with a private key whose public half the services hold (the
signature check for those is replog.security's, as it needs the cryptography package).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any

# A token that is still "valid" this long after exp is refused anyway: clocks differ.
CLOCK_SKEW_S = 30
TOKEN_BYTES_MAX = 8192
# A shorter HS256 secret is refused: it could be guessed (RFC 7518 §3.2 asks for at least the hash's 32 bytes).
HMAC_SECRET_BYTES_MIN = 32

# (algorithm, signed bytes, signature) -> whether the signature is good; raises TokenError
# for an algorithm the verifier does not hold a key for.
Verify = Callable[[str, bytes, bytes], bool]


class TokenError(ValueError):
    """A token that does not prove who sent it; the message says why, without the token."""


@dataclasses.dataclass(frozen=True)
class Claims:
    subject: str
    expires_s: int

    @property
    def principal(self) -> str:
        return f"User:{self.subject}"


def _b64decode(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise TokenError("the token is not base64url") from None


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def verify_token(token: str, verify: Verify, now_s: float) -> Claims:
    if len(token) > TOKEN_BYTES_MAX:
        raise TokenError(f"the token is longer than {TOKEN_BYTES_MAX} bytes")
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("the token is not a JWT (header.payload.signature)")
    try:
        header = json.loads(_b64decode(parts[0]))
        payload = json.loads(_b64decode(parts[1]))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TokenError("the token's header or payload is not JSON") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise TokenError("the token's header or payload is not a JSON object")
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or algorithm == "none":
        raise TokenError("the token names no signature algorithm")
    if not verify(algorithm, f"{parts[0]}.{parts[1]}".encode("ascii"), _b64decode(parts[2])):
        raise TokenError("the token's signature does not verify")
    return _claims(payload, now_s)


def _claims(payload: Mapping[str, Any], now_s: float) -> Claims:
    subject, expires, not_before = payload.get("sub"), payload.get("exp"), payload.get("nbf")
    if not isinstance(subject, str) or not subject:
        raise TokenError("the token has no sub claim naming the principal")
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        raise TokenError("the token has no exp claim")
    if now_s > expires + CLOCK_SKEW_S:
        raise TokenError(f"the token of User:{subject} expired")
    if isinstance(not_before, int | float) and now_s + CLOCK_SKEW_S < not_before:
        raise TokenError(f"the token of User:{subject} is not valid yet")
    return Claims(subject, int(expires))


def hmac_verifier(secret: bytes) -> Verify:
    def verify(algorithm: str, signed: bytes, signature: bytes) -> bool:
        if algorithm != "HS256":
            raise TokenError(f"the token is signed with {algorithm}, and this cluster verifies HS256 tokens")
        return hmac.compare_digest(hmac.new(secret, signed, hashlib.sha256).digest(), signature)

    return verify


def sign_hs256(secret: bytes, subject: str, expires_s: int, **claims: Any) -> str:
    """A token for `subject` signed with the shared secret (for `replog tokens create` and tests)."""
    header = _b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64encode(json.dumps({"sub": subject, "exp": expires_s, **claims}, separators=(",", ":")).encode())
    signature = hmac.new(secret, f"{header}.{payload}".encode("ascii"), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64encode(signature)}"
