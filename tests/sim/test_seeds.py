"""Hundreds of seeded runs: random faults, then heal and settle, invariants after every event.

A failure prints the seed, the replay command, the cluster's state and the
last events; `pytest tests/sim -k seed --sim-seed N` replays it exactly.
`test_txn_seed` runs idempotent and transactional producers, the transaction
coordinator and read_committed consumers over several partitions
(SimConfig.random_transactions), under the same faults plus coordinator
crashes, silent producers and producers replaced by new instances.
`test_delete_records_seed` adds an administrator's DeleteRecords at random offsets
to test_seed's runs.
"""

from replog.core.errors import ErrorCode

from .simulation import run_seed


def test_seed(sim_seed: int) -> None:
    run_seed(sim_seed)


def test_txn_seed(sim_txn_seed: int) -> None:
    sim = run_seed(sim_txn_seed, transactions=True)
    assert sim.txn_checker.violations == []


def test_delete_records_seed(sim_delete_seed: int) -> None:
    run_seed(sim_delete_seed, delete_records=True)


def test_the_delete_records_runs_delete_records_and_consumers_move_past_them() -> None:
    """The runs above check their invariants on deletions that happen: that they do, and what they did."""
    answers, resets = [], 0
    for seed in range(10):
        sim = run_seed(seed, delete_records=True)
        answers += [completion.error for _, completion in sim.deletions_answered]
        resets += sum(len(consumer.resets) for consumer in sim.consumers)
    assert answers.count(ErrorCode.NONE) >= 10, answers
    assert resets > 0, "no consumer found its position deleted"
