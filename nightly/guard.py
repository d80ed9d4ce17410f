"""The nightly run's cost guard: what one run can cost at most, printed before `make up`, and a deadline after which
`up` and the acts are stopped so that teardown (which the workflow runs on every path) gets its reserved time.

The estimate is a ceiling, not a forecast: every GPU node the spot vCPU quota allows, at the on-demand price (EC2
never charges more than on-demand for spot), for the whole wall time, plus the system nodes, the EKS control plane,
the NAT gateway and its address, and the FIS actions of act 5. Prices for instances come from the rates module
(Pricing API); the fixed service prices below are the published us-east-1 list prices and are named with their
source so they can be checked.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpu_finops.cost.rates import RateUnavailable
from gpu_finops.facts import timeouts
from gpu_finops.facts.config import Config
from gpu_finops.facts.errors import EXIT_FALSE, UsageError
from gpu_finops.facts.private_files import read_regular, write_private
from harness import process_group
from nightly.eks_support import UnsupportedVersion, control_plane_price

# Published list prices (us-east-1, checked 2026-11): https://aws.amazon.com/vpc/pricing/ (NAT gateway
# hour, public IPv4 address hour), https://aws.amazon.com/fis/pricing/. The EKS control plane's price
# depends on the version's support window on the day: nightly/eks_support.py.
NAT_GATEWAY_USD_H = 0.045
PUBLIC_IPV4_USD_H = 0.005
FIS_ACTION_MINUTE_USD = 0.10
FIS_ACTION_MINUTES_PER_RUN = (
    5  # act 5 runs one send-spot-instance-interruptions action, bounded by its timeout
)
NAT_GATEWAYS = 1  # infra/network.py: one NAT gateway with one Elastic IP

# The system node type's on-demand price for `--rates catalog` (GPU types come from gpu_finops/facts/catalog.py).
SYSTEM_ON_DEMAND_USD_H = {"m7i.large": 0.1008}

DEFAULT_MAX_HOURS = 3.0
# The longest run the guard accepts (a deadline of 1e300 hours is a deadline switched off).
# A GitHub-hosted job stops at 6 h; three days covers a self-hosted runner's longest sensible night.
MAX_RUN_HOURS = 72.0
DEFAULT_TEARDOWN_RESERVE_MINUTES = 45  # destroy + resume + verify get at least this much of the wall time
EXIT_OVER_BUDGET = EXIT_FALSE  # the check "within budget" is false (gpu_finops/facts/errors.py)
EXIT_DEADLINE = 124  # what timeout(1) returns, so CI logs read the same


class GuardError(UsageError, RuntimeError):
    """The guard cannot decide (no price, no deadline file, a bad wall time): exit 2, nothing started."""


@dataclass(frozen=True)
class LineItem:
    what: str
    quantity: float  # units of `unit` per run
    unit: str
    usd_per_unit: float

    @property
    def usd(self) -> float:
        return self.quantity * self.usd_per_unit


@dataclass(frozen=True)
class Estimate:
    items: tuple[LineItem, ...]
    max_hours: float
    budget_usd: float | None
    notes: tuple[str, ...] = ()  # warnings to print with the ceiling (a version leaving standard support)

    @property
    def usd(self) -> float:
        return sum(i.usd for i in self.items)

    @property
    def usd_per_hour(self) -> float:
        return sum(i.usd for i in self.items if i.unit.endswith("-hours")) / self.max_hours

    @property
    def within_budget(self) -> bool:
        return self.budget_usd is None or self.usd <= self.budget_usd

    def to_dict(self) -> dict:
        return {
            "max_hours": self.max_hours,
            "budget_usd": self.budget_usd,
            "ceiling_usd": round(self.usd, 2),
            "notes": list(self.notes),
            "items": [
                {
                    "what": i.what,
                    "quantity": i.quantity,
                    "unit": i.unit,
                    "usd_per_unit": i.usd_per_unit,
                    "usd": round(i.usd, 4),
                }
                for i in self.items
            ],
        }


def estimate(
    c: Config,
    on_demand_usd_h: Callable[[str], float],
    *,
    max_hours: float,
    budget_usd: float | None = None,
    start: datetime | None = None,
) -> Estimate:
    """The most one run starting at `start` (default: now) can cost over `max_hours` of wall time.
    Raises GuardError when a price is missing or the EKS version is past its support."""
    if max_hours <= 0:
        raise GuardError(f"max wall time must be positive hours, got {max_hours}")
    configured_mig, configured_mps, configured_dra = (
        bool(c.mig_slices),
        bool(c.mps_clients),
        bool(c.dra_cards),
    )
    c = (
        c.for_aws()
    )  # what `make up` stands up: the MIG, MPS and DRA pools only with mig_on_aws, mps_on_aws, dra_on_aws
    try:
        control_plane = control_plane_price(c.versions.kubernetes, start or datetime.now(UTC), max_hours)
    except UnsupportedVersion as exc:
        raise GuardError(str(exc)) from exc

    def price(instance_type: str) -> float:
        try:
            usd = on_demand_usd_h(instance_type)
        except Exception as exc:
            # the price reader's own error already names the instance type and region: said once
            named = isinstance(exc, RateUnavailable)
            cause = str(exc) if named else f"no on-demand price for {instance_type} in {c.region}: {exc}"
            raise GuardError(
                f"{cause}; the cost guard will not start a run it cannot bound (check pricing:GetProducts "
                "access, or use --rates catalog)"
            ) from exc
        if not usd > 0:
            raise GuardError(f"on-demand price for {instance_type} is {usd!r}; expected a positive $/h")
        return usd

    gpu_type = max(c.gpu_instance_types, key=price)
    notes = [n for n in (control_plane.note,) if n]
    mig: tuple[LineItem, ...] = ()
    if c.mig_slices:
        _, gpus = c.mig_node_shape
        mig_nodes = -(-c.mig_cards // gpus)
        mig = (
            LineItem(
                f"MIG nodes: {mig_nodes} x {c.mig_instance_type} (the MIG NodePool's limits, on-demand as the "
                "spot ceiling)",
                mig_nodes * max_hours,
                "node-hours",
                price(c.mig_instance_type),
            ),
        )
        notes.append(
            f"the MIG pool is on (mig_on_aws: true): {c.mig_instance_type} costs ${price(c.mig_instance_type):.2f}/h "
            f"on demand, {price(c.mig_instance_type) / price(gpu_type):.1f} times a {gpu_type}; its spot capacity "
            "is its own P-family service quota"
        )
    elif configured_mig:
        notes.append(
            "the MIG pool is off on AWS (mig_on_aws: false): no MIG node, quota or act 8 in this run"
        )
    if c.mps_clients:
        notes.append(
            f"the MPS pool is on (mps_on_aws: true): {c.mps_cards} {gpu_type} card(s) of MPS clients, counted "
            "in the GPU nodes above"
        )
    elif configured_mps:
        notes.append(
            "the MPS pool is off on AWS (mps_on_aws: false): no MPS node, quota or act 9 in this run"
        )
    if c.dra_cards:
        notes.append(
            f"the DRA pool is on (dra_on_aws: true, alpha): {c.dra_cards} {gpu_type} card(s) NVIDIA's DRA driver "
            "publishes, counted in the GPU nodes above"
        )
    elif configured_dra:
        notes.append("the DRA pool is off on AWS (dra_on_aws: false): no DRA node or quota in this run")
    items = (
        LineItem(
            f"GPU nodes: {c.gpu_nodes_at_limits} x {gpu_type} (the NodePools' limits, priced on-demand as the "
            "spot ceiling)",
            c.gpu_nodes_at_limits * max_hours,
            "node-hours",
            price(gpu_type),
        ),
        *mig,
        LineItem(
            f"system nodes: {c.system_node_count} x {c.system_instance_type}",
            c.system_node_count * max_hours,
            "node-hours",
            price(c.system_instance_type),
        ),
        LineItem(control_plane.label, max_hours, "cluster-hours", control_plane.usd_per_hour),
        LineItem("NAT gateway", NAT_GATEWAYS * max_hours, "gateway-hours", NAT_GATEWAY_USD_H),
        LineItem("public IPv4 (NAT EIP)", NAT_GATEWAYS * max_hours, "address-hours", PUBLIC_IPV4_USD_H),
        LineItem(
            "FIS spot interruption (act 5)",
            FIS_ACTION_MINUTES_PER_RUN,
            "action-minutes",
            FIS_ACTION_MINUTE_USD,
        ),
    )
    return Estimate(items, max_hours, budget_usd, tuple(notes))


NOT_COUNTED = (
    "not counted: NAT data processing and transfer (per GB), CloudWatch log ingestion, DynamoDB requests, "
    "KMS requests; small next to the node-hours for one run"
)


def render(e: Estimate) -> str:
    lines = [f"cost guard: ceiling for one run of at most {e.max_hours:g} h wall time"]
    for i in e.items:
        lines.append(
            f"  {i.what:<86} {i.quantity:>7.2f} {i.unit:<15} x ${i.usd_per_unit:<7.4f} = ${i.usd:>8.2f}"
        )
    lines.append(f"  {'total ceiling':<86} {'':>31} = ${e.usd:>8.2f}  (${e.usd_per_hour:.2f}/h)")
    lines.append(f"  {NOT_COUNTED}")
    lines.extend(f"  warning: {note}" for note in e.notes)
    if e.budget_usd is not None:
        verdict = "within" if e.within_budget else "OVER"
        lines.append(f"  budget ${e.budget_usd:.2f}: {verdict} budget")
    return "\n".join(lines)


# --- the deadline ---------------------------------------------------------------------------------------
_DEADLINE_FIELDS = {  # field -> (what it must be, the lower bound, whether the bound itself is allowed, upper)
    "at": ("epoch seconds", 0.0, False, None),
    "started": ("epoch seconds", 0.0, False, None),
    "max_hours": ("hours", 0.0, False, MAX_RUN_HOURS),
    "teardown_reserve_minutes": ("minutes", 0.0, True, MAX_RUN_HOURS * 60),
}


def _excerpt(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


@dataclass(frozen=True)
class Deadline:
    """Epoch seconds after which nothing but teardown may run."""

    at: float
    started: float
    max_hours: float
    teardown_reserve_minutes: float

    def __post_init__(self) -> None:
        # NaN compares false with everything: a NaN deadline would never pass, so it is refused here,
        # with inf, negatives and anything that is not a number.
        for field, (unit, low, inclusive, high) in _DEADLINE_FIELDS.items():
            value = getattr(self, field)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if (
                not number
                or not math.isfinite(value)
                or value < low
                or (value == low and not inclusive)
                or (high is not None and value > high)
            ):
                bound = (f">= {low:g}" if inclusive else f"> {low:g}") + (f" and <= {high:g}" if high else "")
                raise GuardError(f"{field} is {_excerpt(value)}; expected finite {unit} {bound}")
        # `at` is what the guard obeys: it must lie within the run the other fields describe.
        if not self.started <= self.at <= self.started + self.max_hours * 3600:
            raise GuardError(
                f"at is {_excerpt(self.at)}, outside the run it describes (started {self.started:.0f} + "
                f"{self.max_hours:g} h); expected started <= at <= started + max_hours"
            )

    @classmethod
    def start(cls, max_hours: float, teardown_reserve_minutes: float, now: float | None = None) -> Deadline:
        now = time.time() if now is None else now
        if teardown_reserve_minutes * 60 >= max_hours * 3600:
            raise GuardError(
                f"a teardown reserve of {teardown_reserve_minutes:g} min leaves nothing of a "
                f"{max_hours:g} h run for up and the acts; raise --max-hours or lower the reserve"
            )
        return cls(
            now + max_hours * 3600 - teardown_reserve_minutes * 60, now, max_hours, teardown_reserve_minutes
        )

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, json.dumps(self.__dict__).encode())  # never a FIFO or a symlink

    @classmethod
    def read(cls, path: Path) -> Deadline:
        """The deadline `guard estimate` wrote; GuardError (exit 2, one line naming the file) otherwise."""
        again = f"write it again with `gpu-finops guard estimate --deadline-file {path}`"
        try:
            text = read_regular(path, 64 * 1024).decode()  # a FIFO would block the nightly
        except FileNotFoundError:
            raise GuardError(
                f"no deadline file at {path}: run `gpu-finops guard estimate --deadline-file {path}` first"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise GuardError(f"deadline file {path} cannot be read ({exc}); {again}") from None
        if not text.strip():
            raise GuardError(f"deadline file {path} is empty; {again}")
        try:
            # an integer of 19+ digits reads as a float: 400 digits are inf, refused as not finite
            data = json.loads(text, parse_int=lambda t: int(t) if len(t) <= 18 else float(t))
        except RecursionError:  # nested deeper than Python's stack: no deadline is
            raise GuardError(
                f"deadline file {path} is not JSON (nested too deep): {_excerpt(text)}; {again}"
            ) from None
        except ValueError as exc:
            raise GuardError(f"deadline file {path} is not JSON ({exc}): {_excerpt(text)}; {again}") from None
        if not isinstance(data, dict) or set(data) != set(_DEADLINE_FIELDS):
            keys = sorted(data) if isinstance(data, dict) else _excerpt(data)
            raise GuardError(
                f"deadline file {path} holds {keys}, expected an object with {sorted(_DEADLINE_FIELDS)}; "
                f"{again}"
            )
        try:
            deadline = cls(**data)
        except GuardError as exc:
            raise GuardError(f"deadline file {path}: {exc}; {again}") from None
        if (
            deadline.started > time.time() + _CLOCK_SKEW_SECONDS
        ):  # a run that starts later has no deadline yet
            raise GuardError(
                f"deadline file {path}: the run starts in the future ({deadline.started:.0f}); {again}"
            )
        return deadline


_CLOCK_SKEW_SECONDS = 300.0  # a deadline file written on a machine whose clock runs a little ahead
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_POLL_SECONDS = 0.2  # how often the guard looks at the clock while its command runs


def run_until(
    deadline: Deadline,
    argv: Sequence[str],
    *,
    clock: Callable[[], float] = time.time,
    grace_seconds: float = timeouts.GUARD_DEADLINE_GRACE,
    signal_grace_seconds: float = timeouts.GUARD_SIGNAL_GRACE,
    echo: Callable[[str], object] = print,
) -> int:
    """Run argv in its own process group; at the deadline SIGTERM the group, SIGKILL after the grace.

    SIGINT, SIGTERM and SIGHUP sent to the guard go to the whole group (the command is in a session of
    its own) and to what left it (`setsid`); all of it is gone within `timeouts.GUARD_CANCEL_WINDOW` of the
    first signal (SIGKILL after `signal_grace_seconds` at most), and the child dies with the guard however
    the guard ends (PR_SET_PDEATHSIG). Returns the command's exit code;
    EXIT_DEADLINE when the guard stopped it at the deadline; 128 + the signal's number when a signal
    stopped it (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), as a shell reports it."""
    left = deadline.at - clock()
    if left <= 0:
        echo(
            f"cost guard: the deadline passed {-left:.0f}s ago; not starting {' '.join(argv)} "
            "(teardown runs next)"
        )
        return EXIT_DEADLINE
    received: list[int] = []
    started: list[subprocess.Popen] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        if started:
            process_group.signal_group(started[0].pid, signum)

    # Installed before the child exists, so a signal while it starts is not lost (it is sent below).
    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    process_group.become_subreaper()  # a `setsid` grandchild is re-parented here, not to init
    try:
        proc = subprocess.Popen(
            list(argv), start_new_session=True, preexec_fn=process_group.die_with_parent()
        )
        started.append(proc)
        since = process_group.start_time(proc.pid) or 0
        if received:
            process_group.signal_group(proc.pid, received[0])
        cancel_by: list[float] = []  # the monotonic time by which a cancelled guard has stopped it all
        try:
            return _supervise(
                proc, deadline, argv, received, clock, grace_seconds, signal_grace_seconds, echo,
                since, cancel_by,
            )  # fmt: skip
        finally:  # what the command left running, ended by itself or not; cancelled: by then
            found, stuck = process_group.stop_leftovers(
                proc.pid, since, signal_grace_seconds, kill_wait=timeouts.GUARD_KILL_WAIT, by=cancel_by
            )
            if found:
                echo(f"cost guard: {' '.join(argv)} ended and left {found} running; stopped them"
                     + (f" but for {stuck}, still there after SIGKILL" if stuck else ""))  # fmt: skip
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _supervise(
    proc: subprocess.Popen,
    deadline: Deadline,
    argv: Sequence[str],
    received: list[int],
    clock: Callable[[], float],
    grace_seconds: float,
    signal_grace_seconds: float,
    echo: Callable[[str], object],
    since: int,
    cancel_by: list[float],
) -> int:
    command = " ".join(argv)
    at_deadline = False
    kill_at: float | None = None  # monotonic time at which the group gets SIGKILL
    told_signal = False
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):  # still running: look at the clock
            proc.wait(timeout=_POLL_SECONDS)
        if received and not told_signal:
            told_signal = True
            cancel_by.append((now := time.monotonic()) + timeouts.GUARD_CANCEL_WINDOW)
            process_group.signal_pids(process_group.outside(proc.pid, since), received[0])  # `setsid`'s
            limit = min(now + signal_grace_seconds, cancel_by[0] - 2 * timeouts.GUARD_KILL_WAIT)  # 2 SIGKILLs
            echo(f"cost guard: got {signal.Signals(received[0]).name}; passed it to {command} (its whole "
                 f"process group and what left it), SIGKILL in {limit - now:.1f}s if any of it is left")  # fmt: skip
            kill_at = limit if kill_at is None else min(kill_at, limit)
        elif not received and not at_deadline and clock() >= deadline.at:
            at_deadline = True
            echo(
                f"cost guard: {command} still running at the deadline "
                f"({deadline.max_hours:g} h run, {deadline.teardown_reserve_minutes:g} min kept for teardown); "
                "stopping it so teardown can run"
            )
            process_group.signal_group(proc.pid, signal.SIGTERM)
            kill_at = time.monotonic() + grace_seconds
        if proc.returncode is not None and kill_at is None:
            return proc.returncode  # it ended by itself
        if kill_at is not None and (proc.returncode is not None or time.monotonic() >= kill_at):
            break
    # Stopped: the direct child may be gone while a grandchild (terraform under make) still runs.
    if not process_group.wait_empty(proc.pid, max(0.0, kill_at - time.monotonic())):
        process_group.signal_group(proc.pid, signal.SIGKILL)
        if not process_group.wait_empty(proc.pid, timeouts.GUARD_KILL_WAIT):
            echo(
                f"cost guard: processes {process_group.members(proc.pid)} of {command} are still there "
                "after SIGKILL; teardown runs beside them"
            )
    proc.wait()
    return 128 + received[0] if received else EXIT_DEADLINE
