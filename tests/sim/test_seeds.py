"""Hundreds of seeded runs: random faults, then heal and settle, invariants after every event.

A failure prints the seed, the replay command, the cluster's state and the
last events; `pytest tests/sim -k seed --sim-seed N` replays it exactly.
`test_txn_seed` runs idempotent and transactional producers, the transaction
coordinator and read_committed consumers over several partitions
(SimConfig.random_transactions), under the same faults plus coordinator
crashes, silent producers and producers replaced by new instances.
"""

from .simulation import run_seed


def test_seed(sim_seed: int) -> None:
    run_seed(sim_seed)


def test_txn_seed(sim_txn_seed: int) -> None:
    sim = run_seed(sim_txn_seed, transactions=True)
    assert sim.txn_checker.violations == []
