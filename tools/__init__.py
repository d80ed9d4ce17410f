"""Maintenance tools run from a checkout, never installed: the pins' freshness report (`make outdated`), the
chart's generated files (`python -m tools.chart_files --write`), the Grafana dashboards as code and the
regeneration of the DCGM field-name list the metrics CSV is checked against."""
