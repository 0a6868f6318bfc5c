"""How every client command finds the cluster: --bootstrap, else REPLOG_BOOTSTRAP, else the nearest .replog/."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from replog.client.errors import ClientError, ClusterUnreachableError, UnknownTopicError
from replog.client.io import parse_bootstrap
from replog.dev import cluster as local
from replog.dev.processes import DevError

ENV_BOOTSTRAP = "REPLOG_BOOTSTRAP"


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", metavar="HOST:PORT",
                        help=f"a metadata service address (default: ${ENV_BOOTSTRAP}, else the local cluster "
                        f"of the nearest {local.DEFAULT_DATA_DIR}/)")
    parser.add_argument("--data-dir", default=None,
                        help="the local cluster's directory, when --bootstrap and $REPLOG_BOOTSTRAP are not given")


def bootstrap_address(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> str:
    """The metadata service address(es) to start from, as "host:port[,host:port]"."""
    env = os.environ if env is None else env
    given = args.bootstrap or env.get(ENV_BOOTSTRAP, "").strip()
    if given:
        return ",".join(parse_bootstrap(given))
    data_dir = args.data_dir or local.find_data_dir()
    try:
        cluster = local.Cluster.load(data_dir)
    except DevError:
        raise ClientError(
            f"no cluster to talk to: pass --bootstrap HOST:PORT (a metadata service), set {ENV_BOOTSTRAP}, "
            "or start a local cluster with `replog dev up`"
        ) from None
    addresses = [member.address for member in cluster.members("metadata")]
    if not addresses:
        raise ClientError(f"the local cluster in {cluster.data_dir} has no metadata service; pass --bootstrap")
    return ",".join(addresses)


def user_message(error: ClientError) -> str:
    """The error as the one sentence a user sees, with what to do where that is clear."""
    if isinstance(error, UnknownTopicError):
        return (f"{error}; create it with `replog topics create {error.topic} --partitions N "
                "--replication-factor R`, or see `replog topics list`")
    if isinstance(error, ClusterUnreachableError):
        return f"{error}; is the cluster running? (`replog dev status` shows a local one)"
    return str(error)
