"""`replog dev roll` on a real local cluster while a producer writes with acks=all."""

import subprocess
import threading

import pytest

from tests.chart.load import write_while
from tests.integration.cluster import REPLOG

pytestmark = pytest.mark.slow

PARTITIONS = 6
ROLL_S_MAX = 600


def test_a_roll_under_acks_all_load_loses_nothing_and_fails_no_write(new_cluster):
    new_cluster.up("--brokers", "3", "--controllers", "2")
    new_cluster("topics", "create", "rolled", "--partitions", str(PARTITIONS), "--replication-factor", "3",
                "--config", "min.insync.replicas=2")
    active = new_cluster.active_controllers()
    bootstrap = new_cluster.status()["metadata"][0]["address"]
    done = threading.Event()
    result = {}

    def run_roll():
        try:
            result["roll"] = subprocess.run([*REPLOG, "dev", "roll", "--data-dir", new_cluster.data_dir],
                                            capture_output=True, text=True, timeout=ROLL_S_MAX)
        finally:
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
    assert outcome.sent > 1000
    assert outcome.clean, outcome
