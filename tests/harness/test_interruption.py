"""Spot interruptions as the acts deliver them: the EventBridge event's shape, the kwok instance id, the SQS
path against moto, and the FIS path with AWS-shaped responses (moto has no FIS)."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace as NS

import boto3
import pytest
from botocore.stub import ANY, Stubber

from harness.interruption import FisInterrupter, SqsInterrupter, kwok_instance_id, spot_warning_event

MAIN_GO = Path(__file__).resolve().parents[2] / "local" / "build" / "unified" / "karpenter-kwok" / "main.go"


def test_kwok_instance_ids_are_ec2_shaped_and_computed_as_the_karpenter_main_does():
    iid = kwok_instance_id("kwok-gpu-spot-abc-123")
    assert re.fullmatch(r"i-[0-9a-f]{17}", iid)
    assert iid == "i-" + hashlib.sha256(b"kwok-gpu-spot-abc-123").hexdigest()[:17]
    go = MAIN_GO.read_text()  # the Go side of the same mapping (the live act 5 proves they agree)
    assert "sha256.Sum256([]byte(name))" in go and '"i-" + hex.EncodeToString(sum[:])[:17]' in go


def test_the_event_is_the_one_ec2_sends_two_minutes_before_reclaiming():
    e = spot_warning_event("i-0123456789abcdef0", "us-east-1", "us-east-1a", "123456789012",
                           datetime(2026, 11, 30, 12, 0, tzinfo=UTC))  # fmt: skip
    assert e["source"] == "aws.ec2" and e["detail-type"] == "EC2 Spot Instance Interruption Warning"
    assert e["detail"] == {"instance-id": "i-0123456789abcdef0", "instance-action": "terminate"}
    assert e["resources"] == ["arn:aws:ec2:us-east-1a:instance/i-0123456789abcdef0"]
    assert e["time"] == "2026-11-30T12:00:00Z" and e["account"] == "123456789012"


def test_sqs_path_puts_the_event_on_the_queue(aws_env):
    sqs = boto3.client("sqs", region_name="us-east-1")
    sqs.create_queue(QueueName="gpu-finops-interruption")
    i = SqsInterrupter(sqs, "gpu-finops-interruption", "us-east-1")
    assert i.not_ready() is None
    node = NS(name="kwok-n1", labels={"topology.kubernetes.io/zone": "us-east-1b"})
    d = i.interrupt(node)
    assert d.how == "sqs" and d.state == "delivered" and d.instance_id == kwok_instance_id("kwok-n1")
    url = sqs.get_queue_url(QueueName="gpu-finops-interruption")["QueueUrl"]
    (msg,) = sqs.receive_message(QueueUrl=url)["Messages"]
    body = json.loads(msg["Body"])
    assert body["detail"]["instance-id"] == d.instance_id and body["resources"][0].startswith(
        "arn:aws:ec2:us-east-1b:"
    )


def test_sqs_path_says_when_the_queue_is_missing(aws_env):
    i = SqsInterrupter(boto3.client("sqs", region_name="us-east-1"), "nope", "us-east-1")
    assert "the interruption queue 'nope' is not reachable" in i.not_ready()


STACK = {
    "id": "EXTstack",
    "roleArn": "arn:aws:iam::123456789012:role/gpu-finops-fis",
    "tags": {"gpu-finops.io/project": "gpu-finops"},
}


def fis_stubbed(final: dict) -> tuple[FisInterrupter, Stubber]:
    fis = boto3.client("fis", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(fis)
    stub.add_response(
        "list_experiment_templates", {"experimentTemplates": [{"id": STACK["id"], "tags": STACK["tags"]}]}
    )
    stub.add_response("get_experiment_template", {"experimentTemplate": STACK}, {"id": "EXTstack"})
    stub.add_response(
        "create_experiment_template",
        {"experimentTemplate": {"id": "EXTact5"}},
        {
            "clientToken": ANY,
            "description": ANY,
            "roleArn": STACK["roleArn"],
            "stopConditions": [{"source": "none"}],
            "targets": {
                "instance": {
                    "resourceType": "aws:ec2:spot-instance",
                    "resourceArns": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],
                    "selectionMode": "ALL",
                }
            },
            "actions": {
                "interrupt": {
                    "actionId": "aws:ec2:send-spot-instance-interruptions",
                    "parameters": {"durationBeforeInterruption": "PT2M"},
                    "targets": {"SpotInstances": "instance"},
                }
            },
            "tags": ANY,
        },
    )
    stub.add_response(
        "start_experiment",
        {"experiment": {"id": "EXP1", "state": {"status": "initiating"}}},
        {"experimentTemplateId": "EXTact5", "clientToken": ANY},
    )
    stub.add_response("get_experiment", {"experiment": {"id": "EXP1", "state": final}}, {"id": "EXP1"})
    stub.add_response(
        "delete_experiment_template", {"experimentTemplate": {"id": "EXTact5"}}, {"id": "EXTact5"}
    )
    stub.activate()
    return FisInterrupter(fis, "gpu-finops", "us-east-1", "123456789012"), stub


@pytest.mark.parametrize(
    "final",
    [{"status": "completed"}, {"status": "failed", "reason": "Target resolution returned empty set"}],
)
def test_fis_aims_at_the_workloads_own_instance_reads_the_end_and_removes_its_template(final, monkeypatch):
    monkeypatch.setattr("harness.interruption.time.sleep", lambda s: None)
    i, stub = fis_stubbed(final)
    d = i.interrupt(NS(name="ip-10-0-1-2", instance_id="i-0abc"))
    assert d.how == "fis" and d.state == "initiating" and d.ref == "EXP1"
    done = i.finish(d, timeout=60)
    assert (done.state, done.reason) == (final["status"], final.get("reason", ""))
    stub.assert_no_pending_responses()


def test_fis_path_says_when_the_stack_has_no_template():
    fis = boto3.client("fis", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(fis) as stub:
        stub.add_response("list_experiment_templates", {"experimentTemplates": []})
        assert (
            "no FIS experiment template tagged gpu-finops.io/project=gpu-finops"
            in FisInterrupter(fis, "gpu-finops", "us-east-1", "1").not_ready()
        )
