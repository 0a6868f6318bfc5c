"""A partition's name: its topic and its index. One type for every layer (Kafka's TopicPartition)."""

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
