"""`meta.properties` in each log directory: which cluster and broker the data belongs to.

As in Kafka, a broker refuses to start on a log directory written for another
cluster or another broker id, instead of mixing two clusters' data.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from replog.config import ConfigError, read_properties

META_FILE = "meta.properties"


def check_log_dirs(log_dirs: Sequence[str], *, broker_id: int, cluster_id: str) -> None:
    for log_dir in log_dirs:
        try:
            os.makedirs(log_dir, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"cannot create the log directory {log_dir}: {error.strerror}.") from None
        path = os.path.join(log_dir, META_FILE)
        if os.path.exists(path):
            _check_meta(path, read_properties(path), broker_id=broker_id, cluster_id=cluster_id)
        else:
            _write_meta(path, broker_id=broker_id, cluster_id=cluster_id)


def _check_meta(path: str, meta: dict[str, str], *, broker_id: int, cluster_id: str) -> None:
    if meta.get("cluster.id") != cluster_id:
        raise ConfigError(
            f"{path} says this log directory belongs to cluster {meta.get('cluster.id')}, "
            f"but ZooKeeper holds cluster {cluster_id}; use an empty log directory or the "
            "ZooKeeper that cluster was created with."
        )
    if meta.get("broker.id") != str(broker_id):
        raise ConfigError(
            f"{path} says this log directory belongs to broker {meta.get('broker.id')}, "
            f"not broker {broker_id}; give each broker its own log directory."
        )


def _write_meta(path: str, *, broker_id: int, cluster_id: str) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(f"version=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
