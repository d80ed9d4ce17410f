"""Ownership that a tag alone cannot forge: each of the six tag pairs, put on someone else's resources
made before our run began, deletes nothing of theirs and is reported as looking like ours with the
reason; our own (in our Terraform state, created since the run began, or inside one of those) still go.
Each provenance clause where it holds and where it is missing."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpu_finops.cli import main
from teardown.provenance import run_record_path, write_run_record
from tests.teardown.account import TRUST, build, in_state, ours_left

ACCOUNT = "123456789012"
P, C = "gpu-finops.io/project", "gpu-finops.io/cluster"
PAIRS = [
    (P, "gpu-finops"),
    (C, "gpu-finops"),
    ("kubernetes.io/cluster/gpu-finops", "owned"),
    ("eks:eks-cluster-name", "gpu-finops"),
    ("karpenter.k8s.aws/cluster", "gpu-finops"),
    ("karpenter.sh/managed-by", "gpu-finops"),
]  # and the VPC CNI's tag, which is not even one of ours: tests/teardown/test_cni_tag.py
NOT_PROVEN = "but nothing shows we made it: not in our Terraform state (.state) or journal, and"


def cli(action: str, *extra: str) -> list[str]:
    return [
        "teardown", action, "--allow-account", ACCOUNT, "--region", "us-east-1", "--cluster", "gpu-finops",
        "--journal", "j.jsonl", "--report", f"{action}.json", "--wait", "5",
        *(["--yes"] if action in ("destroy", "resume") else []), *extra,
    ]  # fmt: skip


def theirs(session, key: str, value: str) -> dict[str, str]:
    """Someone else's VPC, subnet, security group, instance and role, made before our run, then given
    one of our tags (as anyone allowed to tag could)."""
    ec2, iam = session.client("ec2"), session.client("iam")
    vpc = ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.99.1.0/24")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName="their-app", Description="theirs", VpcId=vpc)["GroupId"]
    inst = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet)["Instances"][0]
    iam.create_role(RoleName="their-app", AssumeRolePolicyDocument=TRUST)
    tag = [{"Key": key, "Value": value}]
    ec2.create_tags(Resources=[vpc, subnet, sg, inst["InstanceId"]], Tags=tag)
    iam.tag_role(RoleName="their-app", Tags=tag)
    return {"vpc": vpc, "subnet": subnet, "security_group": sg, "ec2_instance": inst["InstanceId"],
            "iam_role": "their-app"}  # fmt: skip


def begin_run_now() -> str:
    """`make up`'s `teardown begin`, a second after the foreign resources were made."""
    time.sleep(1.1)  # creation times are whole seconds: theirs fall in an earlier one
    run_record_path("gpu-finops").unlink()
    started, written = write_run_record(
        run_record_path("gpu-finops"), ACCOUNT, "us-east-1", "gpu-finops", datetime.now(UTC)
    )
    assert written
    return started


def exists(session, rtype: str, rid: str) -> bool:
    ec2 = session.client("ec2")
    if rtype == "iam_role":
        return rid in {r["RoleName"] for r in session.client("iam").list_roles()["Roles"]}
    if rtype == "ec2_instance":
        (i,) = ec2.describe_instances(InstanceIds=[rid])["Reservations"][0]["Instances"]
        return i["State"]["Name"] != "terminated"
    found = {
        "vpc": lambda: ec2.describe_vpcs()["Vpcs"],
        "subnet": lambda: ec2.describe_subnets()["Subnets"],
        "security_group": lambda: ec2.describe_security_groups()["SecurityGroups"],
    }[rtype]()
    return any(rid in item.values() for item in found)


@pytest.mark.parametrize(("key", "value"), PAIRS)
def test_our_tag_on_their_resources_deletes_nothing_of_theirs(key, value, boto_session, capsys):
    foreign = theirs(boto_session, key, value)
    started = begin_run_now()
    acct = build(boto_session)
    assert main(cli("destroy")) == 1, capsys.readouterr().out  # the nightly's path: --yes, no --plan
    out = capsys.readouterr().out
    assert {t: exists(boto_session, t, i) for t, i in foreign.items()} == dict.fromkeys(foreign, True)
    assert ours_left(boto_session, acct) == {}  # ours, still deleted
    assert "verified empty" not in out and f"tagged as ours, not proven ours: {len(foreign)}" in out
    assert f"NOT EMPTY: {len(foreign)} resource(s) tagged as ours that nothing proves ours are left" in out
    report = json.loads(Path("destroy.json").read_text())
    assert {(r["type"], r["id"]) for r in report["unproven"]} == set(foreign.items())
    seen = {(r["type"], r["id"]): r for r in report["looks_like_ours"]}
    tagged = f"tagged {key}={value}, {NOT_PROVEN}"
    for rtype in ("ec2_instance", "iam_role"):
        r = seen[(rtype, foreign[rtype])]
        assert r["looks_like_ours"] == (
            f"{tagged} it was created {r['details']['created']}, before this run began ({started})"
        )
        assert r["details"]["created"] < started
    no_time = f"{tagged} AWS gives no creation time to compare with this run's start"
    assert seen[("vpc", foreign["vpc"])]["looks_like_ours"] == no_time
    for rtype in ("subnet", "security_group"):
        assert seen[(rtype, foreign[rtype])]["looks_like_ours"] == (
            f"{no_time}; it is inside vpc/{foreign['vpc']}, which is not ours"
        )


def plan_keys(capsys) -> dict[str, str]:
    assert main(cli("plan", "--out", "plan.json")) == 0
    capsys.readouterr()
    doc = json.loads(Path("plan.json").read_text())
    return {f"{r['type']}/{r['id']}": r.get("provenance", "") for r in doc["resources"]}


def test_each_provenance_where_it_holds_and_where_it_is_missing(boto_session, capsys):
    foreign = theirs(boto_session, P, "gpu-finops")
    started = begin_run_now()
    vpc, role = f"vpc/{foreign['vpc']}", "iam_role/their-app"
    assert vpc not in plan_keys(capsys)  # made before the run, in no state, no journal
    in_state("vpc", foreign["vpc"])  # in our Terraform state: ours, and what it holds with it
    proven = plan_keys(capsys)
    assert proven[vpc] == "in our Terraform state (.state)"
    assert proven[f"subnet/{foreign['subnet']}"] == f"inside {vpc}, which is ours"
    assert proven[f"security_group/{foreign['security_group']}"] == f"inside {vpc}, which is ours"
    assert role not in proven
    # our journal: an earlier plan of ours, for this account and region, held this very role (its RoleId)
    role_id = boto_session.client("iam").get_role(RoleName="their-app")["Role"]["RoleId"]
    Path("j.jsonl").write_text(json.dumps({"event": "plan", "account": ACCOUNT, "region": "us-east-1", "cluster": "gpu-finops",
        "resources": [{"type": "iam_role", "id": "their-app", "details": {"unique_id": role_id},
                       "provenance": "created 2026-12-01T00:00:00Z, after ..."}]}) + "\n")  # fmt: skip
    assert plan_keys(capsys)[role] == (
        "planned by an earlier teardown of ours for this account, region and cluster "
        "(created 2026-12-01T00:00:00Z, after ...)"
    )
    # an entry without provenance (an older journal) proves nothing
    Path("j.jsonl").write_text(json.dumps({"event": "plan", "resources": [{"type": "iam_role", "id": "their-app"}]}) + "\n")  # fmt: skip
    assert role not in plan_keys(capsys)
    # created since the run began: ours (Karpenter's nodes, say)
    boto_session.client("iam").create_role(RoleName="gpu-finops-new", AssumeRolePolicyDocument=TRUST,
                                           Tags=[{"Key": P, "Value": "gpu-finops"}])  # fmt: skip
    why = plan_keys(capsys)["iam_role/gpu-finops-new"]
    assert why.startswith("created ") and why.endswith(f", after this run began ({started})")


def test_without_a_run_record_creation_times_prove_nothing(boto_session, capsys):
    run_record_path("gpu-finops").unlink()
    iam = boto_session.client("iam")
    iam.create_role(
        RoleName="gpu-finops-x", AssumeRolePolicyDocument=TRUST, Tags=[{"Key": P, "Value": "gpu-finops"}]
    )
    assert "iam_role/gpu-finops-x" not in plan_keys(capsys)
    report = json.loads(Path("plan.json").read_text())
    (r,) = [r for r in report["looks_like_ours"] if r["id"] == "gpu-finops-x"]
    assert r["looks_like_ours"] == (
        f"tagged {P}=gpu-finops, but nothing shows we made it: not in our Terraform state (.state) or journal, "
        "and there is no run record (reports/teardown-run-gpu-finops.json) to compare its creation time with"
    )


