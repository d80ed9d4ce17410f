"""Provenance: our tag alone never makes a resource ours, since whoever may tag a resource could set it.
A resource tagged as ours is deleted only when something we hold, and no tagger can write, shows that we
made it (docs/teardown.md, "Ownership that a tag alone cannot forge"):

- **our Terraform state**: its id or ARN is that of a *managed* resource of the matching Terraform type in
  a cluster stack's state, its file under the state directory or its object in the state bucket
  (teardown/remote.py); never the nightly role's bootstrap state, never a name, never a data source (a `Name` tag or a foreign role named like our queue is the tagger's choice);
  for IAM, AWS's unique id must match too, so a role made again under our role's name by someone else is
  not ours;
- **our journal**: an earlier teardown of ours planned it *in this account and region*, and it is the same
  resource: AWS's unique id, else its creation time, as then (a name-identified type planned with neither
  is not proven by the journal); the provenance string recorded is only shown;
- **this run**: AWS says it was created at or after the start in our run record (`teardown begin`,
  written by `make up` before anything is created): Karpenter's nodes, launch templates and profiles;
- **inside something of ours**: every resource holding it (its VPC, its subnet) is proven ours.

A resource with our tag and none of these is reported as looking like ours, with the reason, and left.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_finops.facts import json_text
from gpu_finops.facts.errors import Unreachable, excerpt, shown
from gpu_finops.facts.names import CLUSTER_STACKS, RUN_RECORD_OBJECT, state_file
from gpu_finops.facts.private_files import read_regular
from gpu_finops.facts.timestamps import iso, parse
from teardown.journal import MAX_PART_BYTES, Journal, Planned
from teardown.model import Resource
from teardown.remote import RecordExists, Remote

RUN_FORMAT = "gpu-finops-teardown-run/1"
MAX_STATE_BYTES = 256 * 1024 * 1024  # a Terraform state of three stacks is well under this
MAX_RECORD_BYTES = 64 * 1024  # a run record is a few lines


class EvidenceError(ValueError):
    """A run record or a state file that cannot be read (teardown refuses: exit 2)."""


@dataclass(frozen=True)
class Sources:
    """Where the evidence lies: read again at every survey (never cached). With `remote` (state_backend s3),
    the state bucket too: its run record wins over the local file, and its state objects and journal parts
    are read beside the local ones, so a runner with an empty disk proves what an earlier one created."""

    state_dir: Path
    run_record: Path
    journal: Path = Path("reports/teardown-journal.jsonl")
    remote: Remote | None = None

    def where(self) -> str:
        """Where the state is read, for messages."""
        return f"{self.state_dir}" + (f" and {self.remote.uri()}" if self.remote is not None else "")


def run_record_path(cluster: str) -> Path:
    """The run record's default place: one per cluster, so two clusters' runs never share one."""
    return Path(f"reports/teardown-run-{cluster}.json")


# Each teardown type and the Terraform types (hashicorp/aws) whose managed resources' `id` or `arn` is its
# id. A type not here (the spot SLR: its own record) is never proven by state. The test
# tests/teardown/test_provenance.py holds every registered type to this table or to its reason.
TERRAFORM_TYPES: Mapping[str, tuple[str, ...]] = {
    "ec2_instance": ("aws_instance",),
    "launch_template": ("aws_launch_template",),
    "network_interface": ("aws_network_interface",),
    "nat_gateway": ("aws_nat_gateway",),
    "eip": ("aws_eip",),
    "internet_gateway": ("aws_internet_gateway",),
    "route_table": ("aws_route_table",),
    "subnet": ("aws_subnet",),
    "security_group": ("aws_security_group",),
    "vpc": ("aws_vpc",),
    "eks_cluster": ("aws_eks_cluster",),
    "eks_nodegroup": ("aws_eks_node_group",),  # id <cluster>:<node group>, as ours
    "iam_instance_profile": ("aws_iam_instance_profile",),
    "iam_role": ("aws_iam_role",),
    "iam_policy": ("aws_iam_policy",),  # id is the ARN
    "sqs_queue": ("aws_sqs_queue",),  # id is the URL
    "eventbridge_rule": ("aws_cloudwatch_event_rule",),  # id is the name on the default bus
    "fis_template": ("aws_fis_experiment_template",),
    "log_group": ("aws_cloudwatch_log_group",),
    "dynamodb_table": ("aws_dynamodb_table",),
    "ebs_volume": ("aws_ebs_volume",),
    "ecr_repository": ("aws_ecr_repository",),
    "s3_bucket": ("aws_s3_bucket",),
    "kms_key": ("aws_kms_key",),
}
NOT_IN_STATE = {
    "spot_slr": "AWS creates and names it; our SSM record nominates it, its CreateDate or RoleId proves it"
}
# Name-identified types whose AWS unique id the state keeps: a same-named resource made again by someone
# else (after ours went) has another one. The lister puts AWS's in the resource's details["unique_id"].
UNIQUE_ID = {
    "aws_iam_role": "unique_id",
    "aws_iam_instance_profile": "unique_id",
    "aws_iam_policy": "policy_id",
}


# Types whose id is a name whoever creates it chooses (or a URL made of one): the same id can be someone
# else's resource in a later life. A journal entry proves one only when AWS's unique id, or else its
# creation time, is the same as when we planned it; one planned with neither proves nothing (SQS queues and
# EventBridge rules: AWS gives no creation time in their listing; our Terraform state still proves them).
NAME_IDENTIFIED = frozenset({
    "eks_cluster", "eks_nodegroup", "dynamodb_table", "log_group", "eventbridge_rule", "ecr_repository",
    "sqs_queue", "s3_bucket", "iam_role", "iam_instance_profile", "iam_policy", "spot_slr",
})  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    sources: Sources
    # teardown type -> {id or ARN in our state: AWS's unique id there, or "" where the type keeps none}
    terraform: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    started_at: datetime | None = None  # the run record's start
    teardown_at: datetime | None = None  # when the run's teardown began: nothing created since is the run's
    # key -> how an earlier plan of ours for this account, region and cluster held it
    journal: Mapping[str, Planned] = field(default_factory=dict)


class UnfinishedTeardown(Exception):
    """`teardown begin` while an earlier run's teardown began and did not verify empty (exit 1)."""


