"""The data source's options, checked once on the driver: spark-sql-kafka's names and meanings.

Spark hands options over as a case-insensitive dict of strings. Everything here
runs when the query is planned (`load()` or `start()`), so a bad option stops it
with one sentence before any task starts. The TLS options (ssl.*, bearerToken*)
are replog's client settings; their files are checked on the driver, and must be
at the same paths on every executor.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from replog.client.errors import ClientError
from replog.client.io import parse_bootstrap
from replog.config import ConfigError
from replog.core.offset_ranges import EARLIEST, LATEST
from replog.core.topic_partition import TopicPartition
from replog.rpc.channels import ClientSecurity

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
POLL_TIMEOUT_MS = 120_000  # spark-sql-kafka's kafkaConsumer.pollTimeoutMs
MAX_TRIGGER_DELAY_MS = 15 * 60_000  # spark-sql-kafka's maxTriggerDelay, 15m

# How to reach a TLS cluster: replog's client properties (ClientSecurity.from_properties, --command-config) and
# the options that carry them to every client the query makes.
PROPERTY_OPTIONS = {"ssl.cafile": "ssl.cafile", "ssl.certfile": "ssl.certfile", "ssl.keyfile": "ssl.keyfile",
                    "ssl.server.name": "ssl.serverName", "bearer.token": "bearerToken",
                    "bearer.token.file": "bearerTokenFile"}
SECURITY_OPTIONS = tuple(PROPERTY_OPTIONS.values())
SOURCE_OPTIONS = (
    "bootstrap", "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions", "failOnDataLoss",
    "includeHeaders", "isolationLevel", "pollTimeoutMs", "pushFilters", *SECURITY_OPTIONS,
)
SINK_OPTIONS = ("bootstrap", "topic", "acks", "transactional", "transactionTimeoutMs", "includeHeaders",
                *SECURITY_OPTIONS)
# A task's transaction stays open until the driver commits the micro-batch, after its slowest task: as long
# as the brokers allow by default (transaction.max.timeout.ms), rather than the producer's 60 s.
TRANSACTION_TIMEOUT_MS = 900_000
# Options Spark itself passes along with the user's.
SPARK_OPTIONS = ("path", "checkpointLocation", "queryName")
DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
# Offsets and times travel as int64, a transaction's timeout as int32: a larger number is a typo.
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


class OptionError(ValueError):
    """A bad option; the message is one sentence that says which and what to do."""


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: named topics, a pattern over topic names, or given partitions."""

    kind: str  # "subscribe", "subscribePattern" or "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def __str__(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return f"assign={json.dumps(_by_topic(self.partitions))}"


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or end: "earliest", "latest", per-partition offsets (-2 earliest, -1 latest),
    one time for every partition, or a time per partition (ms since the Unix epoch)."""

    kind: str  # "earliest", "latest", "offsets", "timestamp", "timestamps"
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp_ms: int = -1

    def for_partition(self, tp: TopicPartition, default: int) -> tuple[str, int]:
        """("offset", n) with -2/-1 for earliest/latest, or ("timestamp", ms), for one partition."""
        if self.kind == "earliest":
            return "offset", EARLIEST
        if self.kind == "latest":
            return "offset", LATEST
        if self.kind == "timestamp":
            return "timestamp", self.timestamp_ms
        if self.kind == "timestamps":
            return ("timestamp", self.offsets[tp]) if tp in self.offsets else ("offset", default)
        return "offset", self.offsets.get(tp, default)


@dataclass(frozen=True)
class Security:
    """The TLS options as given (strings, so that they travel to the tasks): the CA, a client certificate
    and key, a server name to verify instead of the address, a bearer token or the file holding one."""

    cafile: str = ""
    certfile: str = ""
    keyfile: str = ""
    server_name: str = ""
    token: str = ""
    token_file: str = ""

    def __str__(self) -> str:
        """How the query reaches the cluster, for its log (no secret in it)."""
        if self == Security():
            return "the REPLOG_SSL_* environment or plaintext"
        parts = [f"TLS verified by {self.cafile}" + (f" as {self.server_name}" if self.server_name else "")]
        if self.certfile:
            parts.append(f"client certificate {self.certfile}")
        if self.token or self.token_file:
            parts.append(f"bearer token from {self.token_file}" if self.token_file else "bearer token")
        return ", ".join(parts)

    def client_security(self) -> ClientSecurity | None:
        """What the query's clients use; None without any option (each process's REPLOG_SSL_* then)."""
        if self == Security():
            return None
        # As replog's client properties: a token file is read at each call, so a rotated token is followed.
        given = dict(zip(SECURITY_OPTIONS, (self.cafile, self.certfile, self.keyfile, self.server_name, self.token,
                                            self.token_file), strict=True))
        return ClientSecurity.from_properties({prop: given[option] for prop, option in PROPERTY_OPTIONS.items()})


@dataclass(frozen=True)
class SourceOptions:
    bootstrap: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    isolation_level: str = "read_uncommitted"
    poll_timeout_ms: int = POLL_TIMEOUT_MS
    security: Security = Security()
    columns: tuple[str, ...] | None = None  # the columns a .schema(...) picked, in its order; None: all
    push_filters: bool = False  # a batch read takes the query's conditions on topic, partition, offset, timestamp


@dataclass(frozen=True)
class SinkOptions:
    bootstrap: str
    topic: str | None = None
    acks: int = -1
    transactional: bool = False
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS
    include_headers: bool = False
    security: Security = Security()


def security_options(properties: Mapping[str, str]) -> dict[str, str]:
    """replog's client properties (a --command-config file) as the data source's options."""
    return {option: properties[prop] for prop, option in PROPERTY_OPTIONS.items() if properties.get(prop)}


def source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """The read options, checked; OptionError names the first problem."""
    given = _lowered(options)
    _refuse_unknown(given, SOURCE_OPTIONS, "reading")
    bootstrap = _bootstrap(given)
    subscription = _subscription(given)
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp", "pushFilters"):
            if name.lower() in given:
                raise OptionError(f"{name} is for batch reads only; a streaming query reads on as records arrive")
    starting = _offset_spec(given, "starting", "latest" if streaming else "earliest", streaming=streaming)
    ending = _offset_spec(given, "ending", "latest", streaming=streaming)
    if starting.kind == ending.kind == "timestamp" and starting.timestamp_ms > ending.timestamp_ms:
        raise OptionError(f"startingTimestamp {starting.timestamp_ms} is after endingTimestamp {ending.timestamp_ms}: "
                          "the read would be empty")
    min_per_trigger = _positive_int(given, "minOffsetsPerTrigger")
    if "maxtriggerdelay" in given and min_per_trigger is None:
        raise OptionError("maxTriggerDelay only makes sense with minOffsetsPerTrigger")
    return SourceOptions(
        bootstrap=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=_positive_int(given, "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(given, "maxTriggerDelay", MAX_TRIGGER_DELAY_MS),
        min_partitions=_positive_int(given, "minPartitions"),
        fail_on_data_loss=_boolean(given, "failOnDataLoss", True),
        include_headers=_boolean(given, "includeHeaders", False),
        isolation_level=_choice(given, "isolationLevel", ISOLATION_LEVELS, "read_uncommitted"),
        poll_timeout_ms=_positive_int(given, "pollTimeoutMs") or POLL_TIMEOUT_MS,
        security=_security(given),
        push_filters=_boolean(given, "pushFilters", False),
    )


def wants_headers(options: Mapping[str, str]) -> bool:
    """includeHeaders, which decides the schema before the rest of the options are read."""
    return _boolean(_lowered(options), "includeHeaders", False)


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """The write options, checked; OptionError names the first problem."""
    given = _lowered(options)
    _refuse_unknown(given, SINK_OPTIONS, "writing")
    acks = given.get("acks", "all").strip().lower()
    if acks not in ACKS:
        raise OptionError(f"acks must be all, 1 or 0, not {given['acks']!r}")
    topic = given.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("the topic option is empty; name a topic or leave it out and give a topic column")
    transactional = _boolean(given, "transactional", False)
    if transactional and ACKS[acks] != -1:
        raise OptionError(f"transactional=true writes with acks=all; leave out acks={given['acks']}")
    if "transactiontimeoutms" in given and not transactional:
        raise OptionError("transactionTimeoutMs only makes sense with transactional=true")
    timeout_ms = _positive_int(given, "transactionTimeoutMs", INT32_MAX) or TRANSACTION_TIMEOUT_MS
    return SinkOptions(bootstrap=_bootstrap(given), topic=topic.strip() if topic else None, acks=ACKS[acks],
                       transactional=transactional, transaction_timeout_ms=timeout_ms,
                       include_headers=_boolean(given, "includeHeaders", False), security=_security(given))


# -- the parts -------------------------------------------------------------------------------------


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in options.items()}


def _refuse_unknown(given: Mapping[str, str], known: tuple[str, ...], doing: str) -> None:
    names = {name.lower(): name for name in known + SPARK_OPTIONS}
    unknown = sorted(name for name in given if name not in names)
    if unknown:
        raise OptionError(f"unknown option {unknown[0]!r} for {doing} replog; the options are: {', '.join(known)}")


def _bootstrap(given: Mapping[str, str]) -> str:
    bootstrap = given.get("bootstrap", "").strip()
    if not bootstrap:
        raise OptionError("option bootstrap is required: the HOST:PORT of a replog metadata service, "
                          "e.g. .option(\"bootstrap\", \"127.0.0.1:9094\")")
    try:
        parse_bootstrap(bootstrap)
    except ClientError as error:
        raise OptionError(f"option {error}") from None
    return bootstrap


def _security(given: Mapping[str, str]) -> Security:
    """The TLS options, checked together and their files loaded, on the driver."""
    value = {name: given.get(name.lower(), "").strip() for name in SECURITY_OPTIONS}
    if value["bearerToken"] and value["bearerTokenFile"]:
        raise OptionError("give bearerToken or bearerTokenFile, not both")
    if value["ssl.serverName"] and not value["ssl.cafile"]:
        raise OptionError("option ssl.serverName is for TLS: set ssl.cafile too, the CA the servers' certificates "
                          "chain to")
    for name in ("ssl.cafile", "ssl.certfile", "ssl.keyfile", "bearerTokenFile"):
        path = value[name]
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            problem = ("does not exist" if not os.path.exists(path) else
                       "is not a file" if not os.path.isfile(path) else "cannot be read")
            raise OptionError(f"option {name} names {path}, which {problem} here on the driver (the file must be "
                              "at that path on the driver and on every executor)")
    if value["bearerTokenFile"] and not _read_text(value["bearerTokenFile"]).strip():
        raise OptionError(f"option bearerTokenFile names {value['bearerTokenFile']}, which is empty")
    security = Security(value["ssl.cafile"], value["ssl.certfile"], value["ssl.keyfile"], value["ssl.serverName"],
                        value["bearerToken"], value["bearerTokenFile"])
    try:
        client = security.client_security()
        if client is not None:
            client.check()
    except ConfigError as error:
        raise OptionError(str(error).rstrip(".")) from None
    return security


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _subscription(given: Mapping[str, str]) -> Subscription:
    chosen = [name for name in ("subscribe", "subscribePattern", "assign") if name.lower() in given]
    if len(chosen) != 1:
        which = " and ".join(chosen) if chosen else "none"
        raise OptionError(f"give exactly one of the options subscribe, subscribePattern and assign (got {which})")
    kind = chosen[0]
    value = given[kind.lower()].strip()
    if kind == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise OptionError("option subscribe names no topic; give a comma-separated list of topics")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        try:
            re.compile(value)
        except re.error as error:
            raise OptionError(f"option subscribePattern {value!r} is not a regular expression: {error}") from None
        if not value:
            raise OptionError("option subscribePattern is empty; give a regular expression over topic names")
        return Subscription(kind, pattern=value)
    partitions = _assign_json(value)
    return Subscription(kind, topics=tuple(dict.fromkeys(tp.topic for tp in partitions)), partitions=partitions)


def _assign_json(value: str) -> tuple[TopicPartition, ...]:
    example = '{"topicA":[0,1],"topicB":[2,4]}'
    parsed = _json(value, "assign", example)
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f"option assign must be a JSON object of topics and partition lists, e.g. {example}")
    partitions = []
    for topic, numbers in parsed.items():
        if not isinstance(numbers, list) or not numbers or not all(_is_whole(n) and n >= 0 for n in numbers):
            raise OptionError(f"option assign: topic {topic!r} needs a list of partition numbers, e.g. {example}")
        partitions += [TopicPartition(topic, n) for n in numbers]
    return tuple(dict.fromkeys(partitions))


def _offset_spec(given: Mapping[str, str], side: str, default: str, *, streaming: bool) -> OffsetSpec:
    """startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
    (spark-sql-kafka's order); the same for ending*."""
    by_time = given.get(f"{side}timestamp")
    if by_time is not None:
        return OffsetSpec("timestamp", timestamp_ms=_timestamp(by_time, f"{side}Timestamp"))
    per_partition = given.get(f"{side}offsetsbytimestamp")
    if per_partition is not None:
        return OffsetSpec("timestamps", offsets=_partition_json(per_partition, f"{side}OffsetsByTimestamp",
                                                                 timestamps=True))
    name = f"{side}Offsets"
    value = given.get(name.lower(), default).strip()
    if value.lower() in ("earliest", "latest"):
        value = value.lower()
        if side == "starting" and value == "latest" and not streaming:
            raise OptionError("startingOffsets=latest would read nothing in a batch query; use earliest or offsets")
        if side == "ending" and value == "earliest":
            raise OptionError("endingOffsets=earliest would read nothing; use latest or offsets")
        return OffsetSpec(value)
    offsets = _partition_json(value, name, timestamps=False)
    for tp, offset in offsets.items():
        if side == "starting" and offset == LATEST and not streaming:
            raise OptionError(f"startingOffsets for {tp} is -1 (latest), which a batch query cannot start at")
        if side == "ending" and offset == EARLIEST:
            raise OptionError(f"endingOffsets for {tp} is -2 (earliest), which a query cannot end at")
    return OffsetSpec("offsets", offsets=offsets)


def _partition_json(value: str, name: str, *, timestamps: bool) -> dict[TopicPartition, int]:
    example = '{"topicA":{"0":1700000000000}}' if timestamps else '{"topicA":{"0":23,"1":-2}}'
    parsed = _json(value, name, example)
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f"option {name} must be earliest, latest or a JSON object like {example}"
                          if not timestamps else f"option {name} must be a JSON object like {example}")
    found: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict) or not partitions:
            raise OptionError(f"option {name}: topic {topic!r} needs an object of partitions, e.g. {example}")
        for partition, number in partitions.items():
            if not str(partition).isdecimal() or not _is_whole(number):
                raise OptionError(f"option {name}: {topic!r} partition {partition!r} must map a partition number "
                                  f"to an integer, e.g. {example}")
            least = 0 if timestamps else EARLIEST
            if not least <= number <= INT64_MAX:
                raise OptionError(f"option {name}: {number} for {topic}-{partition} is not "
                                  + ("a time in ms since the Unix epoch" if timestamps
                                     else "an offset (or -2 for earliest, -1 for latest)"))
            found[TopicPartition(topic, int(partition))] = number
    return found


