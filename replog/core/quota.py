"""Client quotas, Kafka's way: bytes per second a user (or client id) may produce and fetch, and
requests per second it may send.

Kafka's request quota (request_percentage) is a share of the brokers' handler threads' time; a
replog broker serves every request on one event loop, where one request's time cannot be told
apart from the others', so replog's is a count: request_rate, requests per second.

Every rate is measured over `samples` windows of `window_ms` each (Kafka's quota.window.num=11 and
quota.window.size.seconds=1); an answer that takes the rate over the quota is held for

    throttle_ms = (rate - quota) / quota * (samples * window_ms)

which is how long the client must stay silent for the rate to fall back to the quota.
Which quota applies (Kafka's precedence): the user's, else the default user's (<default>), else
the client id's, else the default client id's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from replog.core.log_config import INT64_MAX

PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_rate"
KINDS = (PRODUCE, FETCH, REQUEST)
UNIT_OF = {PRODUCE: "byte", FETCH: "byte", REQUEST: "request"}
# Kafka's quota types (QuotaType: Produce, Fetch, Request), the `quota` label of the throttle metrics.
TYPE_OF = {PRODUCE: "produce", FETCH: "fetch", REQUEST: "request"}
DEFAULT_ENTITY = "<default>"
SAMPLES = 11
WINDOW_MS = 1_000
THROTTLE_MS_MAX = 30_000  # Kafka bounds a throttle by the request timeout


RATE_MAX = INT64_MAX  # Kafka keeps a quota as a long


def parse_quota_configs(configs: Mapping[str, str]) -> dict[str, int]:
    """The quota configs of an entity; ValueError with one sentence for an unknown key or a bad rate."""
    parsed = {}
    for key, text in configs.items():
        if key == "request_percentage":
            raise ValueError("request_percentage (Kafka's share of handler thread time) is not measured here; "
                             "replog counts requests: use request_rate, requests per second")
        if key not in KINDS:
            raise ValueError(f"{key} is not a quota; use {', '.join(KINDS[:-1])} or {KINDS[-1]}")
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{key}={text!r} is not a whole number of {UNIT_OF[key]}s per second") from None
        if not 1 <= value <= RATE_MAX:
            raise ValueError(f"{key} must be from 1 to {RATE_MAX} {UNIT_OF[key]}s per second, not {value}")
        parsed[key] = value
    return parsed


@dataclasses.dataclass(frozen=True)
class Quotas:
    """Every quota of the cluster: entity name -> {kind: bytes or requests per second}."""

    users: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
    clients: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)

    def quota_of(self, user: str, client_id: str, kind: str) -> tuple[str, int] | None:
        """(the entity whose quota applies, its rate per second), or None: unlimited."""
        for entities, name, label in ((self.users, user, "user"), (self.users, DEFAULT_ENTITY, "user"),
                                      (self.clients, client_id, "client-id"),
                                      (self.clients, DEFAULT_ENTITY, "client-id")):
            value = entities.get(name, {}).get(kind)
            if value is not None:
                return f"{label}:{name}", value
        return None


    @functools.cached_property
    def kinds(self) -> frozenset[str]:
        """The kinds of quota some user or client id has: only those need measuring."""
        return frozenset(kind for entities in (self.users, self.clients) for configs in entities.values()
                         for kind in configs)


class Rate:
    """Amounts (bytes, requests) recorded over the last `samples` windows, as amounts per second."""

    def __init__(self, samples: int = SAMPLES, window_ms: int = WINDOW_MS) -> None:
        self._samples = samples
        self._window_ms = window_ms
        self._windows: list[tuple[int, int]] = []  # (window start ms, amount), oldest first

    def record(self, amount: int, now_ms: int) -> None:
        start = now_ms - now_ms % self._window_ms
        if self._windows and self._windows[-1][0] == start:
            self._windows[-1] = (start, self._windows[-1][1] + amount)
        else:
            self._windows.append((start, amount))
        oldest = start - (self._samples - 1) * self._window_ms
        while self._windows and self._windows[0][0] < oldest:
            self._windows.pop(0)

    def per_second(self, now_ms: int) -> float:
        if not self._windows:
            return 0.0
        total = sum(amount for _, amount in self._windows)
        # Kafka counts at least all but the current window as elapsed, so a first burst is not
        # measured over a few milliseconds.
        elapsed_ms = max(now_ms - self._windows[0][0], (self._samples - 1) * self._window_ms)
        return total * 1000 / elapsed_ms

    @property
    def span_ms(self) -> int:
        return self._samples * self._window_ms


def throttle_ms(rate: float, quota: int, span_ms: int) -> int:
    """How long an answer that found the rate at `rate` is held, for a quota of `quota` per second."""
    if rate <= quota:
        return 0
    return min(int((rate - quota) / quota * span_ms), THROTTLE_MS_MAX)
