"""A Prometheus for a local cluster (`replog dev up --monitoring`), from Debian's `prometheus` package.

It runs from `<data-dir>/prometheus/`: its config, the scrape targets (file-based service
discovery: every member's metrics address, labelled with its component and name), the alert
rules with every `for:` shortened (replog.monitoring.rules) and its own database. It scrapes
and evaluates every second, listens on the loopback address only, and stops with the cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request

from replog.dev.cluster_file import Cluster
from replog.dev.processes import DevError, spawn, wait_until
from replog.monitoring import rules

READY_WAIT_S_MAX = 30.0
SCRAPE_INTERVAL_S = 1
RULES_FILE = "replog.rules.yaml"
TARGETS_FILE = "targets.json"

CONFIG_TEMPLATE = """\
# The Prometheus of the local cluster in {data_dir} (written by `replog dev up --monitoring`).
global:
  scrape_interval: {interval}s
  scrape_timeout: {interval}s
  evaluation_interval: {interval}s
rule_files:
  - {rules}
scrape_configs:
  - job_name: replog
    file_sd_configs:
      - files: [{targets}]
        refresh_interval: 5s
"""

# Under `dev up --tls` the /metrics ports are HTTPS and want a client certificate.
TLS_TEMPLATE = """\
    scheme: https
    tls_config:
      ca_file: {cafile}
      cert_file: {certfile}
      key_file: {keyfile}
"""


def directory(cluster: Cluster) -> str:
    return os.path.join(cluster.data_dir, "prometheus")


def check_installed() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        raise DevError("Prometheus is not installed, and --monitoring needs it: run `apt-get install prometheus` "
                       "(or `make setup`).")
    return binary


def write_files(cluster: Cluster) -> None:
    """The config, the scrape targets of every member, and the rules with short `for:` durations."""
    folder = directory(cluster)
    os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    targets = [{"targets": [member.metrics_address],
                "labels": {"component": member.kind, "member": f"{member.kind}-{member.id}"}}
               for member in cluster.members()]
    _write(os.path.join(folder, TARGETS_FILE), json.dumps(targets, indent=2) + "\n")
    _write(os.path.join(folder, RULES_FILE), rules.rule_file(dev=True))
    config = CONFIG_TEMPLATE.format(data_dir=cluster.data_dir, interval=SCRAPE_INTERVAL_S, rules=RULES_FILE,
                                    targets=TARGETS_FILE)
    if cluster.tls is not None:
        security = cluster.security
        config += TLS_TEMPLATE.format(cafile=security.cafile, certfile=security.certfile, keyfile=security.keyfile)
    _write(cluster.prometheus_marker, config)


def start(cluster: Cluster, address: str, log_path: str) -> int:
    binary = check_installed()
    write_files(cluster)
    folder = directory(cluster)
    argv = [binary, f"--config.file={cluster.prometheus_marker}", f"--storage.tsdb.path={os.path.join(folder, 'data')}",
            f"--web.listen-address={address}", "--storage.tsdb.retention.time=7d"]
    return spawn(argv, log_path=log_path, cwd=folder)


def is_ready(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/-/ready", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_ready(address: str) -> bool:
    return wait_until(lambda: is_ready(address), READY_WAIT_S_MAX)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
