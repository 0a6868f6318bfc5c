"""What can go wrong when replog talks to ZooKeeper, as the exceptions callers catch."""


class StoreError(Exception):
    """ZooKeeper could not be reached or answered with an unexpected failure."""


class ControllerFencedError(StoreError):
    """A controller write failed its check of /controller_epoch: another controller won since.

    The writer must stop acting as controller at once (DESIGN §7).
    """


class TopicExistsError(StoreError):
    """The topic znode already exists."""


class WriteOutcomeUnknown(StoreError):
    """The connection broke while a write was in flight: it may or may not have happened."""


class StaleVersionError(StoreError):
    """A conditional write found a znode at another version than the writer last read."""
