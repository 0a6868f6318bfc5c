"""Seeds for the simulator: which to run, and how to replay one.

    pytest tests/sim -k seed --sim-seed 1234     replay seed 1234 alone
    REPLOG_SIM_SEED=1234 pytest tests/sim -k seed  the same, from the environment
    REPLOG_SIM_SEEDS=5000 pytest tests/sim -k seed  seeds 0..4999 instead of the default

`make test` runs the defaults (300 seeds, 100 transaction seeds, 60 with DeleteRecords); `make chaos`
runs 1,000 of each.

The transaction runs (`test_txn_seed`, fixture `sim_txn_seed`) take the same options; by
default they run seeds 0..DEFAULT_TXN_SEED_COUNT-1; the runs with DeleteRecords
(`test_delete_records_seed`, fixture `sim_delete_seed`) 0..DEFAULT_DELETE_SEED_COUNT-1.
"""

import os

import pytest

DEFAULT_SEED_COUNT = 300
DEFAULT_TXN_SEED_COUNT = 100
DEFAULT_DELETE_SEED_COUNT = 60


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replog simulator")
    group.addoption("--sim-seed", type=int, default=None, help="run this simulator seed alone (REPLOG_SIM_SEED)")
    group.addoption(
        "--sim-seeds",
        type=int,
        default=None,
        help=f"run seeds 0..N-1 (REPLOG_SIM_SEEDS; default {DEFAULT_SEED_COUNT})",
    )


def _option(config: pytest.Config, name: str, variable: str) -> int | None:
    value = config.getoption(name, default=None)
    if value is None and os.environ.get(variable):
        value = int(os.environ[variable])
    return value


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name, default in (("sim_seed", DEFAULT_SEED_COUNT), ("sim_txn_seed", DEFAULT_TXN_SEED_COUNT),
                          ("sim_delete_seed", DEFAULT_DELETE_SEED_COUNT)):
        if name not in metafunc.fixturenames:
            continue
        seed = _option(metafunc.config, "sim_seed", "REPLOG_SIM_SEED")
        if seed is not None:
            seeds = [seed]
        else:
            seeds = list(range(_option(metafunc.config, "sim_seeds", "REPLOG_SIM_SEEDS") or default))
        metafunc.parametrize(name, seeds, ids=[f"seed={seed}" for seed in seeds])
