"""Read DCGM over the window from Prometheus: one query per field for every GPU, joined into rows.

Each field is `avg by (hostname, Hostname, gpu, UUID, pod labels) (avg_over_time(FIELD[window]))`, so the number of
queries is the number of fields, whatever the fleet size. Rows are joined on the node (either spelling of
the exporter's label: `hostname` since dcgm-exporter 4.8.3, `Hostname` before) + gpu + UUID +
the holder's namespace/pod. Prometheus renames the exporter's `pod`/`namespace` to `exported_pod` /
`exported_namespace` when the scrape target has its own; both are read. The field names, the node label
and the units are the fleet's (gpu_finops/facts/dcgm_inputs.py's `Spelling`, the pinned exporter's by default), as the
collector and the ledger read them.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from gpu_finops.clients.promql import PrometheusClient, PrometheusQueryError, PrometheusUnavailable
from gpu_finops.diagnose.model import GpuStats
from gpu_finops.facts import dcgm
from gpu_finops.facts.dcgm_inputs import PINNED, Spelling

FIELD_ATTR = {
    dcgm.SM_ACTIVE: "sm_active",
    dcgm.SM_OCCUPANCY: "sm_occupancy",
    dcgm.FB_USED: "fb_used_mib",
    dcgm.FB_FREE: "fb_free_mib",
    dcgm.PCIE_TX_BYTES: "pcie_tx_bps",
    dcgm.PCIE_RX_BYTES: "pcie_rx_bps",
    dcgm.NVLINK_TX_BYTES: "nvlink_tx_bps",
    dcgm.NVLINK_RX_BYTES: "nvlink_rx_bps",
    dcgm.POWER_USAGE: "power_w",
}
# a MIG card's GPU instances are reported apart (GPU_I_ID, with the card's UUID): each its own row
HOLDER_LABELS = (
    "gpu",
    "UUID",
    dcgm.MIG_INSTANCE_LABEL,
    "namespace",
    "pod",
    "exported_namespace",
    "exported_pod",
)
GROUP_BY = (*dcgm.HOSTNAME_LABELS, *HOLDER_LABELS)
MIB_FIELDS = (dcgm.FB_USED, dcgm.FB_FREE)


def query_for(field: str, window_s: int, spelling: Spelling = PINNED) -> str:
    by = (*spelling.hostname_labels, *HOLDER_LABELS)
    return f"avg by ({', '.join(by)}) (avg_over_time({field}[{window_s}s]))"


def _holder(labels: dict[str, str]) -> str | None:
    pod = labels.get("exported_pod") or labels.get("pod")
    ns = labels.get("exported_namespace") or labels.get("namespace")
    return f"{ns}/{pod}" if pod and ns else None


def read_gpu_stats(
    prom: PrometheusClient, window_s: int, at: datetime | None = None, spelling: Spelling = PINNED
) -> list[GpuStats]:
    """Every GPU series' window averages, one row per (node, gpu, UUID, holder), a MIG card's GPU instances
    each with their own UUID `<card UUID>/<GPU_I_ID>`, under the fleet's spelling (framebuffer values put back
    in MiB)."""
    rows: dict[tuple[str, str, str, str | None], GpuStats] = {}
    for field, attr in FIELD_ATTR.items():
        series = spelling.spelled(field)
        scale = spelling.fb_per_mib if field in MIB_FIELDS else 1.0
        for sample in prom.query(query_for(series, window_s, spelling), at=at):
            host = spelling.hostname_of(sample.labels)
            if not host:
                continue
            gpu = sample.labels.get("gpu", "")
            uuid = sample.labels.get("UUID") or f"{host}/gpu{gpu}"
            if sample.labels.get(dcgm.MIG_INSTANCE_LABEL):  # a GPU instance of a MIG card: `<card UUID>/<id>`
                uuid = f"{uuid}/{sample.labels[dcgm.MIG_INSTANCE_LABEL]}"
            holder = _holder(sample.labels)
            key = (host, gpu, uuid, holder)
            row = rows.get(key) or GpuStats(host, gpu, uuid, holder)
            rows[key] = replace(row, **{attr: sample.value / scale})
    return sorted(rows.values(), key=lambda r: (r.node, r.gpu, r.uuid, r.holder or ""))


def read_or_reason(
    url: str,
    window_s: int,
    *,
    retry_for: float | None = None,
    at: datetime | None = None,
    spelling: Spelling = PINNED,
) -> tuple[list[GpuStats] | None, str | None]:
    """(rows, None), or (None, why) when Prometheus cannot answer: the caller reports, never guesses."""
    prom = PrometheusClient(url) if retry_for is None else PrometheusClient(url, retry_for=retry_for)
    try:
        return read_gpu_stats(prom, window_s, at, spelling), None
    except PrometheusUnavailable as exc:
        return None, f"Prometheus at {url} unreachable (last error: {exc.__cause__ or exc})"
    except PrometheusQueryError as exc:
        return None, f"Prometheus at {url} rejected the query: {exc}"
