"""`replog dev …`: run a local cluster of real processes."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replog.cli import roll
from replog.config import ConfigError, parse_overrides
from replog.dev import cluster as local
from replog.dev.processes import DevError
from replog.rpc import logs

USER_ERRORS = (DevError, ConfigError)


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("dev", help="run a local cluster of real processes",
                                 description="Run a local cluster: ZooKeeper, brokers, controllers "
                                 "and a metadata service, each a real process.")
    sub = parser.add_subparsers(dest="dev_command", metavar="ACTION", required=True)

    up = sub.add_parser("up", help="start a local cluster (or restart a stopped one)")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers, 1 to 100 (default 3)")
    up.add_argument("--controllers", type=int, default=2, help="number of controllers, 1 to 100 (default 2)")
    _data_dir(up)
    up.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                    help="use this running ZooKeeper instead of starting one; with a chroot (host:port/name), "
                    "several clusters share one ZooKeeper, each under its own path")
    up.add_argument("--base-port", type=int, default=0,
                    help="first of the consecutive ports to use (default 0: free ports)")
    up.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every service that has it, e.g. zookeeper.session.timeout.ms=6000")
    up.add_argument("--monitoring", action="store_true",
                    help="also run a Prometheus (Debian's prometheus package) that scrapes every member and "
                    "evaluates replog's alert rules; its URL is printed (kept when the cluster starts again)")
    up.add_argument("--log-format", choices=logs.FORMATS, default="text",
                    help="how the members log into <data-dir>/logs/: text (default), or json, one object a line")
    up.add_argument("--tls", action="store_true",
                    help="a new cluster with its own CA (in <data-dir>/tls/): every listener and /metrics port "
                    "TLS, client certificates required; commands present the admin certificate")
    up.add_argument("--authorizer", action="store_true",
                    help="check every request against the ACLs (`replog acls`); the services and User:admin "
                    "are super users")
    up.set_defaults(handler=_up)

    status = sub.add_parser("status", help="show every process of the local cluster")
    _data_dir(status)
    status.add_argument("--json", action="store_true", help="print the stable JSON shape")
    status.set_defaults(handler=_status)

    kill = sub.add_parser("kill", help="send a signal to one process")
    kill.add_argument("kind", choices=["broker", "controller"])
    kill.add_argument("id", type=int)
    kill.add_argument("--signal", choices=sorted(local.SIGNALS), default="TERM",
                      help="KILL and TERM wait until the process is gone (default TERM)")
    _data_dir(kill)
    kill.set_defaults(handler=_kill)

    start = sub.add_parser("start", help="start one stopped process again")
    start.add_argument("kind", choices=["broker", "controller"])
    start.add_argument("id", type=int)
    _data_dir(start)
    start.set_defaults(handler=_start)

    down = sub.add_parser("down", help="stop every process of the local cluster")
    _data_dir(down)
    down.add_argument("--kill", action="store_true",
                      help="SIGKILL every process at once, with no controlled shutdown (as a crash would): for a "
                           "cluster whose data you throw away next")
    down.set_defaults(handler=_down)

    roll.add_dev_command(sub)


def _data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None,
                        help=f"the cluster's directory (default: the nearest {local.DEFAULT_DATA_DIR}/ "
                        "with a cluster.json, from the current directory up)")


def _resolve(args: argparse.Namespace) -> str:
    return args.data_dir or local.find_data_dir()


def _up(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or local.DEFAULT_DATA_DIR
    cluster = local.up(
        data_dir,
        brokers=args.brokers,
        controllers=args.controllers,
        zookeeper_address=args.zookeeper,
        base_port=args.base_port,
        config=parse_overrides(args.config, "--config"),
        monitoring=args.monitoring,
        log_format=args.log_format,
        tls=args.tls,
        authorizer=args.authorizer,
    )
    members = cluster.members()
    print(f"local cluster up in {cluster.data_dir}: ZooKeeper at {cluster.zookeeper_address}, "
          f"{len(cluster.members('broker'))} brokers, {len(cluster.members('controller'))} controllers, "
          f"{len(cluster.members('metadata'))} metadata service; all {len(members)} SERVING")
    print(f"bootstrap (metadata service): {cluster.members('metadata')[0].address}")
    if cluster.tls is not None:
        print(f"TLS with client certificates; the CA is {cluster.tls['cafile']}, commands present "
              f"{cluster.tls['identities']['admin']['certfile']}")
    if cluster.prometheus is not None:
        print(f"prometheus: http://{cluster.prometheus['address']}")
    return 0


def _status(args: argparse.Namespace) -> int:
    report = local.status(local.Cluster.load(_resolve(args)))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    zk = report["zookeeper"]
    print(f"zookeeper   {zk['address']:<21} pid {_pid(zk['pid']):>7}  {_alive(zk['alive'])}")
    for broker in report["brokers"]:
        print(f"broker {broker['id']:<4} {broker['address']:<21} pid {_pid(broker['pid']):>7}  "
              f"{_alive(broker['alive']):<5}  {broker['data_dir']}")
    for controller in report["controllers"]:
        role = "active" if controller["active"] else ""
        print(f"controller {controller['id']:<0} {controller['address']:<21} pid {_pid(controller['pid']):>7}  "
              f"{_alive(controller['alive']):<5}  {role}")
    for metadata in report["metadata"]:
        print(f"metadata    {metadata['address']:<21} pid {_pid(metadata['pid']):>7}  {_alive(metadata['alive'])}")
    if "prometheus" in report:
        prom = report["prometheus"]
        print(f"prometheus  {prom['address']:<21} pid {_pid(prom['pid']):>7}  {_alive(prom['alive']):<5}  "
              f"http://{prom['address']}")
    return 0


def _pid(pid: int | None) -> str:
    return str(pid) if pid else "-"


def _alive(alive: bool) -> str:
    return "up" if alive else "down"


def _kill(args: argparse.Namespace) -> int:
    member, pid = local.kill(local.Cluster.load(_resolve(args)), args.kind, args.id, args.signal)
    print(f"sent SIG{args.signal} to {member.name} (pid {pid})")
    return 0


def _start(args: argparse.Namespace) -> int:
    member = local.start(local.Cluster.load(_resolve(args)), args.kind, args.id)
    print(f"{member.name} started (pid {member.pid}) and SERVING at {member.address}")
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster = local.Cluster.load(_resolve(args))
    killed = local.down(cluster, kill=args.kill)
    if args.kill:
        print(f"local cluster in {cluster.data_dir} killed")
        return 0
    note = f" (had to SIGKILL: {', '.join(killed)})" if killed else ""
    print(f"local cluster in {cluster.data_dir} stopped{note}")
    return 0
