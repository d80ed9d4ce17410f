"""Every timeout the project uses (the collector, the acts, the local target, teardown), named by what it
waits for. Seconds."""

from __future__ import annotations

# Prometheus
PROM_QUERY = 30.0  # one HTTP query
PROM_RETRY = 20.0  # how long a query is retried before Prometheus counts as down
PROM_RETRY_MAX = 3600.0  # the most --prometheus-retry may ask: finite, so a run always ends
PROM_READY = 60.0  # a freshly started Prometheus answering /-/ready
PROM_FIRST_SAMPLES = 60.0  # a scrape target's series visible in Prometheus

# Kubernetes (acts)
NODE_READY = 600.0
POD_RUNNING = 600.0
POD_SUCCEEDED = 900.0
ADMISSION = 120.0
QUEUED_STEADY = 20.0  # how long "the rest stay queued" must keep holding
PREEMPTION = 120.0  # Kueue preempts within seconds of the preemptor's arrival
# a MIG node Ready, its layout applied by the MIG manager and its slices advertised by the device plugin (on the
# local target seconds; act 8 gives up on a node still uncut after this)
MIG_LAYOUT_APPLIED = 120.0
TIMESLICED_RUN = 180.0  # four replica pods, once the first is bound, to run together and finish
INTERRUPTION_CORDON = 300.0
REPLACEMENT_NODE = 900.0
COST_RECORDS = 300.0
PRODUCT_SETTLE = 180.0  # after a twin run: the rules' evaluation and the collector's record at its end
UNSCHEDULABLE = 60.0  # a new pod tried by the scheduler and found no node (PodScheduled False)
DCGM_SERIES = 90.0  # every holder's DCGM series, with its profile's values, readable in Prometheus
EMPTY_NODE_GONE = 300.0  # an empty node consolidated by Karpenter (the NodePools' consolidateAfter is 120s)
HOLDER_GONE = 60.0  # a deleted pod gone and its devices freed (kwok's stop plus the Job's finalizer)

# AWS teardown
AWS_DELETE = 900.0  # one resource from delete call to gone (NAT gateways take minutes)
AWS_THROTTLE = 120.0

# The nightly's cost guard (nightly/guard.py). On a cancel the runner sends SIGINT to the step's process,
# SIGTERM 7.5 s later and kills the process tree 2.5 s after that
# (https://docs.github.com/en/actions/reference/workflow-cancellation-reference): the guard's own
# SIGKILL of its command's group, and the wait for the group to be empty, must fit before the SIGTERM.
GUARD_DEADLINE_GRACE = 30.0  # at the deadline: SIGTERM to SIGKILL of the command's group
GUARD_SIGNAL_GRACE = 6.0  # after a forwarded SIGINT/SIGTERM/SIGHUP: the signal to SIGKILL
GUARD_KILL_WAIT = 1.0  # after SIGKILL: how long the group may take to be gone before the guard says so
# The one deadline of a cancel: from the first forwarded signal to the guard's exit, everything included
# (the group's grace, what left the group by `setsid`, both SIGKILLs and their waits), so the guard is done
# before the runner's SIGTERM at 7.5 s and its SIGKILL at 10 s.
GUARD_CANCEL_WINDOW = 7.0
