"""`make demo`'s tour of a running local cluster: what it shows is asked of the live processes."""

from __future__ import annotations

import argparse
import sys
import time

import grpc

from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.dev import cluster as local
from replog.dev.processes import DevError, health_status, scrape_metric, wait_until

FAILOVER_WAIT_S_MAX = 30.0


def show_metadata(address: str) -> metadata_pb2.MetadataResponse:
    with grpc.insecure_channel(address) as channel:
        response = metadata_pb2_grpc.MetadataServiceStub(channel).Metadata(
            metadata_pb2.MetadataRequest(), timeout=5
        )
    brokers = ", ".join(f"{b.broker_id}@{b.host}:{b.port}" for b in response.brokers)
    print(f"  cluster {response.cluster_id}: brokers {brokers}; active controller {response.controller_id}")
    return response


def tour(data_dir: str) -> None:
    cluster = local.Cluster.load(data_dir)
    bootstrap = cluster.members("metadata")[0].address

    print("\n1. Every process answers the standard gRPC health check and serves /metrics:")
    for member in cluster.members():
        samples = scrape_metric(member.metrics_address, "process_resident_memory_bytes")
        memory = f"{samples / 2**20:.0f} MiB resident" if samples else "no metrics"
        print(f"  {member.name:<20} {member.address:<21} {health_status(member.address):<11} {memory}")

    print(f"\n2. Clients start at the metadata service ({bootstrap}), which watches ZooKeeper:")
    before = show_metadata(bootstrap)

    print(f"\n3. SIGKILL the active controller {before.controller_id}; another takes over once "
          "ZooKeeper expires its session:")
    local.kill(cluster, "controller", before.controller_id, "KILL")
    started = time.monotonic()

    def new_controller() -> bool:
        active = [c["id"] for c in local.status(cluster)["controllers"] if c["active"]]
        return bool(active) and active[0] != before.controller_id

    if not wait_until(new_controller, FAILOVER_WAIT_S_MAX):
        raise DevError("no controller took over; see the controller logs under " + data_dir + "/logs")
    print(f"  a new controller was active after {time.monotonic() - started:.1f} s")
    show_metadata(bootstrap)
    local.start(cluster, "controller", before.controller_id)
    print(f"  controller {before.controller_id} restarted and stands by")

    print("\nNext: `replog dev status`, `replog dev kill broker 1 --signal STOP`, and the logs in "
          f"{data_dir}/logs/.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Tour a running local cluster.")
    parser.add_argument("--data-dir", default=local.DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    try:
        tour(args.data_dir)
    except DevError as error:
        print(f"replog: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
