"""The protos pass `buf lint` (STANDARD and COMMENTS, as proto/buf.yaml says)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROTO_ROOT = Path(__file__).resolve().parents[2] / "proto"


def buf_binary() -> str | None:
    """The buf next to the running interpreter (the venv's buf-bin), else on PATH."""
    beside_python = Path(sys.executable).parent / "buf"
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("buf")


def test_buf_lint_is_clean() -> None:
    buf = buf_binary()
    if buf is None:
        pytest.skip("no buf binary: install the dev extras (pip install -e '.[dev]' brings buf-bin)")
    result = subprocess.run([buf, "lint"], cwd=PROTO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"buf lint found problems in proto/:\n{result.stdout}{result.stderr}"
