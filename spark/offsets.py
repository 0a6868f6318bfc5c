"""The driver's view of the topics a query reads: which partitions, and offsets from specs.

Offsets travel between Spark and the source as spark-sql-kafka writes them:
`{"topic": {"0": 23, "1": 42}}`, keys sorted so that equal offsets are equal JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from replog.client import Admin, ClusterUnreachableError
from replog.core.offset_ranges import EARLIEST, LATEST
from replog.core.topic_partition import TopicPartition
from replog.spark.options import OffsetSpec, OptionError, Security, SourceOptions

# What to do when the driver reaches no metadata service: a TLS cluster needs the ssl options.
SET_SSL_OPTIONS = ("if the cluster serves TLS, set the options ssl.cafile (its CA), and ssl.certfile and "
                   "ssl.keyfile where it requires client certificates (docs/SPARK.md)")
CHECK_SSL_OPTIONS = ("check the ssl and bearerToken options: ssl.cafile must be the CA of the cluster's "
                     "certificates, ssl.certfile a certificate it accepts, a bearer token one it verifies")


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        found.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return found


def offsets_from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(partition)): int(offset)
            for topic, partitions in offsets.items() for partition, offset in partitions.items()}


def unreachable(error: ClusterUnreachableError, security: Security) -> ClusterUnreachableError:
    """The driver's first request found no metadata service: the error, and what to check."""
    hint = SET_SSL_OPTIONS if security == Security() else CHECK_SSL_OPTIONS
    return ClusterUnreachableError(f"{error}; is the cluster running, and is bootstrap its metadata service? {hint}",
                                   error.error_code)


def no_such_topic(topic: str, given: str) -> OptionError:
    return OptionError(f"topic {topic!r} does not exist ({given}); create it first, "
                       f"e.g. replog topics create {topic} --partitions 3 --replication-factor 3")


def check_write_target(bootstrap: str, security: Security, topic: str | None) -> None:
    """One metadata request from the driver, so that a write to a cluster it cannot reach, or to a topic
    option it does not have, stops before any task starts (rather than each task waiting for the topic)."""
    try:
        with Admin(bootstrap, security=security.client_security()) as admin:
            topics = admin.cluster().topics
    except ClusterUnreachableError as error:
        raise unreachable(error, security) from None
    if topic is not None and topic not in topics:
        raise no_such_topic(topic, f"topic={topic}")


class ClusterOffsets:
    """Partitions and offsets of the subscription, asked of the cluster (on the driver only)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._admin: Admin | None = None

    @property
    def admin(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self._options.bootstrap, security=self._options.security.client_security())
        return self._admin

    def partitions(self) -> list[TopicPartition]:
        """The subscribed partitions as the metadata service shows them now; an unknown topic is an error."""
        subscription = self._options.subscription
        try:
            topics = self.admin.cluster().topics
        except ClusterUnreachableError as error:
            raise unreachable(error, self._options.security) from None
        if subscription.kind == "subscribePattern":
            pattern = re.compile(subscription.pattern)
            return sorted(TopicPartition(name, p.partition) for name, described in topics.items()
                          if not described.is_internal and pattern.fullmatch(name) for p in described.partitions)
        for topic in subscription.topics:
            if topic not in topics:
                raise no_such_topic(topic, str(subscription))
        if subscription.kind == "subscribe":
            return sorted(TopicPartition(topic, p.partition) for topic in subscription.topics
                          for p in topics[topic].partitions)
        for tp in subscription.partitions:
            if tp.partition >= len(topics[tp.topic].partitions):
                raise OptionError(f"partition {tp} does not exist ({subscription}); topic {tp.topic!r} has "
                                  f"{len(topics[tp.topic].partitions)} partitions")
        return sorted(subscription.partitions)

    def resolve(self, spec: OffsetSpec, tps: Iterable[TopicPartition], default: int,
                name: str) -> dict[TopicPartition, int]:
        """Offsets for `spec` on `tps`: -2/-1 and times looked up at the leaders. A time after the
        last record gives the latest offset (there is nothing at or after it yet)."""
        tps = list(tps)
        for tp in spec.offsets:
            if tp not in tps:
                raise OptionError(f"option {name} names {tp}, which is not among the partitions read "
                                  f"({self._options.subscription})")
        lookups: dict[TopicPartition, str | int] = {}
        found: dict[TopicPartition, int] = {}
        for tp in tps:
            kind, value = spec.for_partition(tp, default)
            if kind == "timestamp":
                lookups[tp] = value
            elif value in (EARLIEST, LATEST):
                lookups[tp] = "earliest" if value == EARLIEST else "latest"
            else:
                found[tp] = value
        if lookups:
            answers = self.admin.list_offsets(lookups, isolation_level=self._options.isolation_level)
            missing = [tp for tp, offset in answers.items() if offset < 0]
            latest = self.latest(missing) if missing else {}
            found.update({tp: latest.get(tp, offset) if offset < 0 else offset for tp, offset in answers.items()})
        return found

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        tps = list(tps)
        return self.admin.list_offsets({tp: "earliest" for tp in tps}) if tps else {}

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The high watermarks (read_uncommitted) or last stable offsets (read_committed)."""
        tps = list(tps)
        if not tps:
            return {}
        return self.admin.list_offsets({tp: "latest" for tp in tps}, isolation_level=self._options.isolation_level)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def __getstate__(self) -> dict:
        # Spark pickles readers to send them to tasks; the admin client (threads, channels) stays behind.
        return {"_options": self._options, "_admin": None}
