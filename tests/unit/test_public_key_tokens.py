"""RS256 and ES256 bearer tokens verified against the public key of token.public.key.file."""

import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from replog.core.tokens import TokenError, _b64encode, verify_token
from replog.security.public_keys import public_key_verifier


def token(algorithm, sign, subject="carol", expires=2_000):
    header = _b64encode(json.dumps({"alg": algorithm}).encode())
    payload = _b64encode(json.dumps({"sub": subject, "exp": expires}).encode())
    signed = f"{header}.{payload}".encode()
    return f"{header}.{payload}.{_b64encode(sign(signed))}"


def pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def test_an_rs256_token_verifies_with_its_public_key_and_not_another():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signed = token("RS256", lambda data: key.sign(data, padding.PKCS1v15(), hashes.SHA256()))
    assert verify_token(signed, public_key_verifier(pem(key)), now_s=1_000).principal == "User:carol"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(TokenError, match="does not verify"):
        verify_token(signed, public_key_verifier(pem(other)), now_s=1_000)


def test_an_es256_token_carries_r_and_s_and_an_hs256_one_is_refused_by_a_key_verifier():
    key = ec.generate_private_key(ec.SECP256R1())

    def sign(data):
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    verifier = public_key_verifier(pem(key))
    assert verify_token(token("ES256", sign), verifier, now_s=1_000).principal == "User:carol"
    with pytest.raises(TokenError, match="verifies ES256"):
        verify_token(token("HS256", lambda data: b"x" * 32), verifier, now_s=1_000)
