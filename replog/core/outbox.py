"""Work the core has decided on and the driver has not yet taken (see Ready)."""

from collections.abc import Callable

from .epoch_cache import EpochEntry
from .messages import Completion, IsrChanged, LogOp, Message, Ready


class Outbox:
    def __init__(self) -> None:
        self._log_ops: list[LogOp] = []
        self._messages: list[Message] = []
        self._completions: list[Completion] = []
        self._isr_changes: list[IsrChanged] = []
        self._epoch_checkpoint_due = False
        self._high_watermark_checkpoint_due = False
        self._last_id = 0

    def new_id(self) -> int:
        """A fresh id for a fetch or proposal, so that late or duplicated answers are recognised."""
        self._last_id += 1
        return self._last_id

    def log_op(self, op: LogOp) -> None:
        self._log_ops.append(op)

    def checkpoint_epochs(self) -> None:
        self._epoch_checkpoint_due = True

    def checkpoint_high_watermark(self) -> None:
        self._high_watermark_checkpoint_due = True

    def send(self, message: Message) -> None:
        self._messages.append(message)

    def complete(self, completion: Completion) -> None:
        self._completions.append(completion)

    def isr_changed(self, change: IsrChanged) -> None:
        self._isr_changes.append(change)

    @property
    def empty(self) -> bool:
        return not (
            self._log_ops
            or self._messages
            or self._completions
            or self._isr_changes
            or self._epoch_checkpoint_due
            or self._high_watermark_checkpoint_due
        )

    def take(self, epoch_entries: Callable[[], tuple[EpochEntry, ...]], high_watermark: int) -> Ready:
        """Hand over the work; the epoch entries are read only when a checkpoint is due."""
        ready = Ready(
            log_ops=tuple(self._log_ops),
            epoch_entries=epoch_entries() if self._epoch_checkpoint_due else None,
            high_watermark=high_watermark if self._high_watermark_checkpoint_due else None,
            messages=tuple(self._messages),
            completions=tuple(self._completions),
            isr_changes=tuple(self._isr_changes),
        )
        self._log_ops.clear()
        self._messages.clear()
        self._completions.clear()
        self._isr_changes.clear()
        self._epoch_checkpoint_due = self._high_watermark_checkpoint_due = False
        return ready
