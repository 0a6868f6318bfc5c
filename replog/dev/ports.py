"""The ports a local cluster listens on: a range from --base-port, or free ones."""

from __future__ import annotations

from collections.abc import Iterator

from replog.dev.processes import DevError, free_port, port_in_use

HOST = "127.0.0.1"
PORT_MAX = 65535


def choose_ports(base_port: int, count: int) -> Iterator[int]:
    """Consecutive ports from base_port (each checked), or free ones when base_port is 0."""
    if base_port == 0:
        chosen: set[int] = set()
        for _ in range(count):  # free_port never answers a port already chosen
            chosen.add(free_port(HOST, chosen))
        yield from sorted(chosen)
        return
    if base_port < 0 or base_port + count - 1 > PORT_MAX:
        raise DevError(f"--base-port {base_port} is not from 1 to {PORT_MAX + 1 - count} (the cluster takes {count} "
                       "consecutive ports from it); or give 0 for free ports.")
    for port in range(base_port, base_port + count):
        if port_in_use(HOST, port):
            raise DevError(
                f"port {port} (in the range --base-port {base_port} uses) is in use by another "
                "program; choose another --base-port, or 0 for free ports."
            )
        yield port