CREATE_ATTEMPTS = 5  # a contended create is read again, with backoff, this many times


class RecordContended(Unreachable):
    """S3 kept refusing to create the run record and none could be read (exit 3)."""


def write_run_record(
    path: Path,
    account: str,
    region: str,
    cluster: str,
    now: datetime,
    remote: Remote | None = None,
    _attempt: int = 1,
) -> tuple[str, bool]:
    """Record that a run for this target begins now (whole seconds, rounded down), unless a record for
    the same target exists: the earliest start is kept (a `make up` run again after one that failed). A
    record whose run's teardown began is refused (UnfinishedTeardown): keeping its start would make
    whatever was tagged as ours between that teardown and now provably ours. With `remote`, the bucket's
    record is the only one read (the local file is its copy, replaced), and a new one is created there only
    if none appeared meanwhile (another runner's wins). The start and whether it was written."""
    found = _read_record(path, remote)
    if found is not None:
        where, doc = found
        for what, want in (("account", account), ("region", region), ("cluster", cluster)):
            if doc[what] != want:
                raise EvidenceError(
                    f"run record {where} is for {what} {doc[what]}, not {want}: move it away to begin a run "
                    "for this target"
                )
        if doc.get("teardown_started_at"):
            raise UnfinishedTeardown(
                f"run record {where}: the run that began {doc['started_at']} began its teardown "
                f"{doc['teardown_started_at']} and it has not verified empty; run `make resume` (gpu-finops "
                "teardown resume) and resolve what verify lists; a resume that verifies empty ends that run"
            )
        if remote is not None:
            _write_local(path, doc)  # the bucket's, over whatever an earlier run left here
        return doc["started_at"], False
    started = iso(now.astimezone(UTC).replace(microsecond=0))
    doc = {
        "format": RUN_FORMAT,
        "account": account,
        "region": region,
        "cluster": cluster,
        "started_at": started,
    }
    if remote is not None:
        try:
            _put_remote(remote, doc, create=True)
        except RecordExists:  # another runner began meanwhile: its record holds, read it (a few times)
            if _attempt >= CREATE_ATTEMPTS:
                raise RecordContended(
                    f"run record {remote.uri(RUN_RECORD_OBJECT)}: S3 refused to create it {_attempt} times "
                    "(another write kept it busy) and no record could be read; run `teardown begin` again"
                ) from None
            time.sleep(0.2 * 2**_attempt)
            return write_run_record(path, account, region, cluster, now, remote, _attempt=_attempt + 1)
        _write_local(path, doc)  # a copy: a local file an earlier run left is never evidence
        return started, True
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
    return started, True


