"""The VPC CNI (the `vpc-cni` EKS add-on) as our policies need it: its interfaces carry our tags.

The CNI makes and deletes the secondary interfaces of every node under the permissions boundary, which
lets it change or delete only what carries both our tags (iam/ci_boundary.py). On its own it tags an
interface with `cluster.k8s.amazonaws.com/name=<CLUSTER_NAME>` only, a tag any VPC CNI given that name
sets and anyone allowed to tag can set, so that tag is never ownership. Instead the
add-on is configured with `ADDITIONAL_ENI_TAGS`, our tags, and the CNI puts them on each interface it
creates, in the CreateNetworkInterface call itself.

Read in aws/amazon-vpc-cni-k8s, tag v1.23.0 (commit 0c65d58cf2b490014e7aa19aac172a032f4e520a; the same
code in v1.20.0), `pkg/awsutils/awsutils.go`:
- `loadAdditionalENITags` reads the environment variable `ADDITIONAL_ENI_TAGS` as a JSON object of
  string to string (`json.Unmarshal` into `map[string]string`; a duplicate key: the last wins); a value
  that does not parse is logged and ignored, so the CNI then makes interfaces with none of our tags and
  the boundary refuses it every change of them: the failure is loud (pods get no address), never a leak;
- it drops every key that *contains* `k8s.amazonaws.com` (`reservedTagKeyPrefix`, `strings.Contains`);
- `buildENITags` merges them with the CNI's own (`node.k8s.amazonaws.com/instance_id`, and with
  CLUSTER_NAME set `cluster.k8s.amazonaws.com/name` and `eks:eni:owner=amazon-vpc-cni`), `createENITags`
  adds `node.k8s.amazonaws.com/createdAt` and makes them the `TagSpecifications` of the
  `CreateNetworkInterfaceInput` (`createENIInput`): tagged on create, never an untagged moment;
- `TagENI` (called by ipamd on every attached interface but the trunk, `pkg/ipamd/ipamd.go`, and fatal
  at ipamd's start) adds whichever of those tags an interface lacks, our primary interfaces included: so
  our tags here must be exactly those the launch templates put on the primary interfaces (tested), and
  the CNI's own keys are the ones the boundary lets it add to what is ours (`CNI_RETAG_KEYS`).

EKS's add-on spells it in `configuration_values` as `{"env": {"ADDITIONAL_ENI_TAGS": "<JSON>"}}`: the
add-on's configuration schema (`aws eks describe-addon-configuration --addon-name vpc-cni`) declares
`env.ADDITIONAL_ENI_TAGS` a *string*, so the map goes in as JSON text. That schema was read from public
copies of it, not from the live API (no AWS account here): `make up`'s apply is where EKS validates it.
"""

from __future__ import annotations

import json

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import TAG_VPC_CNI_CLUSTER

ADDON = "vpc-cni"
ADDITIONAL_ENI_TAGS = "ADDITIONAL_ENI_TAGS"
RESERVED = "k8s.amazonaws.com"  # reservedTagKeyPrefix: a key containing it is dropped
# The keys the CNI itself sets on an interface, on create and later by TagENI (buildENITags, createENITags).
CNI_TAG_KEYS = (
    "node.k8s.amazonaws.com/instance_id",
    "node.k8s.amazonaws.com/createdAt",
    TAG_VPC_CNI_CLUSTER,
    "eks:eni:owner",
)


def additional_eni_tags(c: Config) -> dict[str, str]:
    """Our tags, as the CNI will put them on each interface it creates. A key the CNI would drop is an
    error here, not a silently untagged interface."""
    tags = dict(c.tags)
    dropped = sorted(k for k in tags if RESERVED in k)
    if dropped:
        raise ValueError(
            f"{ADDITIONAL_ENI_TAGS}: the VPC CNI drops tag keys containing {RESERVED!r} ({dropped}); "
            "rename the tag key"
        )
    return tags


def configuration_values(c: Config) -> str:
    """The vpc-cni add-on's `configuration_values`: our tags on every interface the CNI creates."""
    tags = json.dumps(additional_eni_tags(c), sort_keys=True, separators=(",", ":"))
    return json.dumps({"env": {ADDITIONAL_ENI_TAGS: tags}}, sort_keys=True)
