"""Chaos tests: real clusters, real faults, a checker (see docs/RELIABILITY.md).

    make test                               the quick subset (test_quick.py)
    make chaos                              the whole matrix; rewrites the table in docs/RELIABILITY.md
    REPLOG_CHAOS=1 pytest tests/chaos -k unclean     one scenario of the matrix
    REPLOG_CHAOS_SEED=1234 ...              the same choices (victims, torn bytes, pauses) as that run

Tests marked `chaos` run only with REPLOG_CHAOS=1 (or `-m chaos`). A seed fixes
what the nemesis chooses, not how real processes interleave.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
import zlib

import pytest

from tests.chaos import results
from tests.chaos.checker import Report
from tests.chaos.cluster import ChaosCluster
from tests.chaos.harness import ChaosRun
from tests.chaos.netns import namespaces_work

FULL = os.environ.get("REPLOG_CHAOS") == "1"
BASE_SEED = int(os.environ.get("REPLOG_CHAOS_SEED") or random.randrange(1 << 31))
ROWS = pytest.StashKey[list]()
STARTED = pytest.StashKey[float]()
KEPT = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: the full fault matrix; runs with `make chaos` (REPLOG_CHAOS=1)")
    config.stash[ROWS] = []
    config.stash[STARTED] = time.monotonic()
    config.stash[KEPT] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL or "chaos" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="part of the full chaos matrix: `make chaos` (REPLOG_CHAOS=1)")
    for item in items:
        if item.get_closest_marker("chaos"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def netns_available() -> bool:
    return namespaces_work()


@pytest.fixture
def requires_netns(netns_available: bool) -> None:
    if not netns_available:
        pytest.skip("cutting a broker off needs network namespaces (root and `ip netns`)")


def make_cluster(request: pytest.FixtureRequest, brokers: int, isolatable: tuple[int, ...] = ()):
    """A module's cluster: `brokers` brokers, 2 controllers; the listed brokers in namespaces of their own.

    Its directory (logs, data) is removed afterwards unless a test of the module failed; then
    its path is printed, so that the brokers' logs can be read.
    """
    directory = tempfile.mkdtemp(prefix="replog-chaos-")
    failures_before = request.session.testsfailed
    cluster = ChaosCluster(os.path.join(directory, "data"), brokers=brokers)
    try:
        cluster.up()
        if isolatable and namespaces_work():
            for broker in isolatable:
                cluster.isolatable(broker)
        yield cluster
    finally:
        cluster.down()
        if request.session.testsfailed == failures_before:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            request.config.stash[KEPT].append(directory)


@pytest.fixture
def chaos_seed(request: pytest.FixtureRequest) -> int:
    return zlib.crc32(f"{BASE_SEED}:{request.node.nodeid}".encode())


@pytest.fixture
def chaos(request: pytest.FixtureRequest, chaos_seed: int):
    """A factory of ChaosRuns whose reports reach the summary (and, in a full run, RELIABILITY.md)."""
    runs: list[ChaosRun] = []

    def make(cluster: ChaosCluster, scenario: str, **options) -> ChaosRun:
        run = ChaosRun(cluster, scenario, chaos_seed, **options)
        runs.append(run)
        return run

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for run in runs:
        request.config.stash[ROWS].append((run.report, run.min_insync_replicas, "FAILED" if failed else "passed"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
        if report.failed:
            report.sections.append(("chaos replay", f"REPLOG_CHAOS=1 REPLOG_CHAOS_SEED={BASE_SEED} "
                                    f"python -m pytest '{item.nodeid}'"))
    return report


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    rows: list[tuple[Report, int, str]] = config.stash.get(ROWS, [])
    if not rows:
        return
    terminalreporter.section("chaos runs")
    for directory in config.stash.get(KEPT, []):
        terminalreporter.write_line(f"kept the data and logs of a cluster whose tests failed: {directory}")
    for report, _, outcome in rows:
        terminalreporter.write_line(f"[{outcome}] {report.summary()}")
    terminalreporter.write_line(results.table(rows))
    terminalreporter.write_line(results.totals(rows))
    if FULL and not config.option.keyword:
        results.write(rows, time.monotonic() - config.stash[STARTED], BASE_SEED)
        terminalreporter.write_line("the table above is now in docs/RELIABILITY.md")
