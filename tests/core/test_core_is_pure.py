"""The core imports nothing but the standard library and itself, and none of the standard library's
clocks, randomness, threads or I/O (DESIGN §2, §3): every rule in it can run in the simulator."""

import ast
import sys
from pathlib import Path

import replog.core

CORE = Path(replog.core.__file__).parent
# Modules that would let a rule read a clock, draw at random, wait, or touch files and sockets.
FORBIDDEN = {"asyncio", "os", "time", "random", "threading", "socket", "subprocess", "io", "pathlib", "shutil",
             "tempfile", "select", "signal", "multiprocessing", "concurrent", "datetime", "uuid", "secrets"}


def imported_modules(path: Path) -> list[str]:
    """The absolute names of the modules `path` imports; a relative import is resolved against its package,
    so that one climbing out of the core (`from ...rpc import`) is seen too."""
    package = ["replog", "core", *path.relative_to(CORE).parent.parts]
    modules = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            modules.append(".".join([*base, node.module] if node.module else base))
    return modules


def test_every_core_module_imports_only_pure_standard_modules_and_the_core():
    problems = []
    for path in sorted(CORE.rglob("*.py")):
        for module in imported_modules(path):
            top = module.split(".")[0]
            if module == "replog.core" or module.startswith("replog.core."):
                continue
            if top not in sys.stdlib_module_names or top in FORBIDDEN:
                problems.append(f"{path.relative_to(CORE)} imports {module}")
    assert problems == []
