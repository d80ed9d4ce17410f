"""What `infra up` and `infra destroy` read from Terraform's machine-readable UI: each event printed in
Terraform's own words, each diagnostic kept with the resource it names, the changes a plan makes and the
resources an apply completed; a failure names every resource that failed and why."""

from __future__ import annotations

import json
import sys

import pytest

from infra import deploy


def event(**fields) -> str:
    return json.dumps(fields) + "\n"


def test_diagnostics_planned_changes_and_completed_resources_are_kept_in_order():
    run = deploy.TfRun(["tofu", "apply"])
    lines = [
        event(**{"@message": "aws_vpc.vpc: Plan to create"}, type="planned_change",
              change={"resource": {"addr": "aws_vpc.vpc"}, "action": "create"}),
        event(**{"@message": "aws_vpc.vpc: Creation complete after 1s"}, type="apply_complete",
              hook={"resource": {"addr": "aws_vpc.vpc"}}),
        event(**{"@message": "Error: creating EKS Add-On"}, type="diagnostic",
              diagnostic={"severity": "error", "summary": "creating EKS Add-On", "detail": "404\nmore",
                          "address": "aws_eks_addon.x"}),
        event(**{"@message": "Warning: overrides"}, type="diagnostic",
              diagnostic={"severity": "warning", "summary": "overrides", "detail": ""}),
        "panic: not JSON\n",
    ]  # fmt: skip
    said = [deploy.read_ui(line, run) for line in lines]
    assert said == [
        "aws_vpc.vpc: Plan to create",
        "aws_vpc.vpc: Creation complete after 1s",
        "Error: creating EKS Add-On\n    404\n    more",
        "Warning: overrides",
        "panic: not JSON",
    ]
    assert run.planned == [("create", "aws_vpc.vpc")] and run.completed == ["aws_vpc.vpc"]
    assert [d.line() for d in run.errors] == ["aws_eks_addon.x: creating EKS Add-On (404)"]
    assert [d.severity for d in run.diagnostics] == ["error", "warning"]


def test_a_failed_apply_raises_naming_each_failed_resource_and_keeps_the_run(monkeypatch, tmp_path, capsys):
    script = tmp_path / "tofu"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "print(json.dumps({'@message': 'Error: boom', 'type': 'diagnostic', 'diagnostic': "
        "{'severity': 'error', 'summary': 'boom', 'detail': 'why', 'address': 'aws_sqs_queue.q'}}))\n"
        "sys.exit(1)\n"
    )
    script.chmod(0o755)
    monkeypatch.setattr(deploy, "terraform_bin", lambda: str(script))
    with pytest.raises(deploy.TfFailed) as failed:
        deploy.tf(tmp_path, "apply", "-auto-approve")
    assert failed.value.run.command == [str(script), f"-chdir={tmp_path}", "apply", "-auto-approve", "-json"]
    assert "failed (1 errors: aws_sqs_queue.q: boom (why)); fix the cause and rerun" in str(failed.value)
    assert "Error: boom\n    why" in capsys.readouterr().out


def test_a_plan_with_changes_is_not_a_failure_when_its_code_is_allowed(monkeypatch, tmp_path):
    script = tmp_path / "tofu"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(2)\n")
    script.chmod(0o755)
    monkeypatch.setattr(deploy, "terraform_bin", lambda: str(script))
    assert deploy.tf(tmp_path, "plan", "-detailed-exitcode", ok=(0, 2)).returncode == 2
    with pytest.raises(deploy.TfFailed, match=r"failed \(0 errors: see its output above\)"):
        deploy.tf(tmp_path, "plan", "-detailed-exitcode")