def _json(value: str, name: str, example: str):
    try:
        return json.loads(value)
    except ValueError:
        raise OptionError(f"option {name} is not valid JSON: {value!r}; write it like {example}") from None


def _is_whole(number) -> bool:
    return isinstance(number, int) and not isinstance(number, bool)  # JSON's true is not partition 1


def _timestamp(value: str, name: str) -> int:
    if not value.strip().isdecimal() or int(value) > INT64_MAX:
        raise OptionError(f"option {name} must be a time in ms since the Unix epoch, not {value!r}")
    return int(value)


def _positive_int(given: Mapping[str, str], name: str, most: int = INT64_MAX) -> int | None:
    value = given.get(name.lower())
    if value is None:
        return None
    if not value.strip().isdecimal() or int(value) <= 0:
        raise OptionError(f"option {name} must be a positive whole number, not {value!r}")
    if int(value) > most:
        raise OptionError(f"option {name} must be at most {most}, not {value!r}")
    return int(value)


def _boolean(given: Mapping[str, str], name: str, default: bool) -> bool:
    value = given.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise OptionError(f"option {name} must be true or false, not {value!r}")
    return value.strip().lower() == "true"


def _choice(given: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = given.get(name.lower(), default).strip()
    if value not in choices:
        raise OptionError(f"option {name} must be {' or '.join(choices)}, not {value!r}")
    return value


def _duration_ms(given: Mapping[str, str], name: str, default: int) -> int:
    value = given.get(name.lower())
    if value is None:
        return default
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|min|m|h|d)?\s*", value.lower())
    if match is None:
        raise OptionError(f"option {name} must be a duration such as 500ms, 30s, 15m or 1h, not {value!r}")
    return int(match.group(1)) * DURATION_UNITS_MS[match.group(2) or "ms"]


def _by_topic(partitions) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped
