"""A runner lost mid-run loses nothing teardown needs: with `state_backend: s3` the cluster stacks' state,
the run record and the journal lie in the state bucket, and a fresh checkout with an empty disk proves our
resources from there, deletes them, and verifies the account empty; what carries our tag and nothing proves
ours survives, and keeps verify red until a person removes it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from gpu_finops.cli import main
from gpu_finops.facts.names import JOURNAL_FOLDER, RUN_RECORD_OBJECT, state_bucket, state_key, state_prefix
from teardown.journal import Journal
from teardown.registry import REGISTRY
from teardown.remote import Remote
from teardown.types import load
from tests.teardown.account import CLUSTER, OURS, build, foreign_still_there, ours_left

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = state_bucket(CLUSTER, ACCOUNT)
STATE_KEY = state_key(REGION, CLUSTER, "network")
PART_KEY = state_prefix(REGION, CLUSTER) + JOURNAL_FOLDER + "20261206T000000Z-host-1-abcdef01.jsonl"
RECORD_KEY = state_prefix(REGION, CLUSTER) + RUN_RECORD_OBJECT


class Killed(BaseException):
    """The runner is lost here: no except clause in teardown sees it."""


def cli(action: str) -> list[str]:
    """The nightly's commands, with every path at its default: what a fresh checkout runs."""
    yes = ["--yes"] if action in ("destroy", "resume") else []
    return ["teardown", action, "--allow-account", ACCOUNT, "--wait", "5", *yes]


@pytest.fixture
def s3_state(boto_session, tmp_path, monkeypatch) -> Path:
    """The bootstrap stack's bucket (versioned) and a config keeping state and evidence there."""
    s3 = boto_session.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    config = tmp_path / "config.yaml"
    config.write_text(f"allowed_accounts: ['{ACCOUNT}']\nstate_backend: s3\ncluster_name: {CLUSTER}\n")
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(config))
    return config


def runner(tmp_path: Path, name: str, monkeypatch) -> Path:
    """A checkout's working directory, empty: no .state/, no reports/."""
    d = tmp_path / name
    d.mkdir()
    monkeypatch.chdir(d)
    return d


def keys(boto_session, prefix: str = "") -> list[str]:
    listed = boto_session.client("s3").list_objects_v2(
        Bucket=BUCKET, Prefix=state_prefix(REGION, CLUSTER) + prefix
    )
    return sorted(o["Key"] for o in listed.get("Contents", []))


def push_state(boto_session, checkout: Path) -> None:
    """What Terraform's S3 backend holds after `make up`: the cluster stack's state, at the key the
    synthesized backend names (tests/infra/test_state_backend.py holds synth and Terraform to that key)."""
    body = (checkout / ".state" / "terraform.cluster.tfstate").read_bytes()
    boto_session.client("s3").put_object(Bucket=BUCKET, Key=state_key(REGION, CLUSTER, "cluster"), Body=body)
    shutil.rmtree(checkout / ".state")  # it lives in the bucket only, as with the S3 backend


def tagged_queue(boto_session) -> str:
    """Someone else's queue given our tags: no state, no journal, and AWS gives a queue no creation time."""
    tags = {t["Key"]: t["Value"] for t in OURS}
    return boto_session.client("sqs").create_queue(QueueName="gpu-finops-look-alike", tags=tags)["QueueUrl"]


