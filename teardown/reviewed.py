"""The reviewed plan: `teardown plan --out FILE` writes what it found (account, region, cluster and every
resource by id); `teardown destroy --plan FILE` deletes nothing unless the account, region and cluster
are the plan's and everything it would delete is in it. The check runs before the first deletion."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_finops.facts import json_text
from gpu_finops.facts.errors import excerpt
from gpu_finops.facts.private_files import read_regular, write_private
from gpu_finops.facts.timestamps import iso
from teardown.engine import GuardViolation, Survey
from teardown.model import Resource

MAX_PLAN_BYTES = 64 * 1024 * 1024  # a plan lists an account's resources: megabytes at most

FORMAT = "gpu-finops-teardown-plan/1"


class PlanFileError(ValueError):
    """A --plan file that cannot be read as a reviewed plan."""


@dataclass(frozen=True)
class ReviewedPlan:
    path: Path
    account: str
    region: str
    cluster: str
    resources: tuple[Resource, ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(r.key for r in self.resources)


def plan_document(account: str, region: str, cluster: str, found: Survey) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "written_at": iso(datetime.now(UTC)),
        "account": account,
        "region": region,
        "cluster": cluster,
        "resources": [r.to_dict() for r in found.ours],
        # shown for review, never deleted: they are not in `resources`
        "looks_like_ours": [r.to_dict() for r in found.lookalikes],
        "counts_as_gone": [r.to_dict() for r in found.gone],
    }


def write_plan(path: Path, account: str, region: str, cluster: str, found: Survey) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # account and resource ids: 0600 from creation, never through a symlink
    write_private(
        path, json.dumps(plan_document(account, region, cluster, found), indent=2, default=str).encode()
    )


PLAN_KEYS = frozenset(
    {"format", "written_at", "account", "region", "cluster", "resources", "looks_like_ours", "counts_as_gone"}
)


def read_plan(path: Path) -> ReviewedPlan:
    try:
        doc = json_text.loads(
            read_regular(path, MAX_PLAN_BYTES)
        )  # never a FIFO nor unbounded; numbers finite
    except FileNotFoundError:
        raise PlanFileError(
            f"--plan {path}: no such file; write one with `gpu-finops teardown plan --out {path}`"
        ) from None
    except (OSError, json_text.JSONTextError) as exc:
        raise PlanFileError(f"--plan {path}: not a readable JSON plan ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise PlanFileError(
            f"--plan {path}: expected format {FORMAT!r}, found {found!r}; was it written by `teardown plan --out`?"
        )
    unknown = sorted(set(doc) - PLAN_KEYS)
    if unknown:
        raise PlanFileError(f"--plan {path}: {excerpt(unknown, 80)} is not a key `teardown plan --out` writes "
                            f"(it writes {sorted(PLAN_KEYS)}); write it again with `teardown plan --out`")  # fmt: skip
    wrong = [k for k in ("account", "region", "cluster") if k in doc and not isinstance(doc[k], str)]
    if wrong:
        raise PlanFileError(
            f"--plan {path}: {', '.join(wrong)} is not text; write it again with `teardown plan --out`"
        )
    missing = [k for k in ("account", "region", "cluster", "resources") if k not in doc]
    if missing:
        raise PlanFileError(f"--plan {path}: missing {missing}; write it again with `teardown plan --out`")
    try:
        resources = tuple(Resource.from_dict(r) for r in doc["resources"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise PlanFileError(f"--plan {path}: a resource entry lacks type or id ({exc!r})") from None
    return ReviewedPlan(path, str(doc["account"]), str(doc["region"]), str(doc["cluster"]), resources)


def check_reviewed(
    plan: ReviewedPlan, account: str, region: str, cluster: str, about_to_delete: Iterable[Resource]
) -> None:
    """Refuse a plan reviewed for another account, region or cluster, or a deletion it does not hold."""
    for what, reviewed, now in (
        ("account", plan.account, account),
        ("region", plan.region, region),
        ("cluster", plan.cluster, cluster),
    ):
        if reviewed != now:
            raise GuardViolation(
                f"refusing: the reviewed plan {plan.path} is for {what} {reviewed}, but this run is for "
                f"{what} {now}; nothing deleted. Check your credentials and config, or plan again"
            )
    extra = sorted({r.key for r in about_to_delete} - plan.keys)
    if extra:
        raise GuardViolation(
            f"refusing: {len(extra)} resource(s) found now are not in the reviewed plan {plan.path}: "
            f"{extra[:10]}{' ...' if len(extra) > 10 else ''}; nothing deleted. Run `gpu-finops teardown plan "
            f"--out {plan.path}` again, review it, and pass it with --plan"
        )
