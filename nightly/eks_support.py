"""What the EKS control plane costs on a given day: each Kubernetes version's standard and extended
support windows, dated.

A cluster on a version in standard support pays $0.10 per cluster-hour; past the end of standard support
EKS moves it to extended support at $0.60 per cluster-hour (six times as much) until extended support ends
and EKS upgrades the control plane itself. The cost guard prices the control plane from this table, so a
version that leaves standard support during a run is priced at the extended rate.

Source: the Amazon EKS Kubernetes release calendar (https://docs.aws.amazon.com/eks/latest/userguide/
kubernetes-versions.html, "Amazon EKS Kubernetes release calendar") and the pricing page
(https://aws.amazon.com/eks/pricing/), as known in 2026-11. EKS gives each version 14 months of standard
support from its EKS release, then 12 months of extended support. Rows marked `confirmed=False` are not
read from the calendar but derived from that rule and the version's EKS release month; check them against
the calendar when it is next read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

STANDARD_USD_H = 0.10
EXTENDED_USD_H = 0.60
# Say so this many days before a version leaves standard support (a nightly run should not be the first
# to notice a six-fold price step).
WARN_DAYS = 60


@dataclass(frozen=True)
class SupportWindow:
    version: str
    standard_end: date  # the first day billed at the extended price
    extended_end: date  # EKS upgrades the control plane on this day
    confirmed: bool = True  # read from the EKS calendar, not derived from the 14 + 12 month rule


EKS_SUPPORT: dict[str, SupportWindow] = {
    w.version: w
    for w in (
        SupportWindow("1.32", date(2026, 3, 23), date(2027, 3, 23)),
        SupportWindow("1.33", date(2026, 7, 29), date(2027, 7, 29)),
        SupportWindow("1.34", date(2026, 12, 2), date(2027, 12, 2)),
        # EKS released 1.35 in 2026-01 and 1.36 in 2026-06 (estimates from the 14 + 12 month rule).
        SupportWindow("1.35", date(2027, 3, 27), date(2028, 3, 27), confirmed=False),
        SupportWindow("1.36", date(2027, 8, 28), date(2028, 8, 28), confirmed=False),
    )
}


class UnsupportedVersion(ValueError):
    """The version is not in the table, or is past the end of extended support."""


@dataclass(frozen=True)
class ControlPlanePrice:
    version: str
    usd_per_hour: float
    support: str  # "standard" or "extended"
    note: str | None  # a warning to print, or None

    @property
    def label(self) -> str:
        return f"EKS control plane ({self.version}, {self.support} support)"


def control_plane_price(
    version: str,
    start: datetime,
    hours: float,
    *,
    table: dict[str, SupportWindow] = EKS_SUPPORT,
    warn_days: int = WARN_DAYS,
) -> ControlPlanePrice:
    """The hourly ceiling for a run on `version` from `start` for `hours`.

    A run that reaches the end of standard support at any point is priced at the extended rate for its
    whole length (the guard bounds, it does not forecast). Raises UnsupportedVersion for a version not in
    the table or past its extended support."""
    window = table.get(version)
    if window is None:
        raise UnsupportedVersion(
            f"EKS {version} is not in the support table ({', '.join(sorted(table))}): add its standard "
            "and extended support end dates to nightly/eks_support.py from the EKS release calendar"
        )
    start = start.astimezone(UTC)
    end = start + timedelta(hours=hours)
    standard_end = datetime.combine(window.standard_end, datetime.min.time(), UTC)
    extended_end = datetime.combine(window.extended_end, datetime.min.time(), UTC)
    estimated = "" if window.confirmed else " (date estimated, not read from the EKS calendar)"
    if end > extended_end:
        raise UnsupportedVersion(
            f"EKS {version} leaves extended support on {window.extended_end}{estimated}: EKS upgrades the "
            "control plane itself; move the cluster to a supported version"
        )
    if end > standard_end:
        when = "left" if start >= standard_end else "leaves"
        return ControlPlanePrice(
            version,
            EXTENDED_USD_H,
            "extended",
            f"EKS {version} {when} standard support on {window.standard_end}{estimated}: the control plane "
            f"bills ${EXTENDED_USD_H:.2f}/h (extended support), not ${STANDARD_USD_H:.2f}/h; upgrade the cluster",
        )
    days_left = (window.standard_end - start.date()).days
    note = None
    if days_left <= warn_days:
        note = (
            f"EKS {version} leaves standard support on {window.standard_end}{estimated}, in "
            f"{days_left} day(s): from then the control plane bills ${EXTENDED_USD_H:.2f}/h; plan the upgrade"
        )
    return ControlPlanePrice(version, STANDARD_USD_H, "standard", note)