def test_a_fresh_checkout_proves_ours_from_the_bucket_deletes_it_and_verifies_empty(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    first = runner(tmp_path, "first-runner", monkeypatch)
    assert main(cli("begin")) == 0
    assert keys(boto_session) == [state_prefix(REGION, CLUSTER) + RUN_RECORD_OBJECT]
    acct = build(boto_session)  # `make up`: the stacks, Karpenter's nodes
    push_state(boto_session, first)
    queue = tagged_queue(boto_session)
    shutil.rmtree(first)  # the runner is lost: state, run record and journal with it

    runner(tmp_path, "fresh-checkout", monkeypatch)
    capsys.readouterr()
    assert main(cli("resume")) == 1, "the queue tagged as ours, which nothing proves, keeps verify red"
    out = capsys.readouterr().out
    assert ours_left(boto_session, acct) == {}, out
    assert foreign_still_there(boto_session, acct) == {}
    report = json.loads(Path("reports/teardown-report.json").read_text())
    assert report["left"] == []
    assert [(r["type"], r["id"]) for r in report["unproven"]] == [("sqs_queue", queue)]
    assert "NOT EMPTY: 1 resource(s) tagged as ours that nothing proves ours" in out
    assert BUCKET in {b["Name"] for b in boto_session.client("s3").list_buckets()["Buckets"]}
    assert BUCKET not in {r["id"] for r in report["looks_like_ours"]}, (
        "the state bucket is never taken for ours"
    )
    # the run did not end: its record stays in the bucket, and no new run may begin
    assert state_prefix(REGION, CLUSTER) + RUN_RECORD_OBJECT in keys(boto_session)
    assert main(cli("begin")) == 1

    capsys.readouterr()
    assert main(cli("verify")) == 1
    assert "gpu-finops-look-alike" in capsys.readouterr().out
    boto_session.client("sqs").delete_queue(QueueUrl=queue)  # reviewed by a person, removed by hand
    assert main(cli("verify")) == 0
    assert main(cli("resume")) == 0, "a resume that verifies empty ends the run"
    assert RUN_RECORD_OBJECT not in " ".join(keys(boto_session))
    assert main(cli("begin")) == 0, "the next run begins"


def test_a_runner_lost_mid_destroy_leaves_its_journal_in_the_bucket_for_the_resume(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    first = runner(tmp_path, "first-runner", monkeypatch)
    assert main(cli("begin")) == 0
    acct = build(boto_session)
    push_state(boto_session, first)
    load()
    deleted: list[str] = []

    def dying(real):
        def delete(ctx, r):
            real(ctx, r)
            deleted.append(r.key)
            if len(deleted) == 5:
                raise Killed(f"runner lost after deleting {r.key}")

        return delete

    real = dict(REGISTRY)
    for name, rtype in real.items():
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(rtype, delete=dying(rtype.delete)))
    with pytest.raises(Killed):
        main(cli("destroy"))
    for name, rtype in real.items():
        monkeypatch.setitem(REGISTRY, name, rtype)
    shutil.rmtree(first)

    (part,) = keys(boto_session, JOURNAL_FOLDER)
    remote = Remote(boto_session.client("s3"), BUCKET, ACCOUNT, REGION, CLUSTER)
    held = Journal(tmp_path / "no-such-file.jsonl", remote)
    # the last deletion happened, and the runner was lost before its entry: the resume finds it gone
    assert held.deleted() == set(deleted[:-1]), part
    plan = len(held.last_plan())
    assert plan == sum(len(ids) for ids in acct.ours.values())

    runner(tmp_path, "fresh-checkout", monkeypatch)
    capsys.readouterr()
    assert main(cli("resume")) == 0
    out = capsys.readouterr().out
    assert f"earlier plan {plan} resource(s), {len(deleted) - 1} recorded deleted, did not finish" in out
    assert "verified empty" in out
    assert ours_left(boto_session, acct) == {}
    assert foreign_still_there(boto_session, acct) == {}
    assert len(keys(boto_session, JOURNAL_FOLDER)) == 2, "each process keeps its own part"
    assert Journal(Path("reports/teardown-journal.jsonl"), remote).finished()


# --- what the nightly's role may do in the state bucket --------------------------------------------------
OBJECT_CALLS = {"GetObject": "s3:GetObject", "PutObject": "s3:PutObject", "DeleteObject": "s3:DeleteObject",
                "ListObjectsV2": "s3:ListBucket", "HeadBucket": "s3:ListBucket"}  # fmt: skip


def _policies():
    from gpu_finops.facts.config import Config
    from iam.ci_policies import deploy_policies

    return deploy_policies(Config(allowed_accounts=(ACCOUNT,), cluster_name=CLUSTER), ACCOUNT).values()


def _decide(action: str, resource: str):
    from iam.iam_eval import Request, decide

    return decide(_policies(), Request(action, resource))


def test_every_state_bucket_call_of_a_run_is_one_the_nightly_role_may_make(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    import botocore.client

    made: list[tuple[str, str]] = []
    original = botocore.client.BaseClient._make_api_call

    def record(self, operation, params):
        if self.meta.service_model.signing_name == "s3" and operation in OBJECT_CALLS:
            key = params.get("Key")
            made.append(
                (OBJECT_CALLS[operation], f"arn:aws:s3:::{params['Bucket']}" + (f"/{key}" if key else ""))
            )
        return original(self, operation, params)

    first = runner(tmp_path, "first-runner", monkeypatch)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    assert main(cli("begin")) == 0
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", original)
    build(boto_session)
    push_state(boto_session, first)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    assert main(cli("destroy")) == 0
    assert main(cli("verify")) == 0
    assert {a for a, _ in made} == {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"}
    denied = [(a, r, d.reason) for a, r in set(made) if not (d := _decide(a, r)).allowed]
    assert denied == []


@pytest.mark.parametrize(
    ("action", "key", "why"),
    [
        ("s3:DeleteObject", state_key(REGION, CLUSTER, "cluster"), "a state object: what proves ours"),
        ("s3:DeleteObject", state_prefix(REGION, CLUSTER) + JOURNAL_FOLDER + "x.jsonl", "a journal part"),
        ("s3:DeleteObjectVersion", state_key(REGION, CLUSTER, "cluster"), "an earlier version of the state"),
        ("s3:PutObject", state_key(REGION, "other-cluster", "cluster"), "another cluster's prefix"),
        ("s3:PutObject", state_key("eu-west-1", CLUSTER, "cluster"), "another region's prefix"),
        ("s3:PutBucketVersioning", "", "turning versioning off"),
        ("s3:PutBucketPolicy", "", "rewriting the bucket's policy"),
    ],
)
def test_the_nightly_role_cannot_erase_or_reach_past_its_evidence(action, key, why):
    resource = f"arn:aws:s3:::{BUCKET}" + (f"/{key}" if key else "")
    assert not _decide(action, resource).allowed, why


def test_the_nightly_role_reaches_no_other_accounts_state_bucket():
    other = state_bucket(CLUSTER, "210987654321")
    assert not _decide(
        "s3:GetObject", f"arn:aws:s3:::{other}/{state_key(REGION, CLUSTER, 'cluster')}"
    ).allowed
    assert _decide("s3:GetObject", f"arn:aws:s3:::{BUCKET}/{state_key(REGION, CLUSTER, 'cluster')}").allowed


def test_without_the_state_bucket_teardown_refuses_naming_the_bootstrap_stack(
    boto_session, tmp_path, capsys, monkeypatch
):
    config = tmp_path / "config.yaml"
    config.write_text(f"allowed_accounts: ['{ACCOUNT}']\nstate_backend: s3\n")
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(config))
    runner(tmp_path, "checkout", monkeypatch)
    for action in ("begin", "verify", "resume"):
        assert main(cli(action)) == 2
        err = capsys.readouterr().err
        assert (
            f"state bucket {BUCKET} does not exist in account {ACCOUNT}: apply the bootstrap stack" in err
        ), err
    assert not Path("reports/teardown-run-gpu-finops.json").exists()


def test_a_run_record_left_on_a_runner_is_never_evidence_once_the_bucket_holds_none(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    """Runner A began a run; runner B resumed it to empty, which ended it and removed the bucket's record;
    A's disk still holds its copy. Someone's launch template tagged as ours, made after A's start, must not
    become ours through that copy: not in A's plan, and A's next `begin` surveys and refuses."""
    first = runner(tmp_path, "first-runner", monkeypatch)
    assert main(cli("begin")) == 0
    runner(tmp_path, "second-runner", monkeypatch)
    assert main(cli("resume")) == 0
    assert RECORD_KEY not in keys(boto_session), "the run ended: its record left the bucket"
    template = boto_session.client("ec2").create_launch_template(
        LaunchTemplateName="gpu-finops-later",
        LaunchTemplateData={"ImageId": "ami-12c6146b"},
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": OURS[:2]}],
    )["LaunchTemplate"]["LaunchTemplateId"]

    monkeypatch.chdir(first)
    assert Path("reports/teardown-run-gpu-finops.json").exists(), "A's copy of the ended run"
    capsys.readouterr()
    assert main(cli("plan")) == 0
    report = json.loads(Path("reports/teardown-report.json").read_text())
    assert report["plan"] == [], "nothing is ours by a copy the bucket no longer holds"
    assert main(cli("begin")) == 1
    assert "1 tagged as ours but unproven are left" in capsys.readouterr().err
    assert RECORD_KEY not in keys(boto_session), "the old start was not carried to the bucket"
    boto_session.client("ec2").delete_launch_template(LaunchTemplateId=template)
    assert main(cli("begin")) == 0
    record = json.loads(Path("reports/teardown-run-gpu-finops.json").read_text())
    body = boto_session.client("s3").get_object(
        Bucket=BUCKET, Key=state_prefix(REGION, CLUSTER) + RUN_RECORD_OBJECT
    )
    assert record == json.loads(body["Body"].read()), "the local copy is the bucket's new record"


@pytest.mark.parametrize("refusal", ["PreconditionFailed", "ConditionalRequestConflict"])
def test_two_runners_beginning_at_once_share_the_first_record(
    boto_session, s3_state, tmp_path, monkeypatch, refusal
):
    """The second runner read before the first wrote: its create is refused by S3 (412 when the object is
    there, 409 while a concurrent conditional write is under way), and it takes the first runner's record,
    not its own clock."""
    from datetime import UTC, datetime, timedelta

    from teardown.provenance import write_run_record

    remote = Remote(boto_session.client("s3"), BUCKET, ACCOUNT, REGION, CLUSTER)
    now = datetime.now(UTC)
    first, written = write_run_record(tmp_path / "a.json", ACCOUNT, REGION, CLUSTER, now, remote)
    assert written
    late = Remote(boto_session.client("s3"), BUCKET, ACCOUNT, REGION, CLUSTER)
    reads = []
    real_get = late.get

    def stale_first_read(name, limit):
        reads.append(name)
        return None if len(reads) == 1 else real_get(name, limit)

    late.get = stale_first_read
    if refusal == "ConditionalRequestConflict":  # moto answers 412 alone: S3's 409, as AWS documents it
        from botocore.exceptions import ClientError

        real_put = late.s3.put_object
        puts = []

        def conflicting(**kw):
            puts.append(kw["Key"])
            if len(puts) == 1:
                raise ClientError({"Error": {"Code": "ConditionalRequestConflict"}}, "PutObject")
            return real_put(**kw)

        monkeypatch.setattr(late.s3, "put_object", conflicting)
    second, written = write_run_record(
        tmp_path / "b.json", ACCOUNT, REGION, CLUSTER, now + timedelta(hours=1), late
    )
    assert len(reads) == 2, "the refused create made it read again"
    assert (second, written) == (first, False), "the bucket's record holds, not the second runner's clock"
    assert json.loads((tmp_path / "b.json").read_text())["started_at"] == first


# --- evidence in the bucket that teardown never writes: exit 2, naming it ----------------------------------


def _state(resources) -> bytes:
    return json.dumps({"version": 4, "resources": resources}).encode()


@pytest.mark.parametrize(
    ("key", "body", "says"),
    [
        (STATE_KEY, b'{"version": 4, "resources": "abc"}', "resources is 'abc' (str), not a list"),
        (STATE_KEY, b'{"version": 4, "resources": {"a": 1}}', "resources is {'a': 1} (dict), not a list"),
        (STATE_KEY, b'{"version": 4, "resources": [1, 2]}', "resources[0] is 1 (int), not a dict"),
        (
            STATE_KEY,
            _state([{"mode": "managed", "type": "aws_vpc", "instances": "x"}]),
            "resources[0].instances is 'x' (str), not a list",
        ),
        (
            STATE_KEY,
            _state([{"mode": "managed", "type": "aws_vpc", "instances": [1]}]),
            "resources[0].instances[0] is 1 (int), not a dict",
        ),
        (
            STATE_KEY,
            _state([{"mode": [], "type": "aws_vpc", "instances": []}]),
            "resources[0].mode is [], not managed or data",
        ),
        (STATE_KEY, b'{"version": 99, "resources": []}', "version is 99, not 4"),
        (
            STATE_KEY,
            json.dumps({"version": 4, "resources": []}).encode("utf-16"),
            "not readable JSON (not UTF-8 (byte b'\\xff' at offset 0))",
        ),
        (
            STATE_KEY,
            b'{"version": 4, "serial": ' + b"9" * 5000 + b', "resources": []}',
            "a number is longer than 4,300 digits",
        ),
        (STATE_KEY, b"\xef\xbb\xbf" + _state([]), "starts with a byte order mark"),
        (RECORD_KEY, b'{"started_at": ' + b"1" * 5000 + b"}", "run record s3://"),
        (PART_KEY, b'{"t": 1, "event": "plan", "resources": []}\n{"t": 2, "ev', "journal part s3://"),
        (PART_KEY, b'{"t": ' + b"7" * 5000 + b', "event": "x"}\n', "line 1 is not an entry teardown writes"),
        (PART_KEY, b'{"t": 1, "event": "plan", "resources": 5}\n', "plan entry (line 1) has no list"),
    ],
    ids=[
        "resources-str",
        "resources-dict",
        "resource-int",
        "instances-str",
        "instance-int",
        "mode-list",
        "version-99",
        "utf-16",
        "long-int",
        "bom",
        "record-long-int",
        "part-torn",
        "part-long-int",
        "plan-5",
    ],
)
def test_evidence_in_the_bucket_that_teardown_never_writes_is_refused_naming_it(
    boto_session, s3_state, tmp_path, capsys, monkeypatch, key, body, says
):
    runner(tmp_path, "checkout", monkeypatch)
    boto_session.client("s3").put_object(Bucket=BUCKET, Key=key, Body=body)
    for action in ("verify", "resume", "begin"):
        assert main(cli(action)) == 2, action
        err = capsys.readouterr().err
        assert says in err and f"s3://{BUCKET}/{key}" in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_an_entry_held_here_and_in_the_bucket_is_read_once(boto_session, s3_state, tmp_path):
    remote = Remote(boto_session.client("s3"), BUCKET, ACCOUNT, REGION, CLUSTER)
    journal = Journal(tmp_path / "j.jsonl", remote)
    for n in range(3):
        journal.write("deleted", key=f"vpc/vpc-{n}")
    assert len(list(Journal(tmp_path / "j.jsonl", remote).events())) == 3
    assert len(list(Journal(tmp_path / "elsewhere.jsonl", remote).events())) == 3


# --- what the account and the bucket hold is printed as itself, and a cut transfer is no evidence -----------
def test_brackets_in_a_name_or_in_evidence_print_as_themselves(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    """Rich reads `[/x]` as markup: from a tag or an object it must print, never end teardown as a bug."""
    runner(tmp_path, "checkout", monkeypatch)
    boto_session.client("ec2").create_vpc(
        CidrBlock="10.7.0.0/16",
        TagSpecifications=[{"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": "gpu-finops-[/x]"}]}],
    )
    assert main(cli("verify")) == 0
    assert "gpu-finops-[/x]" in capsys.readouterr().out
    boto_session.client("s3").put_object(
        Bucket=BUCKET, Key=STATE_KEY, Body=_state([{"mode": "[/x]", "type": "aws_vpc", "instances": []}])
    )
    assert main(cli("verify")) == 2
    assert "resources[0].mode is '[/x]', not managed or data" in capsys.readouterr().err


def test_a_control_sequence_in_a_key_is_shown_escaped(boto_session, s3_state, tmp_path, capsys, monkeypatch):
    runner(tmp_path, "checkout", monkeypatch)
    key = state_prefix(REGION, CLUSTER) + JOURNAL_FOLDER + "\x1b]0;owned\x07.jsonl"
    boto_session.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b"not an entry\n")
    assert main(cli("verify")) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b]0;owned\\x07.jsonl" in err, err