def mark_teardown(path: Path, now: datetime, remote: Remote | None = None) -> str | None:
    """Write into the run record that this run's teardown begins now (kept if one began already): from
    then on, a resource created later is not this run's, whatever tag it carries. None without a record.
    With `remote`, the bucket's record is marked, then copied here."""
    found = _read_record(path, remote)
    if found is None:
        return None
    _, doc = found
    if doc.get("teardown_started_at"):
        if remote is not None:
            _write_local(path, doc)
        return doc["teardown_started_at"]
    doc["teardown_started_at"] = iso(now.astimezone(UTC).replace(microsecond=0))
    if remote is not None:
        _put_remote(remote, doc, create=False)
    _write_local(path, doc)
    return doc["teardown_started_at"]


def end_run(path: Path, remote: Remote | None = None) -> list[str]:
    """Remove the run record, in the bucket and here: where each was removed from."""
    gone = []
    if remote is not None and remote.get(RUN_RECORD_OBJECT, MAX_RECORD_BYTES) is not None:
        remote.delete(RUN_RECORD_OBJECT)
        gone.append(remote.uri(RUN_RECORD_OBJECT))
    try:
        path.unlink()
        gone.append(str(path))
    except FileNotFoundError:
        pass
    return gone


def _put_remote(remote: Remote, doc: dict[str, Any], *, create: bool) -> None:
    remote.put(RUN_RECORD_OBJECT, json.dumps(doc, indent=2).encode(), create=create)


