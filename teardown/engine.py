"""Plan, destroy, verify and resume over the registry.

- plan: list every registered type (concurrently, paginated), keep what is ours.
- destroy: delete in dependency order, retrying throttling and dependency violations with tenacity,
  re-listing after each deletion until the resource is gone. A guard refuses, before deleting anything,
  a plan that holds anything the operator did not review.
- verify: list every type again (never a cache); empty means done. What looks like ours but is not
  tagged as ours is listed apart and never deleted.
- resume: a new plan from the account itself (no Terraform state, no cluster needed), run like destroy,
  with the journal telling what an earlier run already did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from botocore.exceptions import ClientError
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from gpu_finops.facts import timeouts
from harness.waits import eventually
from teardown.journal import Journal
from teardown.model import Context, Resource
from teardown.provenance import Evidence, Sources, gather, prove, run_record_path
from teardown.registry import REGISTRY, deletion_order
from teardown.types import load

log = logging.getLogger(__name__)

RETRYABLE = {
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "DependencyViolation",
    "ResourceInUse",
    "ResourceInUseException",
    "DeleteConflict",
    "InvalidParameterValue",
    "IncorrectState",
    "ConcurrentModification",
    "ServiceUnavailable",
    "VolumeInUse",
    "BucketNotEmpty",  # an object written while the bucket was being emptied: empty it again
}


class AccountNotAllowed(RuntimeError):
    pass


class GuardViolation(RuntimeError):
    """An attempt to delete something the plan did not show."""


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ClientError) and exc.response["Error"]["Code"] in RETRYABLE


def check_account(ctx: Context) -> str:
    account = ctx.account()
    allowed = ctx.config.allowed_accounts
    if not allowed:
        raise AccountNotAllowed(
            "no account allowlist configured: refusing to touch any account. Set "
            "--allow-account ACCOUNT (or GPU_FINOPS_ALLOWED_ACCOUNTS) to the sandbox's id"
        )
    if account not in allowed:
        raise AccountNotAllowed(
            f"account {account} is not on the allowlist {list(allowed)}: refusing. Check "
            "your AWS credentials point at the sandbox account"
        )
    return account


@dataclass
class Survey:
    """What one listing of the account found: ours (to delete), what is in a state that counts as gone (a
    KMS key pending deletion: ours or not, nothing is left to do), and what looks like ours but is not
    proven ours (never touched)."""

    ours: list[Resource] = field(default_factory=list)
    gone: list[Resource] = field(default_factory=list)
    lookalikes: list[Resource] = field(default_factory=list)

    @property
    def unproven(self) -> list[Resource]:
        """Lookalikes carrying one of our tags that nothing proves ours: left alone by destroy, and what
        keeps verify from calling the account empty (a lost runner's leftovers look exactly like this)."""
        return [r for r in self.lookalikes if r.unproven]

    @property
    def named_only(self) -> list[Resource]:
        """Lookalikes by name (or the VPC CNI's tag) alone, without any tag of ours: reported, not a leak."""
        return [r for r in self.lookalikes if not r.unproven]


def evidence(ctx: Context) -> Evidence:
    """The provenance evidence for this context's target, read from its sources now."""
    sources = ctx.sources or Sources(Path(ctx.config.state_dir), run_record_path(ctx.config.cluster_name))
    return gather(sources, ctx.account(), ctx.config.region, ctx.config.cluster_name)


def counts_as_gone(r: Resource) -> bool:
    return r.state in REGISTRY[r.type].gone_states


def survey(ctx: Context, types: Iterable[str] | None = None, workers: int = 8) -> Survey:
    """Every resource of the given types that is ours or looks like ours, listed concurrently. Never cached."""
    load()
    names = list(types) if types is not None else list(REGISTRY)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda n: REGISTRY[n].list(ctx), names))
    order = {name: i for i, name in enumerate(deletion_order(names))}
    found = sorted((r for batch in results for r in batch), key=lambda r: (order[r.type], r.id))
    # our tag alone is not enough: what shows we made it is read now, never cached
    found = prove(found, evidence(ctx))
    out = Survey()
    for r in found:
        # already on its way out (a KMS key pending deletion): nothing is left to do, whoever's it is; so a
        # key our destroy scheduled still counts as gone once the run record that proved it ours is closed
        (out.gone if counts_as_gone(r) else out.ours if r.ours else out.lookalikes).append(r)
    return out


def inventory(ctx: Context, types: Iterable[str] | None = None, workers: int = 8) -> list[Resource]:
    """Every resource of ours still to delete, in deletion order. Never cached."""
    return survey(ctx, types, workers).ours


@dataclass
class Outcome:
    deleted: list[Resource] = field(default_factory=list)
    failed: list[tuple[Resource, str]] = field(default_factory=list)
    skipped: list[Resource] = field(default_factory=list)  # already gone when reached

    @property
    def ok(self) -> bool:
        return not self.failed


