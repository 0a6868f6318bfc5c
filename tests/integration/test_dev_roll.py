"""`replog dev roll` on a real local cluster while a producer writes with acks=all."""

import subprocess
import threading
import time

import pytest

from tests.chart.load import RATE_PER_S, write_while
from tests.integration.cluster import REPLOG

pytestmark = pytest.mark.slow

PARTITIONS = 6
ROLL_S_MAX = 600


def test_a_roll_under_acks_all_load_loses_nothing_and_fails_no_write(new_cluster):
    new_cluster.up_sharing_zookeeper("--brokers", "3", "--controllers", "2")
    new_cluster("topics", "create", "rolled", "--partitions", str(PARTITIONS), "--replication-factor", "3",
                "--config", "min.insync.replicas=2")
    active = new_cluster.active_controllers()
    bootstrap = new_cluster.status()["metadata"][0]["address"]
    done = threading.Event()
    result = {}

    def run_roll():
        started_s = time.monotonic()
        try:
            result["roll"] = subprocess.run([*REPLOG, "dev", "roll", "--data-dir", new_cluster.data_dir],
                                            capture_output=True, text=True, timeout=ROLL_S_MAX)
        finally:
            result["roll_s"] = time.monotonic() - started_s
            done.set()

    threading.Thread(target=run_roll, daemon=True).start()
    outcome = write_while(bootstrap, "rolled", PARTITIONS, lambda: not done.is_set())
    roll = result["roll"]
    print(roll.stdout, outcome)  # the figures, with pytest -s
    assert roll.returncode == 0, roll.stderr
    restarted = [line.removeprefix("Restarting ") for line in roll.stdout.splitlines() if line.startswith("Restarting")]
    standby = 3 - active[0]
    assert restarted[:2] == [f"controller {standby}", f"controller {active[0]}"]
    assert sorted(restarted[2:]) == ["broker 1", "broker 2", "broker 3"]
    # The writer kept its pace (RATE_PER_S) all through the roll, however long the roll took.
    assert outcome.sent >= 0.7 * RATE_PER_S * result["roll_s"], (outcome.sent, result["roll_s"])
    assert outcome.clean, outcome
