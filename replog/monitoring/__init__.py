"""Watching replog: its alert rules, its Grafana dashboards, and the Prometheus HTTP API.

`rules` defines every alert once; the chart's rule file and the local cluster's
Prometheus both render it. `dashboards` builds the Grafana dashboards (with the
grafana-foundation-sdk, a development dependency); `generate` writes both into
helm/replog/, and `preview` draws the dashboards' panels from a live Prometheus.
"""
