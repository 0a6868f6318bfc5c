"""Principals: a certificate's subject through ssl.principal.mapping.rules, and signed bearer tokens."""

import json

import pytest

from replog.core.principal import MappingError, PrincipalMapper
from replog.core.tokens import TokenError, _b64encode, hmac_verifier, sign_hs256, verify_token

SECRET = b"s" * 32


@pytest.mark.parametrize("rules, subject, principal", [
    ("DEFAULT", "CN=alice,OU=eng", "User:CN=alice,OU=eng"),
    ("", "CN=alice", "User:CN=alice"),
    ("RULE:^CN=([^,]+)$/$1/,DEFAULT", "CN=broker", "User:broker"),
    ("RULE:^CN=([^,]+)$/$1/,DEFAULT", "CN=x,OU=y", "User:CN=x,OU=y"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", "CN=Alice,OU=ENG", "User:alice@eng"),
    ("RULE:^CN=(.*?),OU=(.*?)$/$1/U", "CN=alice,OU=eng", "User:ALICE"),
    ("RULE:^(.*)$/a\\/b/", "x", "User:a/b"),
])
def test_mapping_rules_are_tried_in_order_and_the_first_match_names_the_principal(rules, subject, principal):
    assert PrincipalMapper.parse(rules).principal_of(subject) == principal


def test_a_subject_no_rule_matches_has_no_principal_and_bad_rules_say_where():
    with pytest.raises(MappingError, match="no ssl.principal.mapping.rules rule applies"):
        PrincipalMapper.parse("RULE:^CN=(.*)$/$1/").principal_of("OU=x")
    with pytest.raises(MappingError, match="cannot read"):
        PrincipalMapper.parse("RULE:broken")
    with pytest.raises(MappingError, match="not a regular expression"):
        PrincipalMapper.parse("RULE:([/x/")


def test_a_signed_token_names_its_subject_until_it_expires():
    token = sign_hs256(SECRET, "alice", 1_000)
    assert verify_token(token, hmac_verifier(SECRET), now_s=900).principal == "User:alice"
    with pytest.raises(TokenError, match="expired"):
        verify_token(token, hmac_verifier(SECRET), now_s=2_000)


def test_tokens_signed_otherwise_or_malformed_are_refused():
    with pytest.raises(TokenError, match="signature does not verify"):
        verify_token(sign_hs256(b"t" * 32, "alice", 1_000), hmac_verifier(SECRET), now_s=0)
    unsigned = ".".join([_b64encode(json.dumps({"alg": "none"}).encode()),
                         _b64encode(json.dumps({"sub": "root", "exp": 10**12}).encode()), ""])
    with pytest.raises(TokenError, match="no signature algorithm"):
        verify_token(unsigned, hmac_verifier(SECRET), now_s=0)
    for garbage in ("", "a.b", "a.b.c", "x" * 10_000, "\udcff.\x00.\x01"):
        with pytest.raises(TokenError):
            verify_token(garbage, hmac_verifier(SECRET), now_s=0)
    with pytest.raises(TokenError, match="no sub claim"):
        verify_token(sign_hs256(SECRET, "", 1_000), hmac_verifier(SECRET), now_s=0)
