"""Seeds for the simulator: which to run, and how to replay one.

    pytest tests/sim -k seed --sim-seed 1234     replay seed 1234 alone
    REPLOG_SIM_SEED=1234 pytest tests/sim -k seed  the same, from the environment
    REPLOG_SIM_SEEDS=5000 pytest tests/sim -k seed  seeds 0..4999 instead of the default
"""

import os

import pytest

DEFAULT_SEED_COUNT = 600


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
    if "sim_seed" not in metafunc.fixturenames:
        return
    seed = _option(metafunc.config, "sim_seed", "REPLOG_SIM_SEED")
    if seed is not None:
        seeds = [seed]
    else:
        seeds = list(range(_option(metafunc.config, "sim_seeds", "REPLOG_SIM_SEEDS") or DEFAULT_SEED_COUNT))
    metafunc.parametrize("sim_seed", seeds, ids=[f"seed={seed}" for seed in seeds])