def _listed(ctx: Context, r: Resource) -> Resource | None:
    """The resource as listed now (ours or a lookalike), or None when it is not there."""
    return next((x for x in REGISTRY[r.type].list(ctx) if x.id == r.id), None)


def _still_there(ctx: Context, r: Resource) -> Resource | None:
    """The resource when it is still ours and not in a state that counts as gone."""
    now = _listed(ctx, r)
    return now if now is not None and now.ours and not counts_as_gone(now) else None


def delete_one(
    ctx: Context,
    r: Resource,
    *,
    retry_for: float = timeouts.AWS_THROTTLE,
    wait_for: float | None = None,
    poll: float = 2.0,
) -> None:
    """Delete, retrying throttling and dependency violations, then re-list until it is gone."""
    rtype = REGISTRY[r.type]
    Retrying(
        stop=stop_after_delay(retry_for),
        wait=wait_exponential(multiplier=0.5, max=10),
        retry=retry_if_exception(_retryable),
        reraise=True,
    )(rtype.delete, ctx, r)
    timeout = wait_for if wait_for is not None else (rtype.wait_gone or timeouts.AWS_DELETE)
    eventually(
        lambda: _still_there(ctx, r),
        lambda left: left is None,
        timeout=timeout,
        interval=poll,
        what=f"{r.key} gone after its delete call",
    )


def destroy(
    ctx: Context,
    plan: list[Resource],
    journal: Journal,
    *,
    progress: Callable[[Resource, str], None] | None = None,
    retry_for: float = timeouts.AWS_THROTTLE,
    wait_for: float | None = None,
    poll: float = 2.0,
    phase: str = "destroy",
    reviewed: Collection[str] | None = None,
) -> Outcome:
    """Delete the plan in dependency order. The guard: when `reviewed` (the keys of a plan the operator
    reviewed) is given, a plan holding anything else is refused before anything is deleted; and nothing
    is deleted that is not, when reached, still listed as ours."""
    load()
    allowed = set(reviewed) if reviewed is not None else {r.key for r in plan}
    guard_plan(allowed, plan)
    journal.write(f"{phase}-start", planned=len(plan))
    outcome = Outcome()
    failed_types: set[str] = set()
    order = deletion_order({r.type for r in plan})
    for type_name in order:
        blockers = set(REGISTRY[type_name].depends_on) & failed_types
        for r in [r for r in plan if r.type == type_name]:
            if r.key not in allowed:
                raise GuardViolation(f"refusing to delete {r.key}: not in the plan that was shown")
            if blockers:
                msg = f"not attempted: {sorted(blockers)} it depends on failed to delete"
                outcome.failed.append((r, msg))
                journal.write("failed", key=r.key, error=msg)
                failed_types.add(type_name)
                continue
            now = _listed(ctx, r)
            if now is not None and not now.ours:  # re-tagged since the plan: no longer ours, left alone
                outcome.skipped.append(r)
                journal.write(
                    "skipped", key=r.key, note=f"looks like ours, not tagged as ours: {now.lookalike}"
                )
                continue
            current = now if now is not None and not counts_as_gone(now) else None
            if current is None:
                outcome.skipped.append(r)
                journal.write("deleted", key=r.key, note="already gone (or no longer tagged as ours)")
                continue
            journal.write("deleting", key=r.key)
            if progress:
                progress(r, "deleting")
            try:
                delete_one(ctx, current, retry_for=retry_for, wait_for=wait_for, poll=poll)
            except Exception as exc:  # keep going with what does not depend on it; report at the end
                msg = f"{type(exc).__name__}: {exc}"
                outcome.failed.append((r, msg))
                failed_types.add(type_name)
                journal.write("failed", key=r.key, error=msg)
                log.error("could not delete %s: %s", r.key, msg)
                continue
            outcome.deleted.append(r)
            journal.write("deleted", key=r.key)
            if progress:
                progress(r, "deleted")
    journal.write(f"{phase}-end", deleted=len(outcome.deleted), failed=len(outcome.failed))
    return outcome


def guard_plan(reviewed: Collection[str], about_to_delete: Iterable[Resource]) -> None:
    """Refuse, before anything is deleted, a destroy that would delete something the reviewed plan did
    not hold."""
    extra = sorted({r.key for r in about_to_delete} - set(reviewed))
    if extra:
        raise GuardViolation(
            f"refusing: {len(extra)} resource(s) found now are not in the reviewed plan: {extra[:10]}"
            f"{' ...' if len(extra) > 10 else ''}; nothing deleted. Run `gpu-finops teardown plan --out FILE`"
            " again, review it, and pass it with --plan FILE"
        )


def why_left(r: Resource) -> str:
    hint = REGISTRY[r.type].why_left if r.type in REGISTRY else ""
    if r.type == "network_interface" and str(r.details.get("description", "")).startswith("aws-K8S-"):
        hint = "a VPC-CNI ENI left 'available' after its node died; delete it, then its subnet and group"
    if r.type == "nat_gateway" and r.state == "deleting":
        hint = "still deleting (takes minutes): run verify again shortly"
    return hint or "—"
