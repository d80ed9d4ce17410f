"""What simulated workloads export for the ledger's honest measures per class (docs/ledger.md, "What a
workload exports"), driven by the annotations of the Running pods that hold GPUs:

- a pod annotated `gpu-finops.io/training-run: <run>` belongs to that run; the run's
  `training_model_parameters`, `training_tokens_per_step`, `training_step_seconds` come from the pods'
  `gpu-finops.io/model-parameters`, `…/tokens-per-step`, `…/step-seconds` annotations;
  `training_world_size{run, gpu_model}` is the GPU devices its Running pods hold (`gpu_model` from
  `gpu-finops.io/gpu-model`, default `l40s`, the simulator's card); `training_useful_seconds_total{run}`
  grows by the wall time during which every Running pod of the run has the `training-stepping` profile
  (a stalled rank or a restart stops it: the simulator's checkpoints commit every step);
- a pod annotated `gpu-finops.io/serving-model: <model>` exports `serving_tokens_total{model, namespace,
  pod}`, growing at `gpu-finops.io/tokens-per-second` while its profile is `serving-busy`, and not at all
  otherwise (`serving-idle`: warm, no traffic). On a real cluster `namespace` and `pod` come from the scrape.

Counters live as long as the simulator and restart from zero for a new pod, as a real process's would.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from gpu_finops.facts.kube_keys import (
    ANNOTATION_GPU_MODEL,
    ANNOTATION_GPU_PROFILE,
    ANNOTATION_MODEL_PARAMETERS,
    ANNOTATION_SERVING_MODEL,
    ANNOTATION_STEP_SECONDS,
    ANNOTATION_TOKENS_PER_SECOND,
    ANNOTATION_TOKENS_PER_STEP,
    ANNOTATION_TRAINING_RUN,
    GPU_RESOURCE,
)
from local.sim.profiles import SERVING_BUSY, TRAINING_STEPPING

log = logging.getLogger(__name__)

DEFAULT_GPU_MODEL = "l40s"  # the simulator's cards (local.sim.dcgm_sim.SimGpu.model)
RUN_GAUGES = {
    "training_model_parameters": ANNOTATION_MODEL_PARAMETERS,
    "training_tokens_per_step": ANNOTATION_TOKENS_PER_STEP,
    "training_step_seconds": ANNOTATION_STEP_SECONDS,
}


def gpu_devices(pod: Any) -> int:
    """GPU devices (cards or time-sliced replicas) the pod's containers are given."""
    total = 0
    for c in pod.spec.containers:
        for name, qty in ((c.resources.limits if c.resources else None) or {}).items():
            if name == GPU_RESOURCE or name.startswith(GPU_RESOURCE + "."):
                total += int(str(qty))
    return total


def _number(annotations: dict[str, str], key: str, pod: str) -> float | None:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        log.error("pod %s: annotation %s=%r is not a number; its series is not exported", pod, key, text)
        return None


@dataclass
class _Run:
    gauges: dict[str, float] = field(default_factory=dict)
    world: dict[str, int] = field(default_factory=dict)  # gpu_model -> devices
    stepping: bool = True


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _line(metric: str, labels: dict[str, str], value: float) -> str:
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return f"{metric}{{{text}}} {value!r}"


@dataclass
class WorkloadSimulator:
    useful_seconds: dict[str, float] = field(default_factory=dict)  # run -> counter
    tokens: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (ns, pod, model) -> counter
    last: float | None = None

    def update(self, pods: list[Any], now: float) -> str:
        """Advance the counters to `now` from the pods as they are, and render the exposition."""
        dt = 0.0 if self.last is None else max(now - self.last, 0.0)
        self.last = now
        runs: dict[str, _Run] = {}
        tokens: dict[tuple[str, str, str], float] = {}
        for pod in pods:
            if pod.status.phase != "Running" or not pod.spec.node_name or not gpu_devices(pod):
                continue
            ann = pod.metadata.annotations or {}
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            profile = ann.get(ANNOTATION_GPU_PROFILE)
            if run_name := ann.get(ANNOTATION_TRAINING_RUN):
                run = runs.setdefault(run_name, _Run())
                for metric, annotation in RUN_GAUGES.items():
                    value = _number(ann, annotation, key)
                    if value is not None:
                        run.gauges[metric] = value
                model = ann.get(ANNOTATION_GPU_MODEL, DEFAULT_GPU_MODEL)
                run.world[model] = run.world.get(model, 0) + gpu_devices(pod)
                run.stepping = run.stepping and profile == TRAINING_STEPPING
            if model := ann.get(ANNOTATION_SERVING_MODEL):
                ident = (pod.metadata.namespace, pod.metadata.name, model)
                rate = (
                    (_number(ann, ANNOTATION_TOKENS_PER_SECOND, key) or 0.0)
                    if profile == SERVING_BUSY
                    else 0.0
                )
                tokens[ident] = self.tokens.get(ident, 0.0) + rate * dt
        self.tokens = tokens  # a pod that is gone takes its counter with it
        for name, run in runs.items():
            self.useful_seconds[name] = self.useful_seconds.get(name, 0.0) + (dt if run.stepping else 0.0)
        return self.render(runs)

    def render(self, runs: dict[str, _Run]) -> str:
        lines: list[str] = []

        def family(metric: str, kind: str, rows: list[str]) -> None:
            if rows:
                lines.extend(
                    [f"# HELP {metric} simulated workload {metric}", f"# TYPE {metric} {kind}", *rows]
                )

        for metric in RUN_GAUGES:
            family(
                metric,
                "gauge",
                [
                    _line(metric, {"run": n}, r.gauges[metric])
                    for n, r in sorted(runs.items())
                    if metric in r.gauges
                ],
            )
        family(
            "training_world_size",
            "gauge",
            [
                _line("training_world_size", {"run": n, "gpu_model": m}, float(size))
                for n, r in sorted(runs.items())
                for m, size in sorted(r.world.items())
            ],
        )
        family(
            "training_useful_seconds_total",
            "counter",
            [
                _line("training_useful_seconds_total", {"run": n}, self.useful_seconds[n])
                for n in sorted(runs)
            ],
        )
        family(
            "serving_tokens_total",
            "counter",
            [
                _line("serving_tokens_total", {"model": m, "namespace": ns, "pod": p}, v)
                for (ns, p, m), v in sorted(self.tokens.items())
            ],
        )
        return "\n".join(lines) + "\n" if lines else ""