def _write_local(path: Path, doc: dict[str, Any]) -> None:
    """The record's local copy, replaced whole (never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def _read_record(path: Path, remote: Remote | None) -> tuple[str, dict[str, Any]] | None:
    """(where it was read, the record), or None. With `remote` the bucket's alone: a local file is a copy,
    and one an earlier run left on this machine (its run ended elsewhere, on a runner that removed the
    bucket's record) must never carry that run's start over: it is neither read nor trusted."""
    if remote is not None:
        raw = remote.get(RUN_RECORD_OBJECT, MAX_RECORD_BYTES)
        if raw is None:
            return None
        return remote.uri(RUN_RECORD_OBJECT), _run_doc_from(remote.uri(RUN_RECORD_OBJECT), raw)
    if path.exists():
        return str(path), _run_doc(path)
    return None


def _run_doc(path: Path) -> dict[str, Any]:
    try:
        raw = read_regular(path, MAX_RECORD_BYTES)  # never a FIFO
    except OSError as exc:
        raise EvidenceError(
            f"run record {path}: not readable JSON ({exc}); move it away and run `teardown begin`"
        ) from None
    return _run_doc_from(str(path), raw)


def _run_doc_from(path: str, raw: bytes | str) -> dict[str, Any]:
    try:
        doc = json_text.loads(raw)
    except json_text.JSONTextError as exc:
        raise EvidenceError(
            f"run record {path}: not readable JSON ({exc}); move it away and run `teardown begin`"
        ) from None
    missing = [
        k for k in ("account", "region", "cluster", "started_at") if not isinstance(doc, dict) or k not in doc
    ]
    if not isinstance(doc, dict) or doc.get("format") != RUN_FORMAT or missing:
        raise EvidenceError(f"run record {path}: expected format {RUN_FORMAT!r} with {missing or 'its keys'}; "
                            "was it written by `teardown begin`?")  # fmt: skip
    unknown = sorted(set(doc) - RUN_KEYS)
    if unknown:
        raise EvidenceError(f"run record {path}: {excerpt(unknown, 80)} is not a key `teardown begin` writes "
                            f"(it writes {sorted(RUN_KEYS)}); move it away and run `teardown begin`")  # fmt: skip
    wrong = [k for k in ("account", "region", "cluster") if not isinstance(doc[k], str)]
    wrong += [k for k in ("started_at", "teardown_started_at") if k in doc and not _aware(doc[k])]
    if "teardown_started_at" in wrong and doc.get("teardown_started_at") is None:
        wrong.remove("teardown_started_at")  # null: no teardown began (as absent)
    if wrong:
        found = ", ".join(f"{k} {excerpt(doc[k], 40)!r}" for k in wrong)
        raise EvidenceError(f"run record {path}: {', '.join(wrong)} is not what `teardown begin` writes (found "
                            f"{found}; expected an ISO 8601 UTC time for started_at and teardown_started_at, and text for "
                            "account, region, cluster); move it "
                            "away and run `teardown begin`")  # fmt: skip
    return doc


def _aware(value: Any) -> bool:
    """An ISO 8601 time with its offset, that UTC can hold."""
    try:
        return isinstance(value, str) and parse(value).tzinfo is not None
    except ValueError:
        return False


def _elsewhere(arn: Any, account: str, region: str) -> bool:
    """The ARN names another account, or another region (IAM's and S3's name none: global)."""
    parts = arn.split(":", 5) if isinstance(arn, str) and arn.startswith("arn:") else []
    return len(parts) == 6 and (parts[4] not in ("", account) or parts[3] not in ("", region))


def run_started(path: Path, remote: Remote | None = None) -> str | None:
    """The run record's start (the run's id in the journal), or None when there is no run record."""
    found = _read_record(path, remote)
    return found[1]["started_at"] if found is not None else None


RUN_KEYS = frozenset({"format", "account", "region", "cluster", "started_at", "teardown_started_at"})


def check_local_evidence(sources: Sources, region: str, *, record: bool) -> None:
    """The evidence on this machine read as teardown will read it, before any AWS call: a state
    directory that is a directory, its state files Terraform's format 4, the run record as `teardown begin`
    writes it. An EvidenceError names the first that is not (exit 2, nothing asked of AWS yet)."""
    if sources.state_dir.exists() and not sources.state_dir.is_dir():
        raise EvidenceError(f"--state-dir {sources.state_dir}: not a directory; name infra's state directory")
    _state_ids(replace(sources, remote=None), "000000000000", region)
    if record:  # with a state bucket the local run record is a copy, never read
        _read_record(sources.run_record, None)
    journal = sources.journal
    if journal.exists() and (not journal.is_file() or journal.stat().st_size > MAX_JOURNAL_BYTES):
        raise EvidenceError(
            f"--journal {journal}: not a regular file of at most {MAX_JOURNAL_BYTES:,} bytes (a run's journal is "
            "a plan and one line per deletion); move it away"
        )


MAX_JOURNAL_BYTES = MAX_PART_BYTES  # a run's journal is kilobytes: past this it is not ours


def _state_docs(sources: Sources) -> Iterator[tuple[str, bytes]]:
    """The cluster stacks' state: their files under the state directory, and their objects in the state
    bucket. Only `terraform.{network,cluster,addons}.tfstate`: the nightly's own role's bootstrap state, or
    any other file beside them, is not the cluster's and proves nothing."""
    for path in (sources.state_dir / state_file(stack) for stack in CLUSTER_STACKS):
        if not path.exists():
            continue
        try:
            yield str(path), read_regular(path, MAX_STATE_BYTES)  # never a FIFO
        except OSError as exc:
            raise EvidenceError(
                f"Terraform state {path}: not readable JSON ({excerpt(str(exc), 120)})"
            ) from None
    if sources.remote is not None:
        yield from sources.remote.states(MAX_STATE_BYTES)