def test_an_object_cut_short_in_transfer_is_unreachable_not_bad_evidence(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    from teardown import remote as remote_mod

    runner(tmp_path, "checkout", monkeypatch)
    boto_session.client("s3").put_object(Bucket=BUCKET, Key=STATE_KEY, Body=_state([]))
    real = remote_mod.Remote.get

    def cut(self, name, limit):
        real_call = self._call

        def shorter(method, **kw):
            obj = real_call(method, **kw)
            obj["ContentLength"] += 10  # S3 said more than arrived
            return obj

        self._call = shorter
        try:
            return real(self, name, limit)
        finally:
            del self._call

    monkeypatch.setattr(remote_mod.Remote, "get", cut)
    assert main(cli("verify")) == 3
    err = capsys.readouterr().err
    assert f"s3://{BUCKET}/{STATE_KEY}: read " in err and "(the transfer was cut)" in err, err


def test_s3_contending_every_create_ends_after_a_few_tries(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    """S3 answering 409 to every conditional create, with no record to read: a bounded retry, then exit 3."""
    from teardown import provenance
    from teardown.remote import RecordExists

    runner(tmp_path, "checkout", monkeypatch)
    monkeypatch.setattr(provenance.time, "sleep", lambda s: None)
    tries = []

    def contended(self, name, body, *, create=False):
        tries.append(name)
        raise RecordExists(self.uri(name))

    monkeypatch.setattr(Remote, "put", contended)
    assert main(cli("begin")) == 3
    assert len(tries) == provenance.CREATE_ATTEMPTS
    assert f"S3 refused to create it {provenance.CREATE_ATTEMPTS} times" in capsys.readouterr().err


def test_default_output_paths_are_checked_before_anything_is_done(
    boto_session, s3_state, tmp_path, capsys, monkeypatch
):
    checkout = runner(tmp_path, "checkout", monkeypatch)
    assert main(cli("begin")) == 0
    (checkout / "reports" / "teardown-report.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(SystemExit) as refused:  # the parser's refusal: exit 2, before any call
        main(cli("destroy"))
    assert refused.value.code == 2
    assert "argument --report: reports/teardown-report.json is a symlink" in capsys.readouterr().err
    record = boto_session.client("s3").get_object(Bucket=BUCKET, Key=RECORD_KEY)["Body"].read()
    assert "teardown_started_at" not in json.loads(record), "refused before the teardown began"
    with pytest.raises(SystemExit) as refused:
        main([*cli("verify"), "--run-record", ""])
    assert refused.value.code == 2
    assert "argument --run-record: must not be empty" in capsys.readouterr().err
