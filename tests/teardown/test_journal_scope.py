"""The journal is kept forever and shared by every cluster, region and account, so a plan entry proves a
resource only for the account, region and cluster it was planned for,
and a name-identified resource (a table, a cluster, a log group, ...) only when AWS's unique id, else its
creation time, is the one planned; the recorded provenance string is shown, never trusted. Terraform state
ids likewise prove nothing for a resource whose ARN names another region or account."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_finops.cli import main
from gpu_finops.facts.timestamps import iso
from teardown.journal import Journal
from tests.teardown.account import in_state
from tests.teardown.test_provenance import ACCOUNT, begin_run_now, cli

TAGS = [{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}]
TABLE = "gpu-finops-cost"
NOT_PROVEN = (
    "tagged gpu-finops.io/project=gpu-finops, but nothing shows we made it: not in our Terraform state "
    "(.state) or journal, and"
)


def table(session, region: str) -> str:
    """The table, made before the run record in `west.json` (if any): its creation time, as listed."""
    ddb = session.client("dynamodb", region_name=region)
    desc = ddb.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST", Tags=TAGS,
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
    )["TableDescription"]  # fmt: skip
    return iso(desc["CreationDateTime"])


def tables(session, region: str) -> list[str]:
    return session.client("dynamodb", region_name=region).list_tables()["TableNames"]


def west(action: str) -> list[str]:
    """The same teardown for us-west-2, with no run record there (as after a colleague's deployment)."""
    return cli(action, "--region", "us-west-2", "--run-record", "west.json")


def plan_line(details: dict[str, str], **fields: str) -> None:
    """One plan entry for the table, its provenance string as a hand edit would put it."""
    resource = {"type": "dynamodb_table", "id": TABLE, "provenance": "in our Terraform state (.state)"}
    entry = {"event": "plan", **fields, "resources": [{**resource, "details": details}]}
    Path("j.jsonl").write_text(json.dumps(entry) + "\n")


def reason() -> str:
    left = json.loads(Path("destroy.json").read_text())["looks_like_ours"]
    (why,) = [r["looks_like_ours"] for r in left if r["type"] == "dynamodb_table"]
    return why


def test_our_us_east_1_journal_does_not_prove_a_us_west_2_table(boto_session, capsys):
    """The attack: our own teardown in us-east-1 journals the table; a colleague's same-named
    table in us-west-2 is then left by `destroy --yes --region us-west-2`."""
    table(boto_session, "us-east-1")
    in_state("dynamodb_table", TABLE, arn=f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{TABLE}")
    assert main(cli("destroy")) == 0, capsys.readouterr().out
    assert tables(boto_session, "us-east-1") == []
    (plan,) = [e for e in Journal("j.jsonl").events() if e["event"] == "plan"]
    assert (plan["account"], plan["region"], plan["cluster"]) == (ACCOUNT, "us-east-1", "gpu-finops")
    Path(".state/terraform.cluster.tfstate").unlink()  # terraform destroy empties the state
    table(boto_session, "us-west-2")
    assert main(west("destroy")) == 1, (
        capsys.readouterr().out
    )  # unproven, tagged as ours: left, and verify says so
    assert tables(boto_session, "us-west-2") == [TABLE]
    assert reason() == f"{NOT_PROVEN} there is no run record (west.json) to compare its creation time with"


def test_a_plan_line_for_another_account_or_none_proves_nothing(boto_session, capsys):
    created = table(boto_session, "us-east-1")
    begin_run_now()  # the table predates the run: only the journal could prove it
    for fields in (
        {"account": "999999999999", "region": "us-east-1", "cluster": "gpu-finops"},
        {"account": ACCOUNT, "region": "us-east-1", "cluster": "alpha"},  # another cluster of the project
        {"account": ACCOUNT, "region": "us-east-1"},  # an older entry, without its cluster
        {"region": "us-east-1"},
        {},
    ):
        plan_line({"created": created}, **fields)
        assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
        capsys.readouterr()
        assert tables(boto_session, "us-east-1") == [TABLE]
        assert reason().startswith(NOT_PROVEN), fields


def test_a_name_identified_resource_must_be_the_one_planned(boto_session, capsys):
    """Same account and region, same name: the creation time planned must be the table's own. A
    hand-edited provenance string with no creation time proves nothing by itself."""
    created = table(boto_session, "us-east-1")
    begin_run_now()
    here = {"account": ACCOUNT, "region": "us-east-1", "cluster": "gpu-finops"}
    for details in ({"created": "2020-01-01T00:00:00Z"}, {}):  # a table made again since; none recorded
        plan_line(details, **here)
        assert main(cli("destroy")) == 1  # unproven, tagged as ours: left, and verify says so
        capsys.readouterr()
        assert tables(boto_session, "us-east-1") == [TABLE]
        assert reason().startswith(NOT_PROVEN), details
    plan_line({"created": created}, **here)
    assert main(cli("plan", "--out", "out.json")) == 0
    (r,) = json.loads(Path("out.json").read_text())["resources"]
    assert r["provenance"] == (
        "planned by an earlier teardown of ours for this account, region and cluster (in our Terraform state (.state))"
    )


def test_state_ids_prove_nothing_for_an_arn_in_another_region(boto_session, capsys):
    table(boto_session, "us-west-2")
    in_state("dynamodb_table", TABLE, arn=f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{TABLE}")
    assert main(west("destroy")) == 1, (
        capsys.readouterr().out
    )  # unproven, tagged as ours: left, and verify says so
    assert tables(boto_session, "us-west-2") == [TABLE]
    assert reason().startswith(NOT_PROVEN)
    in_state("dynamodb_table", TABLE, arn=f"arn:aws:dynamodb:us-west-2:{ACCOUNT}:table/{TABLE}")
    assert main(west("destroy")) == 0, capsys.readouterr().out
    assert tables(boto_session, "us-west-2") == []
