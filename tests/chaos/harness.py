"""One chaos run: a topic of its own, writers and a reader, faults, then recovery and the checker.

    run = ChaosRun(cluster, "leader SIGKILL", seed)
    with run:                       # topic created, clients started, first acknowledgements seen
        kill_leader(run, "KILL")    # a nemesis operation (nemesis.py): one fault run each
    report = run.report             # filled in on leaving the block: healed, recovered, checked

Leaving the block stops the clients, undoes every fault, waits until every
replica is back in the ISR and holds the whole log below the high watermark,
reads the topic from the start, and hands everything to the checker.
"""

from __future__ import annotations

import random
import re
import time

from tests.chaos.checker import Report, check
from tests.chaos.cluster import RECOVERY_S_MAX, ChaosCluster, ChaosError, wait_for
from tests.replicas import batches
from tests.chaos.workload import Reader, Writer, read_everything

FIRST_ACKS_S_MAX = 30.0
PROGRESS_RECORDS = 200  # acknowledgements that show the cluster serves writes again
PROGRESS_S_MAX = 40.0


class ChaosRun:
    def __init__(self, cluster: ChaosCluster, scenario: str, seed: int, *, partitions: int = 3,
                 min_insync_replicas: int = 2, acks: tuple[str, ...] = ("all",),
                 replica_assignment: dict[int, list[int]] | None = None, unclean: bool = False,
                 rate_per_s: float = 400.0, reader: bool = True) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.report = Report(scenario, seed)
        self.topic = re.sub(r"[^a-zA-Z0-9]+", "-", scenario).strip("-").lower() + f"-{seed}"
        self.partitions = len(replica_assignment) if replica_assignment else partitions
        self.min_insync_replicas = min_insync_replicas
        self._acks = acks
        self._replica_assignment = replica_assignment
        self._unclean = unclean
        self._rate_per_s = rate_per_s
        self._with_reader = reader
        self.writers: list[Writer] = []
        self.reader: Reader | None = None
        self._started = 0.0

    # -- the run ---------------------------------------------------------------------------------

    def __enter__(self) -> ChaosRun:
        self._started = time.monotonic()
        configs = {"min_insync_replicas": str(self.min_insync_replicas)}
        if self._unclean:
            configs["unclean_leader_election_enable"] = "true"
        self.cluster.create_topic(self.topic, partitions=self.partitions,
                                  replica_assignment=self._replica_assignment, **configs)
        bootstrap = self.cluster.bootstrap
        for acks in self._acks:
            name = f"w{len(self.writers)}acks{acks}"
            self.writers.append(Writer(bootstrap, self.topic, self.partitions, name=name, acks=acks,
                                       rate_per_s=self._rate_per_s / len(self._acks)).start())
        if self._with_reader:
            self.reader = Reader(bootstrap, self.topic, self.partitions).start()
        self.wait_progress("the first acknowledgements", FIRST_ACKS_S_MAX)
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            self.finish()
        except BaseException:
            if exc is None:
                raise

    def fault(self, description: str) -> None:
        """Count one fault run and keep its description for the report."""
        self.report.runs += 1
        self.report.faults.append(f"{time.monotonic() - self._started:6.1f} s  {description}")

    def note(self, description: str) -> None:
        self.report.faults.append(f"{time.monotonic() - self._started:6.1f} s  {description}")

    def acknowledged(self) -> int:
        return sum(w.acknowledged_count() for w in self.writers)

    def wait_progress(self, what: str, timeout_s: float = PROGRESS_S_MAX) -> None:
        """Wait until the writers get PROGRESS_RECORDS more acknowledgements: the cluster serves again."""
        start = self.acknowledged()
        wait_for(lambda: self.acknowledged() >= start + PROGRESS_RECORDS, timeout_s, what)

    # -- recovery and the checker ----------------------------------------------------------------

    def finish(self) -> Report:
        histories = [writer.stop() for writer in self.writers]
        reader = self.reader.stop() if self.reader else None
        self.cluster.heal_all()
        self.cluster.wait_full_isr(self.topic)
        final_log, high_watermarks = read_everything(self.cluster.bootstrap, self.topic, self.partitions)
        leaders = {p.partition: p.leader for p in self.cluster.partitions(self.topic)}
        replica_logs = self._replica_logs(high_watermarks)
        check(self.report, histories, reader, final_log, replica_logs, leaders, high_watermarks)
        self.report.elapsed_s = time.monotonic() - self._started
        return self.report

    def _replica_logs(self, high_watermarks: dict[int, int]) -> dict[int, dict[int, list]]:
        """Each replica's batches below the HW, once every replica holds the whole log below it."""
        infos = {p.partition: p for p in self.cluster.partitions(self.topic)}

        def read_all() -> dict[int, dict[int, list]]:
            return {p: {b: batches(self.partition_dir(b, p), high_watermarks[p]) for b in infos[p].replicas}
                    for p in infos}

        def caught_up() -> dict[int, dict[int, list]] | None:
            logs = read_all()
            for partition, copies in logs.items():
                for each in copies.values():
                    reached = each[-1].last_offset + 1 if each else 0
                    if reached < high_watermarks[partition]:
                        return None
            return logs

        try:
            return wait_for(caught_up, RECOVERY_S_MAX, "every replica to hold the log below the HW")
        except ChaosError:
            return read_all()  # the checker reports the replicas that stayed short

    def partition_dir(self, broker_id: int, partition: int) -> str:
        return f"{self.cluster.broker_data_dir(broker_id)}/{self.topic}-{partition}"

