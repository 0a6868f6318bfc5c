"""How every client command finds the cluster: --bootstrap, else REPLOG_BOOTSTRAP, else the nearest .replog/."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from replog.client.admin import Admin
from replog.client.errors import ClientError, ClusterUnreachableError, UnknownTopicError
from replog.client.io import parse_bootstrap
from replog.config import ConfigError, read_properties
from replog.dev import cluster as local
from replog.dev.processes import DevError
from replog.rpc import channels

ENV_BOOTSTRAP = "REPLOG_BOOTSTRAP"


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", metavar="HOST:PORT",
                        help=f"a metadata service address (default: ${ENV_BOOTSTRAP}, else the local cluster "
                        f"of the nearest {local.DEFAULT_DATA_DIR}/)")
    parser.add_argument("--data-dir", default=None,
                        help="the local cluster's directory, when --bootstrap and $REPLOG_BOOTSTRAP are not given")
    parser.add_argument("--command-config", metavar="FILE", default=None,
                        help=f"client properties: {', '.join(channels.CLIENT_PROPERTIES)}; other keys are named "
                        f"in a warning (default: ${channels.ENV_CAFILE} and the like, else the local "
                        "cluster's own under `dev up --tls`)")


def bootstrap_address(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> str:
    """The metadata service address(es) to start from, as "host:port[,host:port]"."""
    env = os.environ if env is None else env
    if args.bootstrap is not None and not args.bootstrap.strip():
        raise ClientError("--bootstrap is empty: give HOST:PORT of a metadata service, or leave it out to use "
                          f"{ENV_BOOTSTRAP} or the local cluster")
    given = args.bootstrap or env.get(ENV_BOOTSTRAP, "").strip()
    command_config = getattr(args, "command_config", None)
    if command_config:
        channels.set_default(_client_security(command_config))
    if given:
        return ",".join(parse_bootstrap(given))
    data_dir = args.data_dir or local.find_data_dir()
    try:
        cluster = local.Cluster.load(data_dir)
    except DevError as error:
        if args.data_dir:  # the user named the directory: what is wrong with it is the answer
            raise ClientError(str(error)) from None
        raise ClientError(
            f"no cluster to talk to: pass --bootstrap HOST:PORT (a metadata service), set {ENV_BOOTSTRAP}, "
            "or start a local cluster with `replog dev up`"
        ) from None
    if not command_config and not channels.ClientSecurity.from_env(env).tls:
        channels.set_default(cluster.security)
    addresses = [member.address for member in cluster.members("metadata")]
    if not addresses:
        raise ClientError(f"the local cluster in {cluster.data_dir} has no metadata service; pass --bootstrap")
    return ",".join(addresses)


def command_admin(args: argparse.Namespace) -> Admin:
    """The command's Admin, at the cluster its flags name. When no metadata service answers it says so at
    once, for group and transaction calls too: a command has its user waiting."""
    return Admin(bootstrap_address(args), retry_unreachable=False)


def _client_security(path: str) -> channels.ClientSecurity:
    try:
        properties = read_properties(path)
        unknown = sorted(set(properties) - set(channels.CLIENT_PROPERTIES))
        if unknown:  # Kafka's "supplied but isn't a known config": said, not refused (the file may be shared)
            print(f"replog: warning: --command-config {path}: {', '.join(unknown)} "
                  f"{'is' if len(unknown) == 1 else 'are'} not read; replog's client reads "
                  f"{', '.join(channels.CLIENT_PROPERTIES)}", file=sys.stderr)
        security = channels.ClientSecurity.from_properties(properties)
        security.check()  # a file that does not load is named now, not lost in a failed handshake
    except ConfigError as error:
        raise ClientError(f"--command-config {path}: {error}") from None
    return security


def user_message(error: ClientError) -> str:
    """The error as the one sentence a user sees, with what to do where that is clear."""
    if isinstance(error, UnknownTopicError):
        return (f"{error}; create it with `replog topics create {error.topic} --partitions N "
                "--replication-factor R`, or see `replog topics list` (under an authorizer, the topics "
                "you may Describe)")
    if isinstance(error, ClusterUnreachableError):
        return (f"{error}; is the cluster running? (`replog dev status` shows a local one); if it serves TLS, "
                "give --command-config with ssl.cafile, and ssl.certfile and ssl.keyfile where client "
                "certificates are required")
    return str(error)
