"""How much freed memory a replog process keeps for its next messages (glibc's malloc).

A broker's messages come and go in megabytes: a produce request's record batches, a fetch answer
for a follower, a consumer or a Spark task (up to 16 MiB). By default glibc's malloc gives memory
back to the system once more than a few megabytes sit free at the top of its heap: its trim
threshold follows the largest block freed so far. The next message's memory is then new to the
process, and every 4 KiB page of it faults in again. On the 2-core test machine that made a
page of a broker's traffic cost more than copying it: a broker spent half of its CPU serving a
Spark read on such faults, and acks=all produce ran a quarter faster without them
(docs/BENCHMARKS.md, "Freed memory kept for reuse").

At start, every replog service, the `replog` command and a Spark task's reader ask glibc to
serve blocks up to HEAP_BLOCK_BYTES_MAX from the heap (M_MMAP_THRESHOLD: larger ones still get a
mapping of their own) and to keep up to FREED_KEPT_BYTES_MAX free at its top (M_TRIM_THRESHOLD). A
process's memory then stays near its peak rather than going up and down with every message.

An operator who sets glibc's own variables (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_,
MALLOC_TOP_PAD_, or glibc.malloc tunables in GLIBC_TUNABLES) keeps them: this module then
changes nothing. Neither does it on a C library other than glibc.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
from collections.abc import Mapping

log = logging.getLogger("replog.allocator")

HEAP_BLOCK_BYTES_MAX = 32 << 20  # glibc's largest allowed M_MMAP_THRESHOLD on 64-bit systems
FREED_KEPT_BYTES_MAX = 128 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
OPERATOR_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")

KEPT, ENVIRONMENT, SYSTEM = "replog", "environment", "system"  # what keep_freed_memory() did
_done: str | None = None


def choice(env: Mapping[str, str], libc: str) -> str:
    """Whose malloc settings a process runs with: replog's (KEPT), the operator's from the environment
    (ENVIRONMENT), or the C library's own where it is not glibc (SYSTEM)."""
    if libc != "glibc":
        return SYSTEM
    if any(name in env for name in OPERATOR_VARIABLES) or "glibc.malloc." in env.get("GLIBC_TUNABLES", ""):
        return ENVIRONMENT
    return KEPT


def keep_freed_memory() -> str:
    """Apply replog's malloc settings to this process, once; returns choice()'s answer."""
    global _done
    if _done is None:
        _done = choice(os.environ, platform.libc_ver()[0])
        if _done == KEPT:
            mallopt = ctypes.CDLL(None).mallopt
            kept = mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES_MAX) and mallopt(M_TRIM_THRESHOLD, FREED_KEPT_BYTES_MAX)
            if not kept:
                _done = SYSTEM  # refused: the library's own settings stay
    return _done


def state() -> str:
    """What keep_freed_memory() did in this process, or "unset" before it ran."""
    return _done or "unset"


def describe(done: str) -> str:
    if done == KEPT:
        return (f"malloc keeps up to {FREED_KEPT_BYTES_MAX >> 20} MiB freed for reuse and serves blocks up to "
                f"{HEAP_BLOCK_BYTES_MAX >> 20} MiB from its heap")
    if done == ENVIRONMENT:
        return "malloc runs with the settings of the environment (MALLOC_*_ or GLIBC_TUNABLES)"
    return "malloc runs with the C library's own settings"
