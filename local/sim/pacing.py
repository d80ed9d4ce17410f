"""How the simulators read the cluster at fleet size without starving the control plane they simulate for.

Each simulator re-reads the whole cluster in a loop. At a handful of nodes a read takes milliseconds and its
period is what matters; at 1,250 nodes one read of every node and pod took seconds on a 2-core target, and a
loop that slept only its period read back to back, a core's worth of listing against the API server that
Kueue, kwok and the scheduler were waiting on (docs/benchmarks.md, the day at 60x).
"""

from __future__ import annotations

# a list served from the API server's watch cache (resourceVersion "0": any version at least as new as the
# cache's), not read through from etcd; a simulator's next read catches up whatever one read missed
CACHED = "0"
# of each cycle, the share a simulator may spend reading: it waits at least as long as its last read took
READ_SHARE = 0.5


def next_wait(period: float, last_read_s: float) -> float:
    """Seconds to wait before the next read: the period, or as long as the last read took, whichever is more
    (so a read never takes more than READ_SHARE of the time)."""
    return max(period, last_read_s * (1 - READ_SHARE) / READ_SHARE)
