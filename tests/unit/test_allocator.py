"""replog's malloc settings: whose apply, and that a process applying them keeps freed memory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replog.rpc import allocator

GLIBC = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None


@pytest.mark.parametrize("env, libc, expected", [
    ({}, "glibc", allocator.KEPT),
    ({"PATH": "/bin"}, "glibc", allocator.KEPT),
    ({"MALLOC_TRIM_THRESHOLD_": "131072"}, "glibc", allocator.ENVIRONMENT),
    ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "glibc", allocator.ENVIRONMENT),
    ({"MALLOC_TOP_PAD_": "0"}, "glibc", allocator.ENVIRONMENT),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, "glibc", allocator.ENVIRONMENT),
    ({"GLIBC_TUNABLES": "glibc.rtld.nns=2"}, "glibc", allocator.KEPT),
    ({}, "", allocator.SYSTEM),
    ({"MALLOC_TRIM_THRESHOLD_": "0"}, "musl", allocator.SYSTEM),
])
def test_whose_settings_a_process_runs_with(env, libc, expected):
    assert allocator.choice(env, libc) == expected


# In a fresh process: allocate 20 MiB, touch it, free it, and ask glibc (mallinfo2) how the block was
# served and what stayed free in the heap. glibc's defaults map a block that size on its own and
# unmap it when it is freed; replog's settings take it from the heap and keep it there.
PROBE = r"""
import ctypes, json, sys
from replog.rpc import allocator
if sys.argv[1] == "apply":
    allocator.keep_freed_memory()

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.mallinfo2.restype = MallInfo2
size = 20 << 20
mapped_before = libc.mallinfo2().hblkhd
block = libc.malloc(size)
ctypes.memset(block, 1, size)
mapped_while_held = libc.mallinfo2().hblkhd - mapped_before
libc.free(ctypes.c_void_p(block))
print(json.dumps({"mapped_while_held": mapped_while_held, "free_in_heap": libc.mallinfo2().fordblks,
                  "state": allocator.state()}))
"""


def probe(mode: str, env: dict[str, str]) -> dict:
    import json

    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60,
                         env=env, check=True).stdout
    return json.loads(out)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_a_process_with_replogs_settings_keeps_a_freed_message_block_for_the_next():
    env = {k: v for k, v in os.environ.items() if k not in allocator.OPERATOR_VARIABLES and k != "GLIBC_TUNABLES"}
    default = probe("leave", env)
    assert default["mapped_while_held"] >= 20 << 20  # a mapping of its own, given back when freed
    assert default["free_in_heap"] < 20 << 20
    kept = probe("apply", env)
    assert kept["state"] == allocator.KEPT
    assert kept["mapped_while_held"] < 20 << 20  # from the heap
    assert kept["free_in_heap"] >= 20 << 20  # still the process's: the next block reuses these pages


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_an_operators_malloc_variables_win():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "131072"}
    result = probe("apply", env)
    assert result["state"] == allocator.ENVIRONMENT
    assert result["mapped_while_held"] >= 20 << 20  # glibc's mapping, as without replog's settings
