"""The Terraform build's own decisions, without building: the AWS provider's two generated files trimmed to the
service packages the stacks use (and refused when their layout is not the one trimmed), a machine without the
memory a link needs refused before the build, the cache key following every input, and a CLI configuration
that sends each provider to its build and nowhere else."""

from __future__ import annotations

import dataclasses
import json

import pytest

from local.build import terraform
from local.build.binaries import BuildError

REGISTRY = """package sdkv2

import (
\t"context"

\t"github.com/hashicorp/terraform-provider-aws/internal/conns"
\t"github.com/hashicorp/terraform-provider-aws/internal/service/acm"
\t"github.com/hashicorp/terraform-provider-aws/internal/service/ec2"
\t"github.com/hashicorp/terraform-provider-aws/internal/service/xray"
)

func servicePackages(ctx context.Context) []conns.ServicePackage {
\tv := []conns.ServicePackage{
\t\tacm.ServicePackage(ctx),
\t\tec2.ServicePackage(ctx),
\t\txray.ServicePackage(ctx),
\t}
\treturn v
}
"""

CLIENTS = """package conns

import (
\t"context"

\t"github.com/aws/aws-sdk-go-v2/service/acm"
\t"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func (c *AWSClient) ACMClient(ctx context.Context) *acm.Client {
\treturn errs.Must(client[*acm.Client](ctx, c, names.ACM, make(map[string]any)))
}

func (c *AWSClient) EC2Client(ctx context.Context) *ec2.Client {
\treturn errs.Must(client[*ec2.Client](ctx, c, names.EC2, make(map[string]any)))
}
"""


def test_the_registry_keeps_only_the_listed_service_packages():
    out = terraform.trimmed_registry(REGISTRY, ("ec2",))
    assert "internal/service/ec2" in out and "ec2.ServicePackage(ctx)" in out
    assert "acm" not in out and "xray" not in out
    assert "internal/conns" in out  # imports other than service packages stay


def test_a_listed_package_the_registry_lacks_is_refused_by_name():
    with pytest.raises(BuildError, match="has no service package ecs, eksx: fix AWS_SERVICES"):
        terraform.trimmed_registry(REGISTRY, ("ec2", "ecs", "eksx"))


def test_a_registry_whose_imports_and_calls_disagree_is_refused_as_a_changed_layout():
    with pytest.raises(BuildError, match="is not the generated registry this build trims"):
        terraform.trimmed_registry(REGISTRY.replace("\t\txray.ServicePackage(ctx),\n", ""), ("ec2",))
    with pytest.raises(BuildError, match="is not the generated registry this build trims"):
        terraform.trimmed_registry("package sdkv2\n", ("ec2",))


def test_the_clients_keep_the_called_accessors_and_their_sdk_imports_only():
    out = terraform.trimmed_clients(CLIENTS, {"EC2Client", "SomethingElseClient"})
    assert "func (c *AWSClient) EC2Client" in out and '"github.com/aws/aws-sdk-go-v2/service/ec2"' in out
    assert "ACMClient" not in out and "service/acm" not in out


def test_an_accessor_file_of_another_shape_is_refused_as_a_changed_layout():
    with pytest.raises(BuildError, match="is not the generated accessor file this build trims"):
        terraform.trimmed_clients("package conns\n", {"EC2Client"})


def test_a_machine_without_the_memory_a_link_needs_is_refused_before_building():
    aws = terraform.BY_NAME["terraform-provider-aws"]
    with pytest.raises(BuildError) as err:
        terraform.check_memory(aws, aws.need_gib - 0.5)
    assert str(err.value).startswith(
        f"building terraform-provider-aws needs about {aws.need_gib:g} GiB of free memory (its link's peak, "
        f"measured); this machine has {aws.need_gib - 0.5:.1f} GiB available"
    )
    said: list[str] = []
    terraform.check_memory(aws, aws.need_gib, said.append)
    assert said == []
    terraform.check_memory(aws, None, said.append)  # a kernel that does not say: said, and the build goes on
    assert said == [
        f"  terraform-provider-aws: free memory unknown (no MemAvailable in /proc/meminfo): not checked against "
        f"the {aws.need_gib:g} GiB its link needs"
    ]