def _state_ids(sources: Sources, account: str, region: str) -> dict[str, dict[str, str]]:
    """Per teardown type, the ids and ARNs of the managed resources of its Terraform types in the cluster
    stacks' state (data sources read someone else's resources: never provenance), each with AWS's unique id
    where the state keeps one. A resource whose ARN names another account or region proves nothing here: a
    same-named table or cluster there is not the one in our state. Without an ARN (an EIP, a route table) the
    id is AWS-generated and unique anyway."""
    by_tf = {tf: rtype for rtype, tfs in TERRAFORM_TYPES.items() for tf in tfs}
    ids: dict[str, dict[str, str]] = {}
    for where, raw in _state_docs(sources):
        try:
            doc = json_text.loads(raw)
        except json_text.JSONTextError as exc:
            raise EvidenceError(
                f"Terraform state {where}: not readable JSON ({excerpt(str(exc), 120)})"
            ) from None
        try:
            _add_state_ids(ids, doc, by_tf, account, region)
        except StateShapeError as exc:
            raise EvidenceError(
                f"Terraform state {where}: {exc}; expected Terraform's state format 4: resources, a list "
                "of objects each with mode, type and instances, a list of objects each with attributes, an object"
            ) from None
    return ids


class StateShapeError(ValueError):
    """A document that is not a Terraform state (format 4): where inside it, expected and found."""


