"""Kafka's quota math: the rate over the sample windows, the throttle that brings it back to the
quota, and which entity's quota applies; for bytes and for requests alike."""

import pytest

from replog.core.quota import FETCH, PRODUCE, REQUEST, Quotas, Rate, parse_quota_configs, throttle_ms


def test_a_steady_rate_at_the_quota_is_never_throttled_and_double_the_quota_waits_a_span():
    rate = Rate(samples=11, window_ms=1000)
    for second in range(20):
        rate.record(1000, second * 1000)
    assert rate.per_second(20_000) == pytest.approx(1000, rel=0.11)
    assert throttle_ms(1000, 1000, rate.span_ms) == 0
    assert throttle_ms(2000, 1000, rate.span_ms) == 11_000
    assert throttle_ms(10**9, 1, rate.span_ms) == 30_000


def test_a_first_burst_is_measured_over_the_whole_window_not_its_milliseconds():
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, 5)
    assert rate.per_second(10) == 1000


def test_the_users_quota_wins_over_the_default_users_then_the_client_ids():
    quotas = Quotas(users={"alice": {PRODUCE: 10}, "<default>": {PRODUCE: 20, FETCH: 5}},
                    clients={"etl": {PRODUCE: 30, FETCH: 40}})
    assert quotas.quota_of("alice", "etl", PRODUCE) == ("user:alice", 10)
    assert quotas.quota_of("bob", "etl", PRODUCE) == ("user:<default>", 20)
    assert quotas.quota_of("bob", "etl", FETCH) == ("user:<default>", 5)
    assert Quotas(clients={"etl": {FETCH: 40}}).quota_of("bob", "etl", FETCH) == ("client-id:etl", 40)
    assert Quotas().quota_of("bob", "etl", FETCH) is None


def test_a_client_that_waits_for_its_held_answers_sends_at_its_request_rate():
    """A loop of cheap requests (2 ms each) against request_rate=50: held by the throttle each
    answer carries, it settles at the quota."""
    rate, now_ms, sent = Rate(samples=3, window_ms=1000), 0, []
    while now_ms < 60_000:
        rate.record(1, now_ms)
        sent.append(now_ms)
        now_ms += 2 + throttle_ms(rate.per_second(now_ms), 50, rate.span_ms)
    settled = [at for at in sent if at >= 10_000]
    assert len(settled) / ((sent[-1] - 10_000) / 1000) == pytest.approx(50, rel=0.1)


def test_a_request_quota_resolves_like_the_byte_quotas_and_apart_from_them():
    quotas = Quotas(users={"alice": {PRODUCE: 10}, "<default>": {REQUEST: 100}}, clients={"etl": {REQUEST: 5}})
    assert quotas.quota_of("alice", "etl", REQUEST) == ("user:<default>", 100)
    assert quotas.quota_of("alice", "etl", PRODUCE) == ("user:alice", 10)
    assert Quotas(clients={"etl": {REQUEST: 5}}).quota_of("bob", "etl", REQUEST) == ("client-id:etl", 5)
    assert quotas.kinds == {PRODUCE, REQUEST}


@pytest.mark.parametrize("configs, complaint", [({"producer_byte_rate": "fast"}, "not a whole number of bytes"),
                                                ({"consumer_byte_rate": "0"}, "from 1 to 9223372036854775807 bytes"),
                                                ({"producer_byte_rate": str(10**40)}, f"bytes per second, not {10**40}"),
                                                ({"request_rate": "-1"}, "requests per second, not -1"),
                                                ({"request_rate": "abc"}, "not a whole number of requests"),
                                                ({"request_percentage": "5"}, "use request_rate"),
                                                ({"request_bytes": "5"}, "not a quota")])
def test_bad_quota_configs_say_why(configs, complaint):
    with pytest.raises(ValueError, match=complaint):
        parse_quota_configs(configs)