def test_begin_writes_the_run_record_once_and_keeps_the_earliest(boto_session, capsys):
    path = run_record_path("gpu-finops")
    path.unlink()
    assert main(cli("begin")) == 0
    first = json.loads(path.read_text())
    assert f"run record {path}: this run began {first['started_at']}" in capsys.readouterr().out
    assert (first["format"], first["account"], first["region"], first["cluster"]) == (
        "gpu-finops-teardown-run/1", ACCOUNT, "us-east-1", "gpu-finops")  # fmt: skip
    assert path.stat().st_mode & 0o777 == 0o600
    time.sleep(1.1)
    assert main(cli("begin")) == 0
    assert f"kept: the run began {first['started_at']}" in capsys.readouterr().out
    assert json.loads(path.read_text()) == first


RECORD = {"format": "gpu-finops-teardown-run/1", "account": ACCOUNT, "region": "us-east-1", "cluster": "gpu-finops",
          "started_at": "2026-01-01T00:00:00Z"}  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "run record reports/teardown-run-gpu-finops.json: not readable JSON"),
        ('{"format": "x"}', "expected format 'gpu-finops-teardown-run/1'"),
        (json.dumps({"format": "gpu-finops-teardown-run/1", "account": "999999999999", "region": "us-east-1",
                     "cluster": "gpu-finops", "started_at": "2026-01-01T00:00:00Z"}),
         "is for account 999999999999, but this run is for account 123456789012; nothing deleted"),
        (json.dumps({**RECORD, "started_at": "0001-01-01T00:00:00+01:00"}),
         "started_at is not what `teardown begin` writes (found started_at '0001-01-01T00:00:00+01:00'"),
        (json.dumps({**RECORD, "teardown_started_at": "9999-12-31T23:59:59-05:00"}),
         "teardown_started_at is not what `teardown begin` writes (found teardown_started_at '9999-12-31T23:59:59-05:00'"),
        (json.dumps({**RECORD, "teardown_started_at": True}),
         "teardown_started_at is not what `teardown begin` writes (found teardown_started_at 'True'"),
        ("[" * 40_000 + "]" * 40_000, "run record reports/teardown-run-gpu-finops.json: not readable JSON"),
    ],
)  # fmt: skip
def test_a_bad_run_record_refuses_teardown(boto_session, capsys, content, message):
    build(boto_session, storage=False)
    run_record_path("gpu-finops").write_text(content)
    assert main(cli("destroy")) == 2
    assert message in capsys.readouterr().err
    assert main(cli("verify")) == 2


def test_make_up_records_the_run_before_it_creates_anything():
    """The nightly's `make up` (and an operator's) writes the run record first, so what it creates is
    provably ours when the nightly's destroy runs with --yes."""
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = re.search(r"^up:.*\n((?:\t.*\n)+)", makefile, re.M).group(1).splitlines()
    begin = next(i for i, line in enumerate(recipe) if "gpu-finops teardown begin" in line)
    assert begin < next(i for i, line in enumerate(recipe) if "gpu-finops infra up" in line)


@pytest.mark.parametrize(
    "state, shape",
    [
        ('{"version": 4, "resources": 5}', "resources is 5 (int), not a list"),
        (
            '{"version": 4, "resources": [{"mode": "managed", "type": ["aws_vpc"], "instances": []}]}',
            "resources[0].type is ['aws_vpc'] (list), not a str",
        ),
        (
            '{"version": 4, "resources": [{"mode": "managed", "type": "aws_vpc", "instances": 7}]}',
            "resources[0].instances is 7 (int), not a list",
        ),
        (
            '{"version": 4, "resources": [{"mode": "managed", "type": "aws_vpc", "instances": [{"attributes": [1]}]}]}',
            "resources[0].instances[0].attributes is [1] (list), not a dict",
        ),
        (
            '{"version": 4, "resources": [{"type": "aws_vpc", "instances": []}]}',
            "resources[0].mode is None, not managed or data",
        ),
        ('{"resources": []}', "version is None, not 4"),
        ("[]", "the document is [] (list), not a dict"),
    ],
)
def test_a_state_file_of_another_shape_refuses_teardown_naming_it(boto_session, capsys, state, shape):
    Path(".state").mkdir(exist_ok=True)
    Path(".state/terraform.network.tfstate").write_text(state)
    assert main(cli("verify")) == 2
    err = capsys.readouterr().err
    assert (
        f"Terraform state .state/terraform.network.tfstate: {shape}; expected Terraform's state format 4"
        in err
    )
    assert len(err.strip().splitlines()) == 1


def test_a_state_file_nested_past_pythons_limit_refuses_teardown_naming_it(boto_session, capsys):
    Path(".state").mkdir(exist_ok=True)
    Path(".state/terraform.cluster.tfstate").write_text("[" * 40_000 + "]" * 40_000)
    assert main(cli("verify")) == 2
    assert "Terraform state .state/terraform.cluster.tfstate: not readable JSON" in capsys.readouterr().err
