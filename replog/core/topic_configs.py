"""The topic configs a topic may set, under Kafka's names, with Kafka's defaults: one table.

Each config's default and check live in one place. The log's configs are the
fields of `LogConfig` (what a broker builds a partition's log from): their
defaults are its defaults and a value is valid when LogConfig accepts it.
`min.insync.replicas` takes its default from `ReplicaConfig`. Only the configs
neither knows are defined here.

`/config/topics/<topic>` holds only the configs the topic set, normalised as
`validate_topic_configs` returns them; every other config takes its default.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence

from .config import ReplicaConfig
from .log_config import INT32_MAX, LogConfig, LogConfigError

# Configs whose value is a comma-separated list: AlterConfigs may append to or subtract from them.
LIST_CONFIGS = frozenset({"cleanup.policy"})


class InvalidConfig(ValueError):
    """One sentence saying which config is wrong and what it accepts."""


def _integer(minimum: int, maximum: int) -> Callable[[str, str], str]:
    def normalise(name: str, text: str) -> str:
        try:
            value = int(text.strip())
        except ValueError:
            raise InvalidConfig(f"{name} must be a whole number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise InvalidConfig(f"{name} must be between {minimum} and {maximum}, not {value}")
        return str(value)

    return normalise


def _boolean(name: str, text: str) -> str:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfig(f"{name} must be true or false, not {text!r}")
    return value


# The configs that are not the log's: (default, normalise).
_REPLICA_CONFIGS: Mapping[str, tuple[str, Callable[[str, str], str]]] = {
    "min.insync.replicas": (str(ReplicaConfig().min_insync_replicas), _integer(1, INT32_MAX)),
    "unclean.leader.election.enable": ("false", _boolean),
}

# The log's configs: Kafka's name of each LogConfig field, and its default.
_LOG_FIELDS: Mapping[str, str] = {f.name.replace("_", "."): f.name for f in dataclasses.fields(LogConfig)}
_LOG_DEFAULTS: Mapping[str, str] = {name: str(getattr(LogConfig(), field)) for name, field in _LOG_FIELDS.items()}

# Every topic config and its default, by name.
TOPIC_CONFIG_DEFAULTS: Mapping[str, str] = dict(sorted(
    {**_LOG_DEFAULTS, **{name: default for name, (default, _) in _REPLICA_CONFIGS.items()}}.items()))


def validate_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """The configs as they are stored; InvalidConfig names the first unknown or invalid one."""
    _check_known(configs)
    stored = {name: normalise(name, configs[name])
              for name, (_, normalise) in _REPLICA_CONFIGS.items() if name in configs}
    log_configs = {name: configs[name] for name in configs if name in _LOG_FIELDS}
    try:
        log_config = LogConfig.from_topic_config(log_configs)
    except (LogConfigError, TypeError) as error:
        raise InvalidConfig(str(error)) from None
    stored.update({name: str(getattr(log_config, _LOG_FIELDS[name])) for name in log_configs})
    return dict(sorted(stored.items()))


def _check_known(names: Iterable[str]) -> None:
    unknown = sorted(set(names) - TOPIC_CONFIG_DEFAULTS.keys())
    if unknown:
        raise InvalidConfig(f"unknown topic config {unknown[0]!r}; known topic configs: "
                            f"{', '.join(TOPIC_CONFIG_DEFAULTS)}")


def effective(configs: Mapping[str, str], name: str) -> str:
    """A topic's value of one config: its own, else the default."""
    return configs.get(name, TOPIC_CONFIG_DEFAULTS[name])


def unclean_leader_election_enabled(configs: Mapping[str, str]) -> bool:
    return effective(configs, "unclean.leader.election.enable") == "true"


# -- AlterConfigs (Kafka's IncrementalAlterConfigs) -----------------------------------------------


class ConfigOp(enum.Enum):
    SET = "set"
    DELETE = "delete"  # back to the default
    APPEND = "append"  # to a list config
    SUBTRACT = "subtract"  # from a list config


@dataclasses.dataclass(frozen=True)
class ConfigChange:
    name: str
    op: ConfigOp
    value: str | None = None


def apply_config_changes(configs: Mapping[str, str], changes: Sequence[ConfigChange]) -> dict[str, str]:
    """The topic's configs after the changes, validated and normalised; InvalidConfig when a
    change is malformed or the result is not valid (then nothing is changed)."""
    names = [change.name for change in changes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidConfig(f"{repeated[0]} is changed more than once in one request")
    _check_known(names)
    result = dict(configs)
    for change in changes:
        if change.op is ConfigOp.DELETE:
            result.pop(change.name, None)
            continue
        if change.value is None:
            raise InvalidConfig(f"{change.name}: {change.op.value} needs a value")
        if change.op is ConfigOp.SET:
            result[change.name] = change.value
            continue
        if change.name not in LIST_CONFIGS:
            raise InvalidConfig(f"{change.name} is not a list: only {', '.join(sorted(LIST_CONFIGS))} can be "
                                f"appended to or subtracted from")
        result[change.name] = _changed_list(effective(result, change.name), change)
    return validate_topic_configs(result)


def _changed_list(current: str, change: ConfigChange) -> str:
    items = [item.strip() for item in current.split(",") if item.strip()]
    values = [item.strip() for item in (change.value or "").split(",") if item.strip()]
    if change.op is ConfigOp.APPEND:
        return ",".join(items + [v for v in values if v not in items])
    return ",".join(item for item in items if item not in values)


def described(configs: Mapping[str, str], names: Iterable[str] = ()) -> list[tuple[str, str, bool]]:
    """(name, effective value, set for the topic) of the named configs, or of all when none are named."""
    wanted = list(names) or list(TOPIC_CONFIG_DEFAULTS)
    return [(name, effective(configs, name), name in configs) for name in wanted if name in TOPIC_CONFIG_DEFAULTS]
