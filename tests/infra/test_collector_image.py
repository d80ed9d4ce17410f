"""The collector's image: `make up` checks its tag is in ECR before the addons stack (whose collector
release would otherwise wait and roll back atomically, taking the NodePools and queues with it), pushes a
locally built image of that name, and otherwise stops saying exactly how to build and push it."""

from __future__ import annotations

from types import SimpleNamespace

import boto3
import pytest
from botocore.stub import Stubber

from gpu_finops.facts.config import load_config
from infra.deploy import DeployError, ensure_collector_image
from infra.preflight import Preflight, collector_image_ref, push_commands

C = load_config()
ACCOUNT = "123456789012"
REPO, TAG = C.collector_repository, C.versions.collector_image_tag
REF = f"{ACCOUNT}.dkr.ecr.{C.region}.amazonaws.com/{REPO}:{TAG}"
QUERY = {"repositoryName": REPO, "imageIds": [{"imageTag": TAG}]}
FOUND = {"imageDetails": [{"repositoryName": REPO, "imageTags": [TAG], "imageDigest": "sha256:" + "0" * 64}]}


class Session:
    """A boto3 session whose clients are stubbed: one ECR and one STS client, with their Stubbers."""

    def __init__(self):
        real = boto3.Session(region_name=C.region, aws_access_key_id="x", aws_secret_access_key="x")
        self.clients = {"ecr": real.client("ecr"), "sts": real.client("sts")}
        self.stubs = {k: Stubber(v) for k, v in self.clients.items()}
        self.stubs["sts"].add_response(
            "get_caller_identity",
            {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:role/x", "UserId": "x"},
        )

    def client(self, name, **_):
        return self.clients[name]

    def image(self, found: bool | str):
        if found is True:
            self.stubs["ecr"].add_response("describe_images", FOUND, QUERY)
        else:
            self.stubs["ecr"].add_client_error("describe_images", found or "ImageNotFoundException", "x", 400)

    def __enter__(self):
        for s in self.stubs.values():
            s.activate()
        return self

    def __exit__(self, *exc):
        for s in self.stubs.values():
            s.deactivate()


def test_the_image_ref_is_the_one_the_addons_stack_pulls():
    assert collector_image_ref(C, ACCOUNT) == REF
    assert push_commands(C, ACCOUNT) == [
        f"aws ecr get-login-password --region {C.region} | docker login --username AWS --password-stdin "
        f"{ACCOUNT}.dkr.ecr.{C.region}.amazonaws.com",
        f"docker build -t {REF} .",
        f"docker push {REF}",
    ]


def test_a_tag_in_ecr_passes():
    with Session() as s:
        s.image(True)
        check = Preflight(C, s).collector_image(ACCOUNT)
    assert check.ok and check.detail == f"{REPO}:{TAG} is in ECR"


def test_a_missing_tag_says_how_to_build_and_push_it():
    with Session() as s:
        s.image(False)
        check = Preflight(C, s).collector_image(ACCOUNT)
    assert not check.ok
    assert check.detail == (
        f"{REPO}:{TAG} is not in ECR (the collector's release would wait and roll back, taking the NodePools "
        "and queues with it); build and push it from the repository root: "
        + " ; ".join(push_commands(C, ACCOUNT))
    )


def test_a_missing_repository_says_the_cluster_stack_creates_it():
    with Session() as s:
        s.image("RepositoryNotFoundException")
        check = Preflight(C, s).collector_image(ACCOUNT)
    assert not check.ok and check.detail.startswith(
        f"ECR repository {REPO} does not exist: the cluster stack creates it (`make up` applies network and "
        "cluster first); then build and push it"
    )


def recorder(inspect_rc: int):
    ran: list[list[str]] = []

    def run(cmd, **kw):
        ran.append(cmd)
        if cmd[:3] == ["docker", "image", "inspect"]:
            return SimpleNamespace(returncode=inspect_rc)
        return SimpleNamespace(returncode=0, stdout="password")

    return ran, run


def test_up_goes_on_when_the_tag_is_there():
    ran, run = recorder(1)
    with Session() as s:
        s.image(True)
        ensure_collector_image(C, s, run=run)
    assert ran == []


def test_up_pushes_a_locally_built_image_then_checks_again():
    ran, run = recorder(0)
    with Session() as s:
        s.image(False)
        s.image(True)
        ensure_collector_image(C, s, run=run)
    assert ran == [
        ["docker", "image", "inspect", REF],
        ["aws", "ecr", "get-login-password", "--region", C.region],
        [
            "docker",
            "login",
            "--username",
            "AWS",
            "--password-stdin",
            f"{ACCOUNT}.dkr.ecr.{C.region}.amazonaws.com",
        ],
        ["docker", "push", REF],
    ]


def test_up_stops_before_the_addons_when_there_is_no_image_anywhere():
    ran, run = recorder(1)
    with Session() as s, pytest.raises(DeployError) as err:
        s.image(False)
        ensure_collector_image(C, s, run=run)
    assert ran == [["docker", "image", "inspect", REF]]
    assert str(err.value).startswith(f"the addons stack was not applied: {REPO}:{TAG} is not in ECR")
    assert f"docker push {REF}" in str(err.value)
    assert str(err.value).endswith("then rerun `make up` (network and cluster are up)")


def test_up_checks_the_image_after_the_cluster_stack_and_before_the_addons(monkeypatch, tmp_path):
    import infra.deploy as deploy

    order: list[str] = []
    monkeypatch.setattr(deploy, "report", lambda checks: True)
    monkeypatch.setattr(deploy.Preflight, "run", lambda self, **kw: [])
    monkeypatch.setattr(deploy, "synth", lambda c, outdir, account=None: outdir)
    monkeypatch.setattr(deploy, "tf", lambda d, *args: order.append(f"{d.name} {args[0]}"))
    monkeypatch.setattr(deploy, "ensure_collector_image", lambda c, session: order.append("collector image"))
    monkeypatch.setattr(deploy, "write_kubeconfig", lambda c: tmp_path / "kubeconfig")
    assert deploy.up(C, tmp_path) == 0
    assert order == ["network init", "network apply", "cluster init", "cluster apply", "collector image",
                     "addons init", "addons apply"]  # fmt: skip
