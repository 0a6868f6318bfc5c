"""The one exception the decoder raises for bytes that are not a valid batch."""

from replog.core.errors import ErrorCode


class CorruptBatchError(ValueError):
    """The bytes are not a well-formed RecordBatch v2 (Kafka's CorruptRecordException)."""

    error_code = ErrorCode.CORRUPT_MESSAGE

    def __init__(self, position: int, reason: str) -> None:
        """`reason` is one sentence that names the batch by its byte `position`."""
        super().__init__(reason)
        self.position = position
        self.reason = reason
