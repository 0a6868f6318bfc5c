"""acks=all writes while something happens, then every acknowledged record looked for.

Runs in the test process (`replog dev roll`) or inside a client pod of the chart
(`python -m tests.chart.load BOOTSTRAP TOPIC PARTITIONS STOP_FILE` writes until STOP_FILE exists,
then prints the outcome as JSON).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from tests.chaos.workload import Writer, read_everything

RATE_PER_S = 300.0
POLL_S = 0.2
WRITE_S_MAX = 1200.0


@dataclass
class Outcome:
    sent: int
    acknowledged: int
    failed: dict[str, int]  # error name -> records
    unanswered: int
    lost: int  # acknowledged, yet missing from a full read after the fact

    @property
    def clean(self) -> bool:
        return self.acknowledged == self.sent and not self.failed and not self.unanswered and not self.lost


def write_while(bootstrap: str, topic: str, partitions: int, busy: Callable[[], bool]) -> Outcome:
    writer = Writer(bootstrap, topic, partitions, name="roll", acks="all", rate_per_s=RATE_PER_S,
                    request_timeout_ms=15_000, delivery_timeout_ms=120_000).start()
    deadline = time.monotonic() + WRITE_S_MAX
    while busy() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    history = writer.stop()
    found, _ = read_everything(bootstrap, topic, partitions, timeout_s=120.0)
    stored = {value for records in found.values() for _, value in records}
    failed: dict[str, int] = {}
    for name in history.failed.values():
        failed[name] = failed.get(name, 0) + 1
    return Outcome(len(history.sent), len(history.acknowledged), failed, len(history.unanswered),
                   sum(1 for value in history.acknowledged if value not in stored))


def main(argv: list[str]) -> int:
    bootstrap, topic, partitions, stop_file = argv
    outcome = write_while(bootstrap, topic, int(partitions), lambda: not os.path.exists(stop_file))
    print(json.dumps(asdict(outcome)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
