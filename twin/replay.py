"""`gpu-finops twin run`: the fleet brought to the running local target, the trace replayed against it as
Kueue-managed Jobs on the wall clock (trace time / compression), everything watched, one progress line
per step with the elapsed time, and the figures read out in trace time (twin/readout.py)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpu_finops.facts.kube_keys import ANNOTATION_GPU_PROFILE, LABEL_WORKLOAD_CLASS
from local.cluster.product import COLLECTOR_INTERVAL
from local.sim.workload_sim import gpu_devices
from twin import prepare
from twin.accounting import Ledger
from twin.fleet import Fleet
from twin.jobs import RUN_LABEL, job_name, job_object
from twin.observe import Observer
from twin.peak import NO_PROMETHEUS, PeakDiagnosis
from twin.prepare import TwinError
from twin.product import product_figures
from twin.submit import Submitter
from twin.trace import Trace

TICK = 0.5  # wall seconds between ledger samples
# wall seconds past the last job's expected end, and then without a job finishing, before the replay gives up:
# a control plane still ending jobs is waited for (at 10,000 GPUs on 2 cores it ends about 5 a second, so
# 1,000 jobs ending together take minutes), one that stopped ending them is not
DRAIN_MARGIN = 120.0
DRAIN_CAP_RATE = 1.0  # jobs a wall second: past the expected end by len(jobs) / this, a run gives up anyway


def gives_up(now: float, due: float, last_finished: float, jobs: int) -> bool:
    """Whether the replay stops waiting at `now` for jobs expected done by `due` (wall clock), the last having
    finished at `last_finished`: past due + DRAIN_MARGIN with none finished in the last DRAIN_MARGIN, or past
    due + DRAIN_MARGIN + jobs / DRAIN_CAP_RATE whatever is finishing."""
    if now > due + DRAIN_MARGIN + jobs / DRAIN_CAP_RATE:
        return True
    return now > due + DRAIN_MARGIN and now - last_finished > DRAIN_MARGIN


@dataclass
class Progress:
    echo: Callable[[str], None]
    started: float = field(default_factory=time.monotonic)

    def __call__(self, step: str) -> None:
        self.echo(f"[{time.monotonic() - self.started:7.1f}s] {step}")


@dataclass
class Replay:
    """What one run observed: the submit time of each Job (wall), the observer and the ledger."""

    trace: Trace
    fleet: Fleet
    policy: str
    run_id: str
    start: float
    submitted: dict[str, float]
    observer: Observer
    ledger: Ledger
    peak: PeakDiagnosis
    end: float
    wall_seconds: float
    submit_lag: dict[str, Any] = field(
        default_factory=dict
    )  # Submitter.lag_summary(): the client vs the clock
    product: dict[str, Any] = field(default_factory=dict)  # twin/product.py: the product's instruments


def _sampler(obs: Observer, ledger: Ledger, gpus: dict[str, int], stop: threading.Event) -> None:
    while not stop.is_set():
        ledger.tick(obs, time.time(), gpus)
        stop.wait(TICK)


def _diagnoser(
    peak: PeakDiagnosis, ledger: Ledger, trace: Trace, start: float, stop: threading.Event
) -> None:
    """Its own thread: a diagnosis takes seconds at fleet size, and the sampler must keep its ticks."""
    while not stop.is_set():
        try:
            peak.maybe(ledger.pending_now, trace.trace_time(time.time() - start) / 3600)
        except Exception as exc:  # the diagnosis failing is reported in the readout, never the run's end
            peak.result = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        stop.wait(1.0)


def replay(
    kube: Any,
    fleet: Fleet,
    trace: Trace,
    policy: str,
    echo: Callable[[str], None] = print,
    prometheus_url: str | None = None,
    store: str | None = None,
) -> Replay:
    """Run the trace on the target `kube` points at (already up); the diagnosis at the peak reads DCGM from
    `prometheus_url` (None: not read, and its readout says so). With `prometheus_url` and the collector's
    `store` both given, the run is also read back through the ledger's rules and the collector's records
    (twin/product.py; a minute or two after the last job, at most PRODUCT_SETTLE each). Raises TwinError when jobs are left unfinished
    past the expected end, naming how many and in which state."""
    if set(trace.tenants) - {t.name for t in fleet.tenants}:
        raise TwinError(
            f"the trace's tenants {sorted(trace.tenants)} are not all in the fleet's {[t.name for t in fleet.tenants]}"
        )
    step = Progress(echo)
    run_id = f"twin-{uuid.uuid4().hex[:8]}"
    prepare.expect_clean_slate(kube, fleet)
    prepare.apply_pools(kube, fleet)
    step(f"policy {policy!r}: {len(prepare.apply_policy(kube, fleet, policy))} Kueue objects applied")
    prepare.create_nodes(kube, fleet, step)
    step(f"fleet ready: {fleet.static_nodes} nodes x {fleet.gpus_per_node} GPUs ({fleet.instance_type})")
    obs = Observer(
        kube,
        tuple(t.name for t in fleet.tenants),
        RUN_LABEL,
        run_id,
        gpu_devices,
        LABEL_WORKLOAD_CLASS,
        ANNOTATION_GPU_PROFILE,
    )
    obs.start()
    ledger = Ledger(shapes={job_name(j): j.gpus for j in trace.jobs}, pools=fleet.karpenter_pools)
    gpus = {n: fleet.gpus_per_node for n in fleet.node_names()}
    stop = threading.Event()
    sampler = threading.Thread(target=_sampler, args=(obs, ledger, gpus, stop), daemon=True)
    peak = PeakDiagnosis(kube, prometheus_url or NO_PROMETHEUS)
    start = time.time()
    sampler.start()
    threading.Thread(target=_diagnoser, args=(peak, ledger, trace, start, stop), daemon=True).start()
    submitter = Submitter(kube, on_created=lambda uid: _created(obs, uid))
    submitted = submitter.submitted
    last_line = 0.0
    try:
        for job in trace.jobs:
            due = start + trace.wall(job.submit_s)
            while (now := time.time()) < due:
                time.sleep(min(due - now, 0.2))
            _expect_no_refusal(submitter, run_id)
            submitter.submit(job.tenant, job_object(trace, job, run_id), due)
            if time.monotonic() - last_line > 10:
                last_line = time.monotonic()
                step(_status(obs, trace, start, len(submitted), submitter))
        submitter.close()
        _expect_no_refusal(submitter, run_id)
        step(f"all {len(submitted)} Jobs submitted; lag behind the trace's clock {submitter.lag_summary()}")
        expected_end = (
            start + max(trace.wall(j.submit_s + j.duration_s) for j in trace.jobs) if trace.jobs else start
        )
        due = expected_end + trace.wall(trace.horizon_s)
        done_before, last_finished = -1, time.time()
        while True:
            with obs.lock:
                done = sum(
                    1 for w in obs.workloads.values() if w.finished is not None and w.job_uid in obs.job_uids
                )
            if done >= len(trace.jobs):
                break
            if done > done_before:
                done_before, last_finished = done, time.time()
            if gives_up(time.time(), due, last_finished, len(trace.jobs)):
                raise TwinError(
                    f"twin run {run_id}: {len(trace.jobs) - done} of {len(trace.jobs)} jobs unfinished "
                    f"past the expected end (the last to finish did {time.time() - last_finished:.0f} wall s ago); "
                    f"{_status(obs, trace, start, len(submitted))}"
                )
            if time.monotonic() - last_line > 10:
                last_line = time.monotonic()
                step(_status(obs, trace, start, len(submitted)))
            time.sleep(0.5)
        end = time.time()
        step(f"all {len(trace.jobs)} jobs finished; {_status(obs, trace, start, len(submitted))}")
    finally:
        submitter.abort()
        stop.set()
        sampler.join(timeout=5)
        obs.stop()
    result = Replay(trace, fleet, policy, run_id, start, submitted, obs, ledger, peak, end, end - start,
                    submitter.lag_summary())  # fmt: skip
    if prometheus_url and store:  # before the nodes go: the last interval's records still name them
        step("reading the run back through the ledger's rules and the collector's records")
        result.product = product_figures(prometheus_url, store, start, end, trace.compression,
                                         set(fleet.node_names()), fleet.karpenter_pools, COLLECTOR_INTERVAL)  # fmt: skip
    prepare.delete_run(kube, fleet, RUN_LABEL, run_id)
    step(f"run {run_id} cleaned up")
    return result


def _created(obs: Observer, uid: str) -> None:
    with obs.lock:
        obs.job_uids.add(uid)


def _expect_no_refusal(submitter: Submitter, run_id: str) -> None:
    if submitter.errors:
        raise TwinError(
            f"twin run {run_id}: the API server refused {len(submitter.errors)} Job(s), the first: "
            f"{submitter.errors[0]}; the run stops, and the Jobs it made are left: delete them with "
            f"`kubectl delete jobs -A -l {RUN_LABEL}={run_id}`"
        )


def _status(
    obs: Observer, trace: Trace, start: float, submitted: int, submitter: Submitter | None = None
) -> str:
    with obs.lock:
        w = [x for x in obs.workloads.values() if x.job_uid in obs.job_uids]
    admitted = sum(1 for x in w if x.reserved is not None)
    finished = sum(1 for x in w if x.finished is not None)
    hours = trace.trace_time(time.time() - start) / 3600
    return (
        f"trace {hours:6.2f} h: submitted {submitted}/{len(trace.jobs)}, workloads {len(w)}, "
        f"admitted {admitted}, running {admitted - finished}, finished {finished}"
        + (f", creates in flight {submitter.pending()}" if submitter is not None else "")
    )
