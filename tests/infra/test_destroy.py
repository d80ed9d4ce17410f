"""`infra destroy` goes on through every stack in reverse order after a failure, so a partial `up` never
leaves the cluster standing because the addons could not be destroyed; each failure is reported and the
exit is 1."""

from __future__ import annotations

import boto3
import pytest

import infra.deploy as deploy
from gpu_finops.facts.config import load_config
from infra.preflight import Check

C = load_config()


@pytest.fixture
def destroy_world(monkeypatch, tmp_path):
    """destroy() with Terraform recorded, and failing where `failing` says ("<stack> <command>")."""
    ran: list[str] = []
    failing: set[str] = set()

    def tf(d, *args):
        step = f"{d.name} {args[0]}" + (" (CR chart)" if any(a.startswith("-target=") for a in args) else "")
        ran.append(step)
        if step in failing:
            raise deploy.DeployError(f"terraform {step} failed")

    monkeypatch.setattr(deploy, "tf", tf)
    monkeypatch.setattr(deploy, "synth", lambda c, outdir, account=None: outdir)
    monkeypatch.setattr(deploy.Preflight, "credentials", lambda self: (Check("credentials", True, "x"), "1"))
    monkeypatch.setattr(deploy.Preflight, "account", lambda self, a: Check("account allowlist", True, a))
    monkeypatch.setattr(deploy, "karpenter_instances", lambda session, c: [])
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(deploy.boto3, "Session", lambda **kw: session)
    return ran, failing, tmp_path


EVERY_STEP = ["addons init", "addons destroy (CR chart)", "addons init", "addons destroy", "cluster init",
              "cluster destroy", "network init", "network destroy"]  # fmt: skip


def test_a_clean_destroy_runs_every_stack_in_reverse_and_exits_0(destroy_world, capsys):
    ran, _, out = destroy_world
    assert deploy.destroy(C, out) == 0
    assert ran == EVERY_STEP


def test_a_failed_addons_destroy_still_destroys_the_cluster_and_network(destroy_world, capsys):
    ran, failing, out = destroy_world
    failing.update({"addons destroy", "network destroy"})
    assert deploy.destroy(C, out) == 1
    assert ran == EVERY_STEP
    printed = capsys.readouterr().out
    assert "destroy failed at 2 steps (every other step ran):" in printed
    assert "  - addons: terraform addons destroy failed" in printed
    assert "  - network: terraform network destroy failed" in printed
    assert "fix each cause and rerun `make destroy`, then `make resume`" in printed


def test_a_failed_cr_chart_destroy_goes_on_to_the_stacks(destroy_world, capsys):
    ran, failing, out = destroy_world
    failing.add("addons destroy (CR chart)")
    assert deploy.destroy(C, out) == 1
    assert ran == EVERY_STEP
    assert "  - the CR chart: terraform addons destroy (CR chart) failed" in capsys.readouterr().out
