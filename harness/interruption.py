"""Spot interruptions as the acts deliver them, one way per target, both ending in Karpenter's interruption
queue:

- AWS: an FIS experiment (`aws:ec2:send-spot-instance-interruptions`) aimed at the workload's own instance;
  EC2 emits the warning, EventBridge routes it to the queue. The act makes a one-off experiment template
  whose only target is that instance's ARN (the stack's template picks any tagged instance), starts it,
  reads the experiment to its end, and deletes the template.
- local: the same EventBridge event, put on the queue (an SQS queue on the local moto server) by the act,
  addressed to the kwok node's EC2-shaped instance id (`kwok_instance_id`, the id our Karpenter main
  indexes NodeClaims and Nodes by).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from gpu_finops.facts.kube_keys import LABEL_ZONE
from gpu_finops.facts.names import TAG_PROJECT

SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
FIS_ACTION = "aws:ec2:send-spot-instance-interruptions"
FIS_TARGET = "aws:ec2:spot-instance"
NOTICE = "PT2M"  # FIS's durationBeforeInterruption: the two-minute warning EC2 gives
FIS_DONE = ("completed", "stopped", "failed", "cancelled")


def kwok_instance_id(node_name: str) -> str:
    """The EC2-shaped instance id the local Karpenter gives a kwok node (local/build/unified/karpenter-kwok/main.go):
    "i-" + the first 17 hex digits of sha256 of the node name."""
    return "i-" + hashlib.sha256(node_name.encode()).hexdigest()[:17]


def spot_warning_event(
    instance_id: str, region: str, zone: str, account: str, at: datetime | None = None
) -> dict[str, Any]:
    """The EventBridge event EC2 sends two minutes before it reclaims a spot instance, as FIS triggers it."""
    at = at or datetime.now(UTC)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": SPOT_WARNING,
        "source": "aws.ec2",
        "account": account,
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:ec2:{zone}:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, "instance-action": "terminate"},
    }


@dataclass(frozen=True)
class Delivery:
    """What the act did to interrupt the instance, and how it ended."""

    how: str  # "fis" | "sqs"
    instance_id: str
    sent_at: datetime
    state: str  # FIS: the experiment's final status; SQS: "delivered"
    reason: str = ""  # FIS: the experiment's status reason (why it failed)
    ref: str = ""  # the experiment id or the SQS message id


class Interrupter(Protocol):
    def not_ready(self) -> str | None: ...

    def interrupt(self, node: Any) -> Delivery: ...

    def finish(self, delivery: Delivery, timeout: float) -> Delivery: ...


class SqsInterrupter:
    """Local target: put the warning on Karpenter's interruption queue ourselves."""

    def __init__(self, sqs: Any, queue: str, region: str, account: str = "000000000000"):
        self.sqs, self.queue, self.region, self.account = sqs, queue, region, account

    def not_ready(self) -> str | None:
        try:
            self.sqs.get_queue_url(QueueName=self.queue)
        except Exception as exc:
            return (
                f"the interruption queue {self.queue!r} is not reachable on the local AWS endpoint "
                f"({type(exc).__name__}: {str(exc)[:200]}): is the local target up (`make local-up`)?"
            )
        return None

    def interrupt(self, node: Any) -> Delivery:
        instance = kwok_instance_id(node.name)
        zone = node.labels.get(LABEL_ZONE, self.region + "a")
        url = self.sqs.get_queue_url(QueueName=self.queue)["QueueUrl"]
        sent_at = datetime.now(UTC)
        event = spot_warning_event(instance, self.region, zone, self.account, sent_at)
        out = self.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(event))
        return Delivery("sqs", instance, sent_at, "delivered", ref=out["MessageId"])

    def finish(self, delivery: Delivery, timeout: float) -> Delivery:
        return delivery


class FisInterrupter:
    """AWS: an FIS experiment whose only target is the workload's instance."""

    def __init__(self, fis: Any, project: str, region: str, account: str):
        self.fis, self.project, self.region, self.account = fis, project, region, account

    def stack_template(self) -> dict[str, Any] | None:
        for t in self.fis.list_experiment_templates()["experimentTemplates"]:
            if (t.get("tags") or {}).get(TAG_PROJECT) == self.project:
                return self.fis.get_experiment_template(id=t["id"])["experimentTemplate"]
        return None

    def not_ready(self) -> str | None:
        if self.stack_template() is None:
            return (
                f"no FIS experiment template tagged {TAG_PROJECT}={self.project} in {self.region}: "
                "is the cluster stack applied (`make up`)?"
            )
        return None

    def interrupt(self, node: Any) -> Delivery:
        stack = self.stack_template()
        if stack is None:
            raise RuntimeError(f"the FIS template of project {self.project} disappeared")
        instance = node.instance_id
        if not instance:
            raise RuntimeError(f"node {node.name} has no EC2 instance id in its providerID")
        arn = f"arn:aws:ec2:{self.region}:{self.account}:instance/{instance}"
        token = uuid.uuid4().hex
        template = self.fis.create_experiment_template(
            clientToken=token,
            description=f"gpu-finops act 5: interrupt {instance} ({node.name})",
            roleArn=stack["roleArn"],
            stopConditions=[{"source": "none"}],
            targets={"instance": {"resourceType": FIS_TARGET, "resourceArns": [arn], "selectionMode": "ALL"}},
            actions={
                "interrupt": {
                    "actionId": FIS_ACTION,
                    "parameters": {"durationBeforeInterruption": NOTICE},
                    "targets": {"SpotInstances": "instance"},
                }
            },
            tags={TAG_PROJECT: self.project, "Name": f"act5-{instance}"},
        )["experimentTemplate"]
        sent_at = datetime.now(UTC)
        try:
            exp = self.fis.start_experiment(experimentTemplateId=template["id"], clientToken=token)
        finally:
            self._template = template["id"]
        e = exp["experiment"]
        return Delivery("fis", instance, sent_at, e["state"]["status"], e["state"].get("reason", ""), e["id"])

    def finish(self, delivery: Delivery, timeout: float) -> Delivery:
        """Read the experiment until it ends; delete the one-off template."""
        deadline = time.monotonic() + timeout
        state = {"status": delivery.state, "reason": delivery.reason}
        try:
            while state["status"] not in FIS_DONE and time.monotonic() < deadline:
                time.sleep(5)
                state = self.fis.get_experiment(id=delivery.ref)["experiment"]["state"]
        finally:
            template = getattr(self, "_template", None)
            if template:
                self.fis.delete_experiment_template(id=template)
        return Delivery(
            delivery.how, delivery.instance_id, delivery.sent_at, state["status"], state.get("reason", ""),
            delivery.ref,
        )  # fmt: skip
