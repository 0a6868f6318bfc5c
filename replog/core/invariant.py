"""Invariant checks that stay on in production.

A plain `assert` disappears under `python -O`; the rules of replication must
not. `require` raises `InvariantViolation`, which always means a bug in replog
(or in its driver), never a mistake by a user or a peer: expected failures are
`ErrorCode` values instead.
"""


class InvariantViolation(Exception):
    """A rule of replication was about to be broken."""


def require(condition: bool, message: str, *args: object) -> None:
    """Raise InvariantViolation with `message % args` unless `condition` holds.

    The message is formatted only on failure, so checks on hot paths stay cheap.
    """
    if not condition:
        raise InvariantViolation(message % args if args else message)
