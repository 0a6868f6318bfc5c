"""The protos pass `buf lint` (STANDARD and COMMENTS, as proto/buf.yaml says), and `buf breaking`
against the wire API as last released (proto/released/replog-api.binpb): the wire is a contract."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROTO_ROOT = Path(__file__).resolve().parents[2] / "proto"
RELEASED = PROTO_ROOT / "released" / "replog-api.binpb"


def buf_binary() -> str | None:
    """The buf next to the running interpreter (the venv's buf-bin), else on PATH."""
    beside_python = Path(sys.executable).parent / "buf"
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("buf")


def test_buf_lint_is_clean() -> None:
    result = subprocess.run([buf_or_skip(), "lint"], cwd=PROTO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"buf lint found problems in proto/:\n{result.stdout}{result.stderr}"


def buf_or_skip() -> str:
    buf = buf_binary()
    if buf is None:
        pytest.skip("no buf binary: install the dev extras (pip install -e '.[dev]' brings buf-bin)")
    return buf


def breaking(buf: str, proto_root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([buf, "breaking", "--against", str(RELEASED)], cwd=proto_root, capture_output=True,
                          text=True, timeout=60)


def test_the_protos_break_nothing_of_the_released_api() -> None:
    result = breaking(buf_or_skip(), PROTO_ROOT)
    assert result.returncode == 0, (
        f"proto/ breaks the released wire API ({RELEASED.name}); add, never change or remove:\n"
        f"{result.stdout}{result.stderr}")


def test_a_renumbered_field_would_be_caught(tmp_path: Path) -> None:
    buf = buf_or_skip()
    copy = tmp_path / "proto"
    shutil.copytree(PROTO_ROOT, copy)
    broker = copy / "replog" / "api" / "broker" / "v1" / "broker.proto"
    text = broker.read_text()
    assert "  bytes records = 2;" in text
    broker.write_text(text.replace("  bytes records = 2;", "  bytes records = 12;"))
    result = breaking(buf, copy)
    assert result.returncode != 0 and "records" in result.stdout, result.stdout + result.stderr
