"""A bearer token is verified once and then names its principal until it expires."""

import pytest

from replog.core.principal import PrincipalMapper
from replog.core.tokens import CLOCK_SKEW_S, hmac_verifier, sign_hs256
from replog.security import authenticate
from replog.security.authenticate import AuthenticationError, Authenticator

SECRET = b"s" * 32


class Call:
    """What the authenticator reads of a gRPC call's context."""

    def __init__(self, token: str) -> None:
        self._metadata = (("authorization", f"Bearer {token}"),)

    def peer(self) -> str:
        return "ipv4:127.0.0.1:5000"

    def invocation_metadata(self):
        return self._metadata

    def auth_context(self):
        return {}


@pytest.fixture
def counted():
    verify = hmac_verifier(SECRET)
    calls = []

    def counting(algorithm, signed, signature):
        calls.append(signed)
        return verify(algorithm, signed, signature)

    return Authenticator(PrincipalMapper.parse("DEFAULT"), [counting]), calls


def test_a_token_is_verified_once_for_all_the_calls_that_carry_it(counted, monkeypatch):
    authenticator, verifications = counted
    monkeypatch.setattr(authenticate.time, "time", lambda: 1_000.0)
    token = sign_hs256(SECRET, "alice", 2_000)
    for _ in range(3):  # e.g. the security and quota interceptors of one call, then the next call
        assert authenticator.session(Call(token)).principal == "User:alice"
    assert len(verifications) == 1
    assert authenticator.session(Call(sign_hs256(SECRET, "bob", 2_000))).principal == "User:bob"
    assert len(verifications) == 2


def test_a_remembered_token_is_refused_once_it_expires(counted, monkeypatch):
    authenticator, _ = counted
    now = [1_000.0]
    monkeypatch.setattr(authenticate.time, "time", lambda: now[0])
    token = sign_hs256(SECRET, "alice", 2_000)
    assert authenticator.session(Call(token)).principal == "User:alice"
    now[0] = 2_000 + CLOCK_SKEW_S + 1
    with pytest.raises(AuthenticationError, match="expired"):
        authenticator.session(Call(token))


def test_a_token_that_does_not_verify_is_never_remembered(counted):
    authenticator, verifications = counted
    forged = sign_hs256(b"t" * 32, "mallory", 10**10)
    for _ in range(2):
        with pytest.raises(AuthenticationError, match="signature does not verify"):
            authenticator.session(Call(forged))
    assert len(verifications) == 2
