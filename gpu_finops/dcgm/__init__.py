"""dcgm-exporter's metrics CSV, as the product ships it and checks it: the rows we export (SM_ACTIVE among
them), rendered for the chart and `gpu-finops dcgm-csv`, and read back with the exporter's own rules (Go's
`encoding/csv`, exactly) by `gpu-finops check-metrics-csv`."""
