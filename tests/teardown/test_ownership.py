"""Ownership is decided by tags, never by name: each rule where it holds and each near-miss; the
foreign-role case; and the `cluster_name: demo` case, with teardown reading infra's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_finops.cli import main
from teardown.engine import survey
from teardown.model import Context, TeardownConfig
from tests.teardown.account import TRUST, build, foreign_still_there, in_state

ACCOUNT = "123456789012"
CONFIG = TeardownConfig(region="us-east-1", allowed_accounts=(ACCOUNT,))  # cluster and project gpu-finops
P, C = "gpu-finops.io/project", "gpu-finops.io/cluster"


@pytest.mark.parametrize(
    ("tags", "want"),
    [
        ({P: "gpu-finops"}, f"{P}=gpu-finops"),
        ({P: "gpu-finops", C: "gpu-finops"}, f"{P}=gpu-finops"),
        ({C: "gpu-finops"}, f"{C}=gpu-finops"),
        ({"kubernetes.io/cluster/gpu-finops": "owned"}, "kubernetes.io/cluster/gpu-finops=owned"),
        ({"karpenter.sh/managed-by": "gpu-finops"}, "karpenter.sh/managed-by=gpu-finops"),
        # near-misses: each looks close to ours and is not
        ({P: "other-project"}, None),
        ({P: "gpu-finops", C: "demo"}, None),  # our project, another cluster of it
        ({"cluster.k8s.amazonaws.com/name": "demo"}, None),
        ({"cluster.k8s.amazonaws.com/name": "gpu-finops"}, None),  # the VPC CNI's: anyone's to set
        ({"kubernetes.io/cluster/gpu-finops": "shared"}, None),  # shared subnets are not ours by that tag
        ({"kubernetes.io/cluster/other": "owned", P: "gpu-finops"}, None),
        # another cluster's tag wins beside our cluster's own (a volume of theirs given ours too)
        ({"kubernetes.io/cluster/other": "owned", "kubernetes.io/cluster/gpu-finops": "owned"}, None),
        (
            {
                "kubernetes.io/cluster/other": "owned",
                "kubernetes.io/cluster/gpu-finops": "owned",
                P: "gpu-finops",
            },
            None,
        ),
        (
            {"kubernetes.io/cluster/other": "shared", P: "gpu-finops"},
            f"{P}=gpu-finops",
        ),  # shared: not a claim
        ({"eks:eks-cluster-name": "other", P: "gpu-finops"}, None),
        ({"gpu-finops.io/ci": "bootstrap"}, None),  # the nightly's role
        ({"Name": "gpu-finops"}, None),
        ({}, None),
    ],
)
def test_tags_decide(tags, want):
    assert CONFIG.owns_tags(tags) == want


@pytest.mark.parametrize(
    "tags, tagged_as",
    [
        ({C: "gpu-finops", "kubernetes.io/cluster/zz": "owned"}, f"{C}=gpu-finops"),
        ({"kubernetes.io/cluster/gpu-finops": "owned", P: "other"}, "kubernetes.io/cluster/gpu-finops=owned"),
        ({"eks:eks-cluster-name": "gpu-finops", C: "demo"}, "eks:eks-cluster-name=gpu-finops"),
    ],
)
def test_tags_naming_our_cluster_beside_a_foreign_one_are_never_deleted_and_never_invisible(tags, tagged_as):
    r = CONFIG.classify("ec2_instance", "i-1", tags, None)
    assert r is not None and not r.ours and r.unproven and r.tagged_as == tagged_as
    assert r.lookalike.startswith(f"tagged {tagged_as} and ")


def test_another_cluster_of_our_project_is_not_ours_and_not_our_leftover():
    assert CONFIG.classify("ec2_instance", "i-1", {P: "gpu-finops", C: "demo"}, None) is None


def test_a_name_alone_only_marks_a_lookalike():
    ours = CONFIG.classify("iam_role", "gpu-finops-x", {P: "gpu-finops"}, "gpu-finops-x")
    assert ours.ours and ours.owned_by == f"{P}=gpu-finops" and not ours.lookalike
    foreign = CONFIG.classify("iam_role", "gpu-finops-x", {P: "other"}, "gpu-finops-x")
    assert not foreign.ours
    assert foreign.lookalike == f"name 'gpu-finops-x' matches ours, but tagged {P}=other"
    untagged = CONFIG.classify("iam_role", "gpu-finops-x", {}, "gpu-finops-x")
    assert untagged.lookalike == (
        f"name 'gpu-finops-x' matches ours, but none of our tags ({P}=gpu-finops or the cluster's)"
    )
    for name in ("gpu-finops", "gpu-finops_1", "gpu-finops/collector", "/aws/eks/gpu-finops/cluster"):
        assert CONFIG.classify("t", name, {}, name).lookalike, name
    for name in ("gpu-finopsx", "nightly-gpu-finops", "other-gpu-finops-role", None):
        assert CONFIG.classify("t", "id", {}, name) is None, name


def cli(action: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "teardown", action, "--journal", str(tmp_path / "j.jsonl"), "--report", str(tmp_path / f"{action}.json"),
        "--wait", "5", *(["--yes"] if action in ("destroy", "resume") else []), *extra,
    ]  # fmt: skip


def test_foreign_role_named_like_ours_survives_destroy_and_is_reported(
    boto_session, tmp_path, capsys, monkeypatch
):
    acct = build(boto_session)
    iam = boto_session.client("iam")
    # near-miss beside it: the same kind of name, tagged as ours, is deleted
    iam.create_role(
        RoleName="gpu-finops-tagged", AssumeRolePolicyDocument=TRUST, Tags=[{"Key": P, "Value": "gpu-finops"}]
    )
    monkeypatch.setenv("GPU_FINOPS_ALLOWED_ACCOUNTS", ACCOUNT)
    assert main(cli("plan", tmp_path)) == 0
    out = capsys.readouterr().out
    assert "named like ours, none of our tags: 6 (left alone)" in out
    assert f"name 'gpu-finops-reporting' matches ours, but tagged {P}=other-project" in out
    assert main(cli("destroy", tmp_path)) == 0
    out = capsys.readouterr().out
    assert "verified empty" in out and "6 named like ours left alone" in out
    roles = {r["RoleName"] for r in iam.list_roles()["Roles"]}
    assert "gpu-finops-reporting" in roles and "gpu-finops-tagged" not in roles
    assert foreign_still_there(boto_session, acct) == {}
    assert main(cli("verify", tmp_path)) == 0
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["left"] == []
    reported = {(r["type"], r["id"]): r["looks_like_ours"] for r in report["looks_like_ours"]}
    assert reported[("iam_role", "gpu-finops-reporting")] == (
        f"name 'gpu-finops-reporting' matches ours, but tagged {P}=other-project"
    )
    assert {k for k in reported} == {(t, i) for t, ids in acct.lookalikes.items() for i in ids}


def demo_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"region: us-east-1\nallowed_accounts: ['{ACCOUNT}']\ncluster_name: demo\n")
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(path))
    monkeypatch.delenv("GPU_FINOPS_ALLOWED_ACCOUNTS", raising=False)


def leak_demo_eni(boto_session) -> str:
    """A VPC-CNI ENI left `available` by cluster demo's dead node, in demo's VPC, tagged as demo's CNI
    tags it: its own tag and demo's (ADDITIONAL_ENI_TAGS, iam/vpc_cni.py)."""
    ec2 = boto_session.client("ec2")
    ours = [{"Key": P, "Value": "gpu-finops"}, {"Key": C, "Value": "demo"}]
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": ours}])
    subnet = ec2.create_subnet(
        VpcId=vpc["Vpc"]["VpcId"],
        CidrBlock="10.7.1.0/24",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": ours}],
    )["Subnet"]["SubnetId"]
    eni = ec2.create_network_interface(
        SubnetId=subnet,
        Description="aws-K8S-i-0aaaabbbbccccdddd",
        TagSpecifications=[
            {
                "ResourceType": "network-interface",
                "Tags": [{"Key": "cluster.k8s.amazonaws.com/name", "Value": "demo"}, *ours],
            }
        ],
    )
    in_state("vpc", vpc["Vpc"]["VpcId"])  # demo's `make up` made them
    in_state("subnet", subnet)  # demo's `make up` made them
    return eni["NetworkInterface"]["NetworkInterfaceId"]


