"""A partition log's settings: the core's `LogConfig`, which the controller's config checks share."""

from replog.core.log_config import LogConfig, LogConfigError

__all__ = ["LogConfig", "LogConfigError"]
