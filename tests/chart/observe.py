"""Inside a client pod: the cluster as the roll rule sees it, as JSON (the address of the active
controller, the registered brokers, every partition with its ISR and min.insync.replicas)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict

from replog.cli.bootstrap import ENV_BOOTSTRAP
from replog.cli.roll import observe
from replog.client import Admin


def main() -> int:
    seen: dict[str, str | None] = {}

    def members(controller_address):
        seen["controller_address"] = controller_address
        return (), None, ()

    with Admin(os.environ[ENV_BOOTSTRAP], request_timeout_ms=10_000) as admin:
        view = observe(admin, members)
    print(json.dumps({"controller_address": seen["controller_address"], "registered": sorted(view.registered_brokers),
                      "partitions": [asdict(p) for p in view.partitions]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
