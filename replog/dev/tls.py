"""`replog dev up --tls`: a certificate authority of the cluster's own, and a certificate for
each kind of service and for the command line, under `<data-dir>/tls/`.

Every member presents its kind's certificate (CN=broker, controller or metadata) and requires
one from its clients (mTLS); commands present CN=admin. The cluster maps a subject to its CN
(`ssl.principal.mapping.rules`), so the principals are User:broker, User:admin and so on, and
with `--authorizer` the services and admin are the super users.
"""

from __future__ import annotations

import os
from typing import Any

SERVICE_KINDS = ("broker", "controller", "metadata")
CLIENT_NAME = "admin"
PRINCIPAL_MAPPING_RULES = "RULE:^CN=([^,]+)$/$1/,DEFAULT"
SUPER_USERS = ";".join(f"User:{name}" for name in (*SERVICE_KINDS, CLIENT_NAME))


def directory(data_dir: str) -> str:
    return os.path.join(data_dir, "tls")


def create(data_dir: str) -> dict[str, Any]:
    """Write the CA and the certificates; returns what cluster.json records of them."""
    try:
        from replog.security.dev_ca import Authority
    except ImportError:
        from replog.dev.processes import DevError

        raise DevError("--tls makes its certificates with the cryptography package: "
                       "pip install 'replog[tls]' (make setup installs it).") from None
    folder = directory(data_dir)
    authority = Authority.create(folder)
    identities = {name: authority.issue(folder, name) for name in (*SERVICE_KINDS, CLIENT_NAME)}
    return {
        "cafile": authority.cafile,
        "identities": {name: {"certfile": files.certfile, "keyfile": files.keyfile}
                       for name, files in identities.items()},
    }


def member_properties(tls: dict[str, Any], kind: str) -> dict[str, str]:
    identity = tls["identities"][kind]
    return {
        "ssl.certfile": identity["certfile"],
        "ssl.keyfile": identity["keyfile"],
        "ssl.cafile": tls["cafile"],
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": PRINCIPAL_MAPPING_RULES,
    }
