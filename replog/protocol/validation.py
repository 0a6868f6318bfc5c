"""validate_batches: may the broker append these bytes as they are?

The broker never decodes records: it checks each batch's header, sizes and
CRC-32C here, then stamps offsets in place (see `stamp`). Validation answers
with an ErrorCode and one sentence, and never raises, whatever the input.
"""

from dataclasses import dataclass, field

from replog.core.errors import ErrorCode
from replog.protocol.checks import Problem, byte_view, check_batch
from replog.protocol.header import BatchHeader


@dataclass(frozen=True, slots=True)
class ValidationResult:
    error: ErrorCode
    reason: str
    headers: list[BatchHeader] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is ErrorCode.NONE


def validate_batches(buf, *, max_message_bytes: int) -> ValidationResult:
    """Check every batch in `buf`; on the first fault say which batch and what is wrong.

    On success `headers` lists every batch in order. Empty input is
    INVALID_REQUEST (a malformed request, not a damaged batch, and not worth a
    retry); any other structural fault is CORRUPT_MESSAGE; a batch larger than
    `max_message_bytes` is MESSAGE_TOO_LARGE.
    """
    view = _byte_view(buf)
    if view is None:
        return ValidationResult(ErrorCode.INVALID_REQUEST, f"records must be bytes, not {type(buf).__name__}")
    if len(view) == 0:
        return ValidationResult(ErrorCode.INVALID_REQUEST, "the records are empty; at least one batch is required")
    headers: list[BatchHeader] = []
    pos = 0
    while pos < len(view):
        checked = check_batch(view, pos, max_message_bytes, walk=True)
        if isinstance(checked, Problem):
            return ValidationResult(checked.error, checked.reason)
        headers.append(checked)
        pos = checked.end
    return ValidationResult(ErrorCode.NONE, "", headers)


def _byte_view(buf) -> memoryview | None:
    try:
        return byte_view(buf)
    except (TypeError, ValueError):
        return None
