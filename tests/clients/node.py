"""Running the Node.js client (clients/node) from the tests: node from the system, its packages from
`npm ci` (make setup), each script a subprocess with a deadline."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = REPO_ROOT / "clients" / "node"
SCRIPTS_DIR = Path(__file__).resolve().parent / "node"


def node_binary() -> str:
    """The node on PATH, or a skip that says how to get one and the client's packages."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH: `make setup` installs Debian's nodejs and runs npm ci in clients/node")
    if not (CLIENT_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.skip("clients/node has no node_modules: run `make setup` (npm ci in clients/node)")
    return node


def script(name: str) -> str:
    return str(SCRIPTS_DIR / name)


def run_node(*args: str, input_text: str | None = None, timeout_s: float = 60,
             cwd: Path = CLIENT_DIR, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run node with these arguments (and environment) to completion; AssertionError with its stderr when it fails."""
    result = subprocess.run([node_binary(), *args], input=input_text, capture_output=True, text=True,
                            timeout=timeout_s, cwd=cwd, env=env)
    if result.returncode != 0:
        raise AssertionError(f"node {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def start_node(*args: str, stdout=subprocess.PIPE) -> subprocess.Popen[str]:
    """Start node with these arguments in the background (the caller waits for it with a deadline)."""
    return subprocess.Popen([node_binary(), *args], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=CLIENT_DIR)