def test_memavailable_is_read_in_gib(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   12582912 kB\n")
    assert terraform.available_gib(meminfo) == 12.0
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert terraform.available_gib(meminfo) is None
    assert terraform.available_gib(tmp_path / "absent") is None


def test_the_cache_key_follows_the_version_the_services_the_flags_and_the_toolchain(monkeypatch):
    aws = terraform.BY_NAME["terraform-provider-aws"]
    key = terraform.cache_key(aws)
    assert key.startswith("terraform-provider-aws-")
    assert terraform.cache_key(dataclasses.replace(aws, version="v1.60.1-0.2")) != key
    assert terraform.cache_key(dataclasses.replace(aws, ldflags="-s")) != key
    monkeypatch.setattr(terraform, "AWS_SERVICES", (*terraform.AWS_SERVICES, "ecs"))
    assert terraform.cache_key(aws) != key
    monkeypatch.undo()
    monkeypatch.setattr(terraform.versions, "GO_TOOLCHAIN", "go1.99.0")
    assert terraform.cache_key(aws) != key


def test_the_cli_configuration_sends_each_provider_to_its_build_and_nowhere_else(monkeypatch, tmp_path):
    monkeypatch.setattr(terraform, "ROOT", tmp_path)
    binaries = {t.name: tmp_path / t.name / t.name for t in terraform.TOOLS}
    path = terraform.cli_config(binaries, {"hashicorp/aws": "6.69.1", "hashicorp/helm": "3.3.0"})
    assert path.read_text() == (
        "provider_installation {\n"
        "  dev_overrides {\n"
        f'    "hashicorp/aws" = "{tmp_path / "terraform-provider-aws"}"\n'
        f'    "hashicorp/kubernetes" = "{tmp_path / "terraform-provider-kubernetes"}"\n'
        f'    "hashicorp/helm" = "{tmp_path / "terraform-provider-helm"}"\n'
        "  }\n"
        "  filesystem_mirror {\n"
        f'    path = "{tmp_path / "mirror"}"\n'
        "  }\n"
        "}\n"
    )
    hashicorp = tmp_path / "mirror" / "registry.opentofu.org" / "hashicorp"
    assert (hashicorp / "aws/6.69.1/linux_amd64/terraform-provider-aws").readlink() == binaries[
        "terraform-provider-aws"
    ]
    assert (hashicorp / "helm/3.3.0/linux_amd64/terraform-provider-helm").readlink() == binaries[
        "terraform-provider-helm"
    ]
    assert not (hashicorp / "kubernetes").exists()  # no pin, no mirror entry
    assert terraform.cli_config(binaries) == path  # the same binaries, the same file
    env = terraform.environment(binaries)
    assert env["PATH"].split(":")[0] == str(tmp_path / "tofu")
    assert env["TF_CLI_CONFIG_FILE"] == str(path)


def test_the_pins_are_read_from_the_stacks_required_providers(tmp_path):
    for stack, required in (("network", {"aws": {"source": "hashicorp/aws", "version": "6.69.1"}}),
                            ("addons", {"helm": {"source": "helm", "version": "3.3.0"}})):  # fmt: skip
        (tmp_path / stack).mkdir()
        (tmp_path / stack / "cdk.tf.json").write_text(
            json.dumps({"terraform": {"required_providers": required}})
        )
    assert terraform.pinned_providers(tmp_path) == {"hashicorp/aws": "6.69.1", "hashicorp/helm": "3.3.0"}


def test_each_accessor_belongs_to_the_service_package_its_names_constant_names():
    names = 'package names\n\nconst (\n\tACM                          = "acm"\n\tEC2                          = "ec2"\n)\n'
    assert terraform.accessor_services(CLIENTS, names) == {"ACMClient": "acm", "EC2Client": "ec2"}
