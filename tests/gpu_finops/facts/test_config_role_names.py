"""a cluster's role names must
never be another cluster's CI role (`nightly-<cluster>`), and no name the policies write may hold what IAM
expands there (`${...}` policy variables, `*` and `?` wildcards)."""

from __future__ import annotations

import itertools

import pytest

from gpu_finops.facts.config import Config, ConfigError

ACCOUNT = "123456789012"


def roles(c: Config) -> set[str]:
    return {c.cluster_role, c.system_node_role, c.karpenter_node_role, c.karpenter_controller_role,
            c.fis_role, c.collector_role}  # fmt: skip


@pytest.mark.parametrize("name", ["nightly", "nightly-a", "nightly-fis"])
def test_e_a_cluster_whose_roles_could_be_a_ci_role_is_refused(name):
    with pytest.raises(ConfigError) as err:
        Config(allowed_accounts=(ACCOUNT,), cluster_name=name).validate()
    assert err.value.key == "cluster_name"
    assert f"'{name}' is reserved" in str(err.value) and "nightly-<cluster>" in str(err.value)


def test_e_the_script_pair_no_longer_collides_and_no_valid_pair_does():
    # the colliding pair: cluster `nightly` owned `nightly-fis`, cluster `fis`'s CI role
    names = ["fis", "gpu-finops", "gpu-finops-b", "nightlyx", "a-fis", "night", "b-nightly"]
    configs = [Config(allowed_accounts=(ACCOUNT,), cluster_name=n).validate() for n in names]
    for a, b in itertools.permutations(configs, 2):
        assert b.ci_role not in roles(a), (a.cluster_name, b.cluster_name)
        assert a.ci_role != b.ci_role


@pytest.mark.parametrize("value", ["${aws:PrincipalTag/team}", "a$b", "a{b", "a}b", "gpu*", "gpu?x"])
def test_f_a_project_name_iam_would_expand_is_refused(value):
    with pytest.raises(ConfigError) as err:
        Config(allowed_accounts=(ACCOUNT,), project=value).validate()
    assert err.value.key == "project"
    assert "policy variable or a wildcard" in str(err.value)


def test_f_an_ordinary_project_name_is_accepted():
    assert Config(allowed_accounts=(ACCOUNT,), project="team_x.gpu-finops").validate().project
