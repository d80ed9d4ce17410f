"""the spot service-linked role is account-wide, so our SSM record
(writable, and taggable with any of our seven tag pairs, by whoever has ssm:PutParameter) only nominates it.
It is deleted only when it was created after our run began (its CreateDate against our run record) or an
earlier plan of ours held the same role (its RoleId); otherwise it is a lookalike, left with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_finops.cli import main
from gpu_finops.facts.names import SPOT_SLR, spot_slr_record_name
from tests.teardown.test_provenance import PAIRS, begin_run_now, cli

RECORD = spot_slr_record_name("gpu-finops")


def make_slr(session) -> None:
    session.client("iam").create_role(
        RoleName=SPOT_SLR, Path="/aws-service-role/spot.amazonaws.com/", AssumeRolePolicyDocument="{}"
    )


def write_record(session, key: str, value: str) -> None:
    session.client("ssm").put_parameter(
        Name=RECORD, Value="true", Type="String", Tags=[{"Key": key, "Value": value}]
    )


def slr_exists(session) -> bool:
    return SPOT_SLR in {r["RoleName"] for r in session.client("iam").list_roles()["Roles"]}


def lookalike_reason() -> str:
    left = json.loads(Path("destroy.json").read_text())["looks_like_ours"]
    (why,) = [r["looks_like_ours"] for r in left if r["type"] == "spot_slr"]
    return why


@pytest.mark.parametrize(("key", "value"), PAIRS)
def test_a_forged_record_does_not_delete_a_role_made_before_our_run(key, value, boto_session, capsys):
    make_slr(boto_session)  # another team's, long before our run
    begin_run_now()
    write_record(boto_session, key, value)  # the attacker's record, during our run
    assert main(cli("destroy")) == 1, (
        capsys.readouterr().out
    )  # unproven, tagged as ours: left, and verify says so
    assert slr_exists(boto_session)
    why = lookalike_reason()
    assert why.startswith(f"tagged {key}={value}, but nothing shows we made it"), why
    assert "before this run began" in why, why


def test_without_a_run_record_the_record_proves_nothing(boto_session, capsys):
    Path("reports/teardown-run-gpu-finops.json").unlink()
    make_slr(boto_session)
    write_record(boto_session, "gpu-finops.io/project", "gpu-finops")
    assert main(cli("destroy")) == 1, (
        capsys.readouterr().out
    )  # unproven, tagged as ours: left, and verify says so
    assert slr_exists(boto_session)
    assert "there is no run record (reports/teardown-run-gpu-finops.json)" in lookalike_reason()


def test_the_role_our_run_created_is_deleted_with_its_record(boto_session, capsys):
    begin_run_now()
    make_slr(boto_session)  # `make up`'s preflight, after `teardown begin`
    write_record(boto_session, "gpu-finops.io/project", "gpu-finops")
    assert main(cli("destroy")) == 0, capsys.readouterr().out
    assert not slr_exists(boto_session)
    assert boto_session.client("ssm").get_parameters(Names=[RECORD])["Parameters"] == []


def test_a_record_without_our_tags_nominates_nothing(boto_session, capsys):
    begin_run_now()
    make_slr(boto_session)
    write_record(boto_session, "team", "theirs")
    assert main(cli("destroy")) == 0, capsys.readouterr().out
    assert slr_exists(boto_session)
    assert lookalike_reason() == f"record {RECORD} says we created it, but the record has none of our tags"
