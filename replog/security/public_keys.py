"""Signature checks of RS256 and ES256 bearer tokens against a PEM public key (`token.public.key.file`)."""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from replog.config import ConfigError
from replog.core.tokens import TokenError, Verify

ES256_SIGNATURE_BYTES = 64


def public_key_verifier(pem: bytes) -> Verify:
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as error:
        raise ConfigError(f"token.public.key.file is not a PEM public key: {error}.") from None
    if isinstance(key, rsa.RSAPublicKey):
        algorithm = "RS256"
    elif isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        algorithm = "ES256"
    else:
        raise ConfigError("token.public.key.file must hold an RSA or a P-256 EC public key.")

    def verify(name: str, signed: bytes, signature: bytes) -> bool:
        if name != algorithm:
            raise TokenError(f"the token is signed with {name}, and this cluster verifies {algorithm} tokens")
        try:
            if isinstance(key, rsa.RSAPublicKey):
                key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
            else:
                # A JWS ES256 signature is r and s, 32 bytes each, not DER.
                if len(signature) != ES256_SIGNATURE_BYTES:
                    return False
                r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
                key.verify(encode_dss_signature(r, s), signed, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True

    return verify
