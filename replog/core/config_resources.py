"""What DescribeConfigs and AlterConfigs speak of: a config resource (a topic or a broker) and its configs."""

from dataclasses import dataclass
from enum import Enum

from .outcome import Outcome


class ResourceType(Enum):
    TOPIC = "topic"
    BROKER = "broker"


class ConfigSource(Enum):
    DYNAMIC_TOPIC_CONFIG = "dynamic topic config"  # set for the topic
    STATIC_BROKER_CONFIG = "static broker config"  # from the broker's own settings
    DEFAULT_CONFIG = "default"


@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType | None  # None: the request did not say
    name: str


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool


@dataclass(frozen=True, slots=True)
class DescribedConfigs:
    resource: Resource
    outcome: Outcome
    entries: tuple[ConfigEntry, ...] = ()
