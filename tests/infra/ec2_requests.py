"""Turn one recorded EC2 call into the IAM requests it makes: one per resource it touches, each with that
resource's ARN and its tags as they were when the call was made (read from moto before the call runs)."""

from __future__ import annotations

from typing import Any

from iam.iam_eval import Request

ARN_TYPE = {
    "i": "instance",
    "eni": "network-interface",
    "vol": "volume",
    "lt": "launch-template",
    "sg": "security-group",
    "subnet": "subnet",
    "vpc": "vpc",
    "rtb": "route-table",
    "igw": "internet-gateway",
    "nat": "natgateway",
    "eipalloc": "elastic-ip",
}
ID_PARAMS = ("InstanceIds", "LaunchTemplateId", "NetworkInterfaceId", "NatGatewayId", "AllocationId",
             "InternetGatewayId", "VpcId", "RouteTableId", "SubnetId", "GroupId", "VolumeId")  # fmt: skip


def resource_ids(ec2: Any, params: dict[str, Any]) -> list[str]:
    """The ids of everything the call acts on; association and attachment ids resolved to both ends."""
    ids: list[str] = []
    for key in ID_PARAMS:
        value = params.get(key)
        ids += value if isinstance(value, list) else [value] if value else []
    if assoc := params.get("AssociationId"):
        for rt in ec2.describe_route_tables(
            Filters=[{"Name": "association.route-table-association-id", "Values": [assoc]}]
        )["RouteTables"]:
            ids.append(rt["RouteTableId"])
            ids += [a["SubnetId"] for a in rt.get("Associations", [])
                    if a.get("RouteTableAssociationId") == assoc and a.get("SubnetId")]  # fmt: skip
    if attachment := params.get("AttachmentId"):
        for eni in ec2.describe_network_interfaces(
            Filters=[{"Name": "attachment.attachment-id", "Values": [attachment]}]
        )["NetworkInterfaces"]:
            ids += [eni["NetworkInterfaceId"]] + ([eni["Attachment"]["InstanceId"]]
                                                  if eni["Attachment"].get("InstanceId") else [])  # fmt: skip
    return ids


def tags_of(ec2: Any, rid: str) -> dict[str, str]:
    found = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [rid]}])["Tags"]
    return {t["Key"]: t["Value"] for t in found}


def requests_for(ec2: Any, action: str, params: dict[str, Any], region: str, account: str) -> list[Request]:
    """One request per resource; an id whose type is unknown raises (the test cannot vouch for it)."""
    out = []
    for rid in resource_ids(ec2, params):
        kind = ARN_TYPE.get(rid.split("-", 1)[0])
        if kind is None:
            raise ValueError(f"{action}: no ARN type known for id {rid!r}; add its prefix to ARN_TYPE")
        context = {"aws:RequestedRegion": region}
        context |= {f"aws:ResourceTag/{k}": v for k, v in tags_of(ec2, rid).items()}
        out.append(Request(action, f"arn:aws:ec2:{region}:{account}:{kind}/{rid}", context))
    if not out:
        raise ValueError(f"{action}: no resource id found in {sorted(params)}")
    return out
