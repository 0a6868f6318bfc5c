"""Hundreds of seeded runs: random faults, then heal and settle, invariants after every event.

A failure prints the seed, the replay command, the cluster's state and the
last events; `pytest tests/sim -k seed --sim-seed N` replays it exactly.
"""

from .simulation import run_seed


def test_seed(sim_seed: int) -> None:
    run_seed(sim_seed)
