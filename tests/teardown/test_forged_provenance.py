"""provenance by Terraform state matches only ids and ARNs of a managed resource of the same
Terraform type. A forged `Name` tag, a foreign role named like our queue or our cluster, a role made again
under our role's name, a data source's id: none of them is provenance, whichever of our six tag pairs the
foreign resource carries; the nightly's `destroy --yes` deletes none of them."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_finops.cli import main
from gpu_finops.facts.names import CI_ROLE_STACK, state_file
from gpu_finops.facts.names import TAG_PROJECT as P
from tests.teardown.account import TRUST, in_state
from tests.teardown.test_provenance import PAIRS, begin_run_now, cli, exists

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/gpu-finops-interruptions"


def our_state() -> None:
    """What `infra up` leaves in state, with the names a tagger can copy: the cluster `gpu-finops`, the
    queue `gpu-finops-interruptions`, the rule, the node role (unique id AROAOURS)."""
    state = Path(".state") / "terraform.cluster.tfstate"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"version": 4, "resources": [
        {"mode": "managed", "type": "aws_eks_cluster", "name": "c", "instances": [{"attributes": {
            "id": "gpu-finops", "name": "gpu-finops",
            "arn": "arn:aws:eks:us-east-1:123456789012:cluster/gpu-finops"}}]},
        {"mode": "managed", "type": "aws_sqs_queue", "name": "q", "instances": [{"attributes": {
            "id": QUEUE_URL, "name": "gpu-finops-interruptions",
            "arn": "arn:aws:sqs:us-east-1:123456789012:gpu-finops-interruptions"}}]},
        {"mode": "managed", "type": "aws_iam_role", "name": "n", "instances": [{"attributes": {
            "id": "gpu-finops-node", "name": "gpu-finops-node", "unique_id": "AROAOURS",
            "arn": "arn:aws:iam::123456789012:role/gpu-finops-node"}}]},
    ]}))  # fmt: skip


def forged(session, key: str, value: str) -> dict[str, str]:
    """Someone else's resources, made before our run, given one of our tags and a name from our state."""
    ec2, iam = session.client("ec2"), session.client("iam")
    name_tag = [{"Key": "Name", "Value": "gpu-finops"}, {"Key": key, "Value": value}]
    vpc = ec2.create_vpc(CidrBlock="10.98.0.0/16")["Vpc"]["VpcId"]
    sg = ec2.create_security_group(GroupName="gpu-finops-interruptions", Description="x", VpcId=vpc)[
        "GroupId"
    ]
    ec2.create_tags(Resources=[vpc, sg], Tags=name_tag)
    for role in ("gpu-finops-interruptions", "gpu-finops", "gpu-finops-node"):  # queue's, cluster's, role's
        iam.create_role(RoleName=role, AssumeRolePolicyDocument=TRUST, Tags=[{"Key": key, "Value": value}])
    return {"vpc": vpc, "security_group": sg, "iam_role/q": "gpu-finops-interruptions",
            "iam_role/c": "gpu-finops", "iam_role/n": "gpu-finops-node"}  # fmt: skip


@pytest.mark.parametrize(("key", "value"), PAIRS)
def test_names_in_our_state_prove_nothing(key, value, boto_session, capsys):
    our_state()
    foreign = forged(boto_session, key, value)
    begin_run_now()
    assert main(cli("destroy")) == 1, capsys.readouterr().out  # the nightly's path: --yes, no --plan
    capsys.readouterr()
    left = {k: exists(boto_session, k.split("/")[0], rid) for k, rid in foreign.items()}
    assert left == dict.fromkeys(foreign, True)
    seen = {
        r["id"]: r["looks_like_ours"] for r in json.loads(Path("destroy.json").read_text())["looks_like_ours"]
    }
    for rid in foreign.values():
        assert seen[rid].startswith(f"tagged {key}={value}, but nothing shows we made it"), seen[rid]


def test_a_data_source_in_our_state_proves_nothing(boto_session, capsys):
    """Terraform reads foreign resources through data sources: their ids are in state, but not ours."""
    ec2 = boto_session.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.97.0.0/16")["Vpc"]["VpcId"]
    ec2.create_tags(Resources=[vpc], Tags=[{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}])
    begin_run_now()
    in_state("vpc", vpc, mode="data")
    assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
    capsys.readouterr()
    assert exists(boto_session, "vpc", vpc)
    in_state("vpc", vpc)  # the same id as a managed resource: ours
    assert main(cli("destroy")) == 0
    assert not exists(boto_session, "vpc", vpc)


