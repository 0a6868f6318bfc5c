"""`replog tokens create`: a bearer token (HS256) for a principal, signed with the cluster's
shared secret (the file `token.hmac.secret.file` names)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from replog.cli.numbers import INT32_MAX, whole_number
from replog.core.tokens import HMAC_SECRET_BYTES_MIN, sign_hs256


class TokensError(Exception):
    """A mistake in the command's flags; one sentence."""


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("tokens", help="make bearer tokens for principals")
    sub = parser.add_subparsers(dest="tokens_command", metavar="COMMAND", required=True)
    create = sub.add_parser("create", help="print a signed token for a principal")
    create.add_argument("--principal", required=True, help="User:name (or just name)")
    create.add_argument("--secret-file", required=True, help="the file token.hmac.secret.file names")
    create.add_argument("--lifetime-s", type=whole_number(1, INT32_MAX), default=3600,
                        help="seconds until it expires (default 3600)")
    create.set_defaults(handler=_create)


def _create(args: argparse.Namespace) -> int:
    name = args.principal.removeprefix("User:")
    if not name or ":" in name:
        raise TokensError(f"--principal {args.principal!r} is not User:name")
    try:
        with open(args.secret_file, "rb") as handle:
            secret = handle.read().strip()
    except OSError as error:
        raise TokensError(f"cannot read --secret-file {args.secret_file}: {error.strerror}") from None
    if len(secret) < HMAC_SECRET_BYTES_MIN:
        raise TokensError(f"--secret-file {args.secret_file} holds fewer than {HMAC_SECRET_BYTES_MIN} bytes, and the "
                          "services refuse such a token.hmac.secret.file: is it the file they read?")
    print(sign_hs256(secret, name, int(time.time()) + args.lifetime_s))
    return 0
