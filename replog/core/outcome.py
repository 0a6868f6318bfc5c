"""What a controller rule answers for one item of a request: Kafka's error code and one sentence."""

from dataclasses import dataclass

from .errors import ErrorCode


@dataclass(frozen=True, slots=True)
class Outcome:
    """Kafka's error code for one item of a request, and one sentence saying why."""

    error: ErrorCode
    message: str = ""


# What the rules return when they refuse; SUCCESS when an item went through.
Rejection = Outcome
SUCCESS = Outcome(ErrorCode.NONE)