def test_an_id_of_another_terraform_type_proves_nothing(boto_session, capsys):
    """A role named like the id of our EKS cluster is not in state as a role."""
    iam = boto_session.client("iam")
    iam.create_role(RoleName="gpu-finops", AssumeRolePolicyDocument=TRUST,
                    Tags=[{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}])  # fmt: skip
    begin_run_now()
    in_state("eks_cluster", "gpu-finops")
    assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
    assert exists(boto_session, "iam_role", "gpu-finops")
    in_state("iam_role", "gpu-finops")  # in state as a role (no unique id kept): ours
    assert main(cli("destroy")) == 0
    assert not exists(boto_session, "iam_role", "gpu-finops")


def test_a_role_made_again_under_our_roles_name_is_not_ours(boto_session, capsys):
    """State keeps the role's unique id: a same-named role (ours deleted, theirs made) has another, in
    state and in our journal alike."""
    iam = boto_session.client("iam")
    tags = [{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}]
    rid = iam.create_role(RoleName="gpu-finops-node", AssumeRolePolicyDocument=TRUST, Tags=tags)["Role"][
        "RoleId"
    ]
    begin_run_now()
    in_state("iam_role", "gpu-finops-node", unique_id="AROAOLDONE")
    Path("j.jsonl").write_text(json.dumps({"event": "plan", "account": "123456789012", "region": "us-east-1", "resources": [
        {"type": "iam_role", "id": "gpu-finops-node", "provenance": "in our Terraform state (.state)",
         "details": {"unique_id": "AROAOLDONE"}}]}) + "\n")  # fmt: skip
    assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
    assert exists(boto_session, "iam_role", "gpu-finops-node")
    in_state("iam_role", "gpu-finops-node", unique_id=rid)  # the very role: ours
    assert main(cli("destroy")) == 0
    assert not exists(boto_session, "iam_role", "gpu-finops-node")


def test_every_registered_type_maps_to_terraform_or_says_why():
    import teardown.types  # noqa: F401  (registers every type)
    from teardown.provenance import NOT_IN_STATE, TERRAFORM_TYPES
    from teardown.registry import REGISTRY

    assert set(REGISTRY) == set(TERRAFORM_TYPES) | set(NOT_IN_STATE)
    assert not set(TERRAFORM_TYPES) & set(NOT_IN_STATE)


def test_a_verified_empty_destroy_ends_the_run(boto_session, capsys):
    """the run record outlived a verified-empty destroy, so "created after this run began" meant
    after the first run ever: a role someone made and tagged between two nightlies was deleted by the second."""
    from teardown.provenance import run_record_path

    record = run_record_path("gpu-finops")
    assert record.exists()  # `make up`'s begin (fixture teardown_run)
    assert main(cli("verify")) == 0
    assert record.exists()  # verify alone ends nothing: a `make up` may be under way
    assert main(cli("destroy")) == 0  # nothing to delete, verified empty: the run has ended
    assert "run record reports/teardown-run-gpu-finops.json removed" in capsys.readouterr().out
    assert not record.exists()
    time.sleep(1.1)
    iam = boto_session.client("iam")
    iam.create_role(RoleName="their-app", AssumeRolePolicyDocument=TRUST,
                    Tags=[{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}])  # fmt: skip
    time.sleep(1.1)
    capsys.readouterr()
    assert main(cli("begin")) == 1  # the next nightly's make up: something tagged as ours is left
    out, err = capsys.readouterr()
    assert "their-app" in out and "0 resource(s) of ours and 1 tagged as ours but unproven are left" in err
    assert not record.exists()  # no run begun: their role cannot become ours by time
    assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
    assert exists(boto_session, "iam_role", "their-app")
    iam.delete_role(RoleName="their-app")  # checked by hand and removed
    assert main(cli("begin")) == 0


def test_a_new_run_does_not_begin_while_a_leftover_of_ours_is_there(boto_session, capsys):
    """A leftover proven ours by the cluster stack's state (a lost runner's later checkout, state kept)
    stops `make up` too: resume first."""
    from teardown.provenance import run_record_path

    vpc = boto_session.client("ec2").create_vpc(
        CidrBlock="10.96.0.0/16",
        TagSpecifications=[{"ResourceType": "vpc", "Tags": [{"Key": P, "Value": "gpu-finops"}]}],
    )["Vpc"]["VpcId"]
    in_state("vpc", vpc)
    run_record_path("gpu-finops").unlink()
    capsys.readouterr()
    assert main(cli("begin")) == 1
    out, err = capsys.readouterr()
    assert vpc in out and "1 resource(s) of ours and 0 tagged as ours but unproven are left" in err
    assert "run `make resume`" in err
    assert main(cli("resume")) == 0
    assert main(cli("begin")) == 0