def test_cluster_name_demo_from_config_finds_the_leaked_cni_eni(boto_session, tmp_path, capsys, monkeypatch):
    demo_config(tmp_path, monkeypatch)
    eni = leak_demo_eni(boto_session)
    assert main(cli("verify", tmp_path)) == 1  # no --cluster, no --region, no --allow-account: the config's
    out = capsys.readouterr().out
    assert "NOT EMPTY: 3 resource(s) of ours left" in out and eni in out and "verified empty" not in out
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["cluster"] == "demo" and ("network_interface", eni) in {
        (r["type"], r["id"]) for r in report["left"]
    }
    assert main(cli("plan", tmp_path, "--out", str(tmp_path / "plan.json"))) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["cluster"] == "demo" and f"network_interface/{eni}" in {
        f"{r['type']}/{r['id']}" for r in plan["resources"]
    }
    assert main(cli("destroy", tmp_path)) == 0
    assert "verified empty" in capsys.readouterr().out
    assert boto_session.client("ec2").describe_network_interfaces()["NetworkInterfaces"] == []


def test_cluster_flag_overrides_the_config_and_leaves_the_other_cluster_alone(
    boto_session, tmp_path, capsys, monkeypatch
):
    demo_config(tmp_path, monkeypatch)
    eni = leak_demo_eni(boto_session)
    # near-miss: the same account for cluster gpu-finops: demo's resources (same project) are not its own
    assert main(cli("destroy", tmp_path, "--cluster", "gpu-finops")) == 0
    assert "verified empty: no resource of gpu-finops/gpu-finops" in capsys.readouterr().out
    assert [
        n["NetworkInterfaceId"]
        for n in boto_session.client("ec2").describe_network_interfaces()["NetworkInterfaces"]
    ] == [eni]
    demo = survey(Context(TeardownConfig("us-east-1", "demo"), boto_session)).ours
    assert f"network_interface/{eni}" in {r.key for r in demo}


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (
            "",
            "'' is not a cluster name: lowercase letters, digits and '-', 2-39 characters, starting with a letter",
        ),
        ("-demo", "'-demo' is not a cluster name"),
        ("de mo", "'de mo' is not a cluster name"),
        ("My_Cluster-1", "'My_Cluster-1' is not a cluster name"),  # EKS would take it; our config does not
        ("d" * 40, f"'{'d' * 40}' is not a cluster name"),
    ],
)
def test_cluster_flag_is_validated(flag, message, tmp_path, capsys):
    """--cluster follows the same rule as the config's cluster_name (gpu_finops/facts/arguments.py): teardown only
    ever removes clusters our config could have named."""
    with pytest.raises(SystemExit) as exc:
        main(cli("verify", tmp_path, f"--cluster={flag}"))
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_valid_cluster_name_other_than_the_configs_is_accepted(boto_session, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_FINOPS_ALLOWED_ACCOUNTS", ACCOUNT)
    assert main(cli("verify", tmp_path, "--cluster", "demo-2")) == 0


def test_a_config_named_but_missing_is_refused_with_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(tmp_path / "nope.yaml"))
    assert main(cli("verify", tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nope.yaml'} (named by GPU_FINOPS_CONFIG) does not exist" in err


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--region=banana", "argument --region: 'banana' is not an AWS region"),
        (
            "--region=us-eats-1",
            "argument --region: 'us-eats-1' is not an AWS region; did you mean 'us-east-1'?",
        ),
        ("--region=", "argument --region: '' is not an AWS region"),
        ("--project= ", "argument --project: must not be empty, got ' '"),
    ],
)
def test_region_and_project_flags_are_validated(flag, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(cli("verify", tmp_path, flag))
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_resource_retagged_away_after_the_plan_is_not_deleted(boto_session, tmp_path):
    from teardown.engine import destroy, inventory
    from teardown.journal import Journal

    build(boto_session, storage=False)
    ctx = Context(CONFIG, boto_session)
    plan = inventory(ctx)
    assert "iam_role/gpu-finops-karpenter-node" in {r.key for r in plan}
    iam = boto_session.client("iam")
    iam.tag_role(RoleName="gpu-finops-karpenter-node", Tags=[{"Key": P, "Value": "other-project"}])
    journal = Journal(tmp_path / "j.jsonl")
    destroy(ctx, plan, journal, wait_for=5, poll=0.2)
    assert iam.get_role(RoleName="gpu-finops-karpenter-node")["Role"]
    (skipped,) = [e for e in journal.events() if e["event"] == "skipped"]
    assert skipped == {
        **skipped,
        "key": "iam_role/gpu-finops-karpenter-node",
        "note": f"looks like ours, not tagged as ours: tagged {C}=gpu-finops and {P}=other-project: tags naming "
        "our cluster and someone else's; never deleted",
    }
