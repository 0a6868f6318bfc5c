"""Every pytest run a make target starts with `-k` selects some test: a renamed test must not turn a
target into one that runs nothing (pytest's "no tests" exit)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def selections() -> list[tuple[str, str]]:
    """(paths, -k expression) of each Makefile line that runs pytest with -k."""
    found = []
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as makefile:
        for line in makefile:
            if "pytest" not in line or " -k " not in line:
                continue
            words = shlex.split(line.split("pytest", 1)[1])
            expression = words[words.index("-k") + 1]
            paths = [w for w in words if w.startswith("tests")]
            found.append((" ".join(paths), expression))
    return found


def test_the_makefile_has_selections_to_check():
    assert selections(), "no pytest -k in the Makefile: this test looks for the wrong thing"


@pytest.mark.parametrize("paths, expression", selections())
def test_each_selection_collects_a_test(paths, expression):
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             *paths.split(), "-k", expression], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    collected = re.findall(r"^(\S+::\S+)$", result.stdout, flags=re.MULTILINE)
    assert collected, f"pytest {paths} -k {expression!r} selects no test:\n{result.stdout[-500:]}"