def _shape(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise StateShapeError(f"{where} is {shown(value)} ({type(value).__name__}), not a {kind.__name__}")
    return value


def _add_state_ids(
    ids: dict[str, dict[str, str]], doc: Any, by_tf: Mapping[str, str], account: str, region: str
) -> None:
    """Every managed resource of a mapped type, read from a document held to Terraform's state format 4
    throughout: a part of another shape is a StateShapeError, never skipped (a state that proves nothing
    because it does not read would turn our resources into unproven ones, silently)."""
    _shape(doc, dict, "the document")
    if doc.get("version") != 4:
        raise StateShapeError(f"version is {shown(doc.get('version'))}, not 4")
    for n, res in enumerate(_shape(doc.get("resources"), list, "resources")):
        at = f"resources[{n}]"
        _shape(res, dict, at)
        mode, tf_type = res.get("mode"), _shape(res.get("type"), str, f"{at}.type")
        if mode not in ("managed", "data"):
            raise StateShapeError(f"{at}.mode is {shown(mode)}, not managed or data")
        instances = _shape(res.get("instances"), list, f"{at}.instances")
        for i, inst in enumerate(instances):
            attrs = _shape(_shape(inst, dict, f"{at}.instances[{i}]").get("attributes"), dict,
                           f"{at}.instances[{i}].attributes")  # fmt: skip
            rtype = by_tf.get(tf_type)
            if rtype is None or mode != "managed" or _elsewhere(attrs.get("arn"), account, region):
                continue
            unique = str(attrs.get(UNIQUE_ID.get(tf_type, ""), "") or "")
            for k in ("id", "arn"):
                if isinstance(attrs.get(k), str) and attrs[k]:
                    ids.setdefault(rtype, {})[attrs[k]] = unique


def gather(sources: Sources, account: str, region: str, cluster: str) -> Evidence:
    """Read the evidence now. A run record for another target is refused, not ignored."""
    started = teardown = None
    found = _read_record(sources.run_record, sources.remote)
    if found is not None:
        where, doc = found
        for what, want in (("account", account), ("region", region), ("cluster", cluster)):
            if doc[what] != want:
                raise EvidenceError(f"run record {where} is for {what} {doc[what]}, but this "
                                    f"run is for {what} {want}; nothing deleted")  # fmt: skip
        started = parse(doc["started_at"])
        teardown = parse(doc["teardown_started_at"]) if doc.get("teardown_started_at") else None
    journal = Journal(sources.journal, sources.remote).proven(account, region, cluster)
    return Evidence(sources, _state_ids(sources, account, region), started, teardown, journal)


def _same_as_planned(r: Resource, planned: Planned) -> bool:
    """The resource is the one an earlier plan of ours held: same key, and AWS's unique id, else its
    creation time, unchanged; for a name-identified type one of the two must have been recorded."""
    if planned.unique_id:
        return planned.unique_id == str(r.details.get("unique_id") or "")
    if planned.created:
        return planned.created == str(r.details.get("created") or "")
    return r.type not in NAME_IDENTIFIED


def _direct(r: Resource, ev: Evidence) -> str:
    if r.provenance:  # the lister's own record (the spot SLR's)
        return r.provenance
    unique = str(r.details.get("unique_id") or "")
    state = ev.terraform.get(r.type, {})
    if r.id in state and state[r.id] in ("", unique):
        return f"in our Terraform state ({ev.sources.where()})"
    planned = ev.journal.get(r.key)
    if planned is not None and _same_as_planned(r, planned):
        return f"planned by an earlier teardown of ours for this account, region and cluster ({planned.provenance})"
    created = r.details.get("created")
    if ev.started_at and created and parse(created) >= ev.started_at:
        if ev.teardown_at is None:
            return f"created {created}, after this run began ({iso(ev.started_at)})"
        if parse(created) < ev.teardown_at:
            return (
                f"created {created}, after this run began ({iso(ev.started_at)}) and before its teardown "
                f"began ({iso(ev.teardown_at)})"
            )
    return ""


def _unproven(r: Resource, ev: Evidence, inside: list[str]) -> str:
    created = r.details.get("created")
    if ev.started_at is None:
        where = f"{ev.sources.run_record}" + (
            f" or {ev.sources.remote.uri(RUN_RECORD_OBJECT)}" if ev.sources.remote is not None else ""
        )
        when = f"and there is no run record ({where}) to compare its creation time with"
    elif not created:
        when = "and AWS gives no creation time to compare with this run's start"
    elif ev.teardown_at is not None and parse(created) >= ev.teardown_at:
        when = f"and it was created {created}, after this run's teardown began ({iso(ev.teardown_at)})"
    else:
        when = f"and it was created {created}, before this run began ({iso(ev.started_at)})"
    held = f"; it is inside {', '.join(inside)}, which is not ours" if inside else ""
    return (
        f"tagged {r.owned_by}, but nothing shows we made it: not in our Terraform state "
        f"({ev.sources.where()}) or journal, {when}{held}"
    )


def prove(found: Iterable[Resource], ev: Evidence) -> list[Resource]:
    """Each resource tagged as ours with its provenance; one without becomes a lookalike saying why."""
    found = list(found)
    proven = {r.key: why for r in found if r.ours and (why := _direct(r, ev))}
    changed = True
    while changed:  # containment: a subnet inside a proven VPC, then an ENI inside that subnet
        changed = False
        for r in found:
            inside = list(r.details.get("inside") or [])
            if r.ours and r.key not in proven and inside and all(k in proven for k in inside):
                proven[r.key] = f"inside {', '.join(inside)}, which is ours"
                changed = True
    out = []
    for r in found:
        if not r.ours:
            out.append(r)
        elif r.key in proven:
            out.append(replace(r, provenance=proven[r.key]))
        else:
            why = _unproven(r, ev, list(r.details.get("inside") or []))
            out.append(replace(r, owned_by="", tagged_as=r.owned_by, lookalike=why))
    return out