def test_a_destroy_that_leaves_something_closes_the_runs_window_and_begin_waits_for_resume(
    boto_session, capsys, monkeypatch
):
    """A destroy made to fail (a foreign subnet blocking our VPC, here an injected refusal) keeps the run
    record, marked with when its teardown began: what the run made before then stays provable, what anyone
    tags as ours after it is not, and the next `make up` does not carry the old start over (it would make
    everything tagged as ours since then provably ours); it waits for a resume."""
    from teardown.provenance import run_record_path
    from teardown.registry import REGISTRY

    iam = boto_session.client("iam")
    tagged = [{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}]
    time.sleep(1.1)  # created after the run began (fixture teardown_run): ours by time
    iam.create_role(RoleName="gpu-finops-x", AssumeRolePolicyDocument=TRUST, Tags=tagged)
    original = REGISTRY["iam_role"]

    def refuse(ctx, r):
        raise RuntimeError("injected: AWS refused")

    monkeypatch.setitem(REGISTRY, "iam_role", replace(original, delete=refuse))
    assert main(cli("destroy")) == 1
    record = run_record_path("gpu-finops")
    doc = json.loads(record.read_text())
    assert doc["teardown_started_at"] >= doc["started_at"]
    time.sleep(1.1)
    iam.create_role(
        RoleName="their-app", AssumeRolePolicyDocument=TRUST, Tags=tagged
    )  # between two nightlies
    capsys.readouterr()
    assert main(cli("begin")) == 1  # the next nightly's make up
    err = capsys.readouterr().err
    assert f"the run that began {doc['started_at']} began its teardown {doc['teardown_started_at']}" in err
    assert "run `make resume`" in err
    assert json.loads(record.read_text()) == doc  # the start is not carried over, nor the record changed
    monkeypatch.setitem(REGISTRY, "iam_role", original)
    assert main(cli("resume")) == 1  # ours goes; theirs, tagged after our teardown began, stays and is named
    assert not exists(boto_session, "iam_role", "gpu-finops-x")
    assert exists(boto_session, "iam_role", "their-app")
    (theirs,) = json.loads(Path("resume.json").read_text())["unproven"]
    assert theirs["id"] == "their-app" and "after this run's teardown began" in theirs["looks_like_ours"]
    assert record.exists()  # not verified empty: the run has not ended
    iam.delete_role(RoleName="their-app")  # checked by hand and removed
    assert main(cli("resume")) == 0
    assert not record.exists()


def test_the_nightly_roles_bootstrap_state_proves_nothing(boto_session, capsys):
    """The CI role stack's state sits beside the cluster stacks' in a checkout where it was applied; its role
    and boundary, later given our project tag, are still never ours."""
    iam = boto_session.client("iam")
    ours = [{"Key": P, "Value": "gpu-finops"}]
    role = iam.create_role(RoleName="gpu-finops-ci", AssumeRolePolicyDocument=TRUST, Tags=ours)["Role"]
    doc = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    )
    boundary = iam.create_policy(PolicyName="gpu-finops-ci-boundary", PolicyDocument=doc, Tags=ours)["Policy"]
    state = Path(".state") / state_file(CI_ROLE_STACK)
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"version": 4, "resources": [
        {"mode": "managed", "type": "aws_iam_role", "name": "ci", "instances": [{"attributes": {
            "id": role["RoleName"], "arn": role["Arn"], "unique_id": role["RoleId"]}}]},
        {"mode": "managed", "type": "aws_iam_policy", "name": "b", "instances": [{"attributes": {
            "id": boundary["Arn"], "arn": boundary["Arn"], "policy_id": boundary["PolicyId"]}}]},
    ]}))  # fmt: skip
    begin_run_now()
    assert main(cli("destroy")) == 1  # tagged as ours and unproven: verify does not call the account empty
    capsys.readouterr()
    assert exists(boto_session, "iam_role", "gpu-finops-ci")
    assert boundary["Arn"] in {p["Arn"] for p in iam.list_policies(Scope="Local")["Policies"]}
    unproven = {
        r["id"]: r["looks_like_ours"] for r in json.loads(Path("destroy.json").read_text())["unproven"]
    }
    assert unproven["gpu-finops-ci"].startswith(f"tagged {P}=gpu-finops, but nothing shows we made it")
    assert boundary["Arn"] in unproven
    # near miss: the same role in the cluster stack's state is ours, and goes
    in_state("iam_role", "gpu-finops-ci", unique_id=role["RoleId"])
    assert main(cli("destroy")) == 1  # the boundary, still unproven, keeps verify red
    assert not exists(boto_session, "iam_role", "gpu-finops-ci")
