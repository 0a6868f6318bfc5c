"""Fault schedules chosen by Hypothesis, so that a failure shrinks to the fewest faults that break a rule."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .simulation import SimConfig, Simulation, SimulationFailed
from .wire import CONTROLLER

FAULT_PHASE_MS = 4_000

faults = st.lists(
    st.tuples(
        st.integers(0, FAULT_PHASE_MS),  # when
        st.sampled_from(["crash", "isolate", "alone-with-controller"]),
        st.integers(0, 4),  # which broker (modulo the cluster size)
        st.integers(50, 2_500),  # for how long
    ),
    max_size=8,
)


def apply_fault(sim: Simulation, kind: str, broker: int, duration_ms: int) -> None:
    if kind == "crash":
        if sim.can_crash(broker):
            sim.crash(broker)
            sim.schedule(sim.now_ms + sim.config.session_timeout_ms + duration_ms, sim.restart, broker)
        return
    if sim.network.partitioned:
        return
    if kind == "isolate":
        sim.isolate(broker)
    else:  # the other brokers lose the controller, and with it their sessions
        sim.partition([broker, CONTROLLER], [b for b in sim.brokers if b != broker])
    sim.schedule(sim.now_ms + duration_ms, sim.heal)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(3, 5), st.sampled_from([1, 2]), st.sampled_from([0, 300]), faults, st.integers(0, 2**16))
def test_explicit_fault_schedules_keep_every_invariant(brokers, min_isr, flush_ms, schedule, rng_seed):
    config = SimConfig(brokers=brokers, min_insync_replicas=min_isr, flush_interval_ms=(flush_ms,) * brokers)
    sim = Simulation(rng_seed, config)
    for at_ms, kind, broker, duration_ms in schedule:
        sim.schedule(at_ms, apply_fault, sim, kind, broker % brokers, duration_ms)
    try:
        sim.run_for(FAULT_PHASE_MS)
        sim.heal_and_settle(20_000)
    except Exception as error:
        raise SimulationFailed(sim.failure_report(error)) from error
