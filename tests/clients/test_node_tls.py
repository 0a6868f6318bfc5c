"""The Node.js client on a `replog dev up --tls` cluster (mTLS on every listener, bearer tokens accepted):
with its security settings, given as options or in the REPLOG_SSL_* environment, it creates a topic at
the controller, produces, and consumes in a group; a plaintext client, and a token the cluster does not
verify, fail with a sentence that says what to set."""

from __future__ import annotations

import json
import os
import time

import pytest

from replog.core.tokens import sign_hs256
from replog.rpc import channels
from tests.clients.node import run_node, script
from tests.integration.cluster import TOKEN_SECRET
from tests.integration.conftest import tls_client, tls_cluster  # noqa: F401  (the --tls cluster and a certificate)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

COUNT = 2000
ENV_NAMES = (channels.ENV_CAFILE, channels.ENV_CERTFILE, channels.ENV_KEYFILE, channels.ENV_TOKEN,
             channels.ENV_SERVER_NAME)


@pytest.fixture(scope="module")
def cluster(tls_cluster):  # noqa: F811  (what bootstrap reaches)
    return tls_cluster


def mtls(files) -> dict[str, str]:
    """A client certificate as the Node client's security settings."""
    return {"cafile": files.cafile, "certfile": files.certfile, "keyfile": files.keyfile}


def node_tls(bootstrap, topic, settings, env: dict[str, str] | None = None) -> dict:
    """What tests/clients/node/tls.js did, in an environment without REPLOG_SSL_* unless `env` sets them."""
    clean = {name: value for name, value in os.environ.items() if name not in ENV_NAMES}
    out = run_node(script("tls.js"), bootstrap, topic, str(COUNT), json.dumps(settings) if settings != "env" else "env",
                   env={**clean, **(env or {})}, timeout_s=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_node_creates_produces_and_consumes_in_a_group_over_mtls_with_a_bearer_token(
        bootstrap, tls_client, tmp_path):  # noqa: F811
    token_file = tmp_path / "token"
    token_file.write_text(sign_hs256(TOKEN_SECRET, "node", int(time.time()) + 600))
    summary = node_tls(bootstrap, "node-tls", {**mtls(tls_client), "tokenFile": str(token_file)})
    assert summary == {"created": "ERROR_CODE_NONE", "acked": COUNT, "read": COUNT, "committed": COUNT}


def test_node_takes_its_security_from_the_replog_ssl_environment(bootstrap, tls_client):  # noqa: F811
    env = {channels.ENV_CAFILE: tls_client.cafile, channels.ENV_CERTFILE: tls_client.certfile,
           channels.ENV_KEYFILE: tls_client.keyfile}
    summary = node_tls(bootstrap, "node-tls-env", "env", env)
    assert summary == {"created": "ERROR_CODE_NONE", "acked": COUNT, "read": COUNT, "committed": COUNT}


def test_a_plaintext_node_client_is_told_to_give_the_security_option(bootstrap):
    summary = node_tls(bootstrap, "node-tls-plaintext", "env")
    assert summary["failed"] and summary["error"] == "NETWORK_EXCEPTION", summary
    assert summary["message"].startswith("no metadata service answered: Metadata failed: "), summary
    assert "If it serves TLS, give the security option {cafile, certfile, keyfile}" in summary["message"]


def test_a_token_the_cluster_does_not_verify_is_named(bootstrap, tls_client):  # noqa: F811
    summary = node_tls(bootstrap, "node-tls-bad-token", {**mtls(tls_client), "token": "not-a-token"})
    assert summary["failed"] and summary["grpcCode"] == 16, summary  # UNAUTHENTICATED
    assert summary["message"].endswith("the token is not a JWT (header.payload.signature); the cluster did not "
                                       "accept this client's credentials: check the security option's token")
