"""OpenTofu, with the AWS, Kubernetes and Helm providers built on this machine, reads every stack as synth writes
it (network, cluster, addons and the ci-role stack, every optional part on): `tofu validate` runs the
provider's own checks of each resource's configuration, which cdktn's types do not have (enumerations,
formats, conflicting and required-together arguments). A value the types accept and the provider refuses fails
with the provider's message. The AWS provider is built with only the service packages the stacks use: the list
is held to the stacks' types both ways."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gpu_finops.facts.names import CI_ROLE_STACK, CLUSTER_STACKS
from local.build import terraform, versions
from local.build.binaries import module_info

# The first test to ask for OpenTofu waits for the one-time background build (about 10 minutes on a cold
# machine, docs/log/measurements.md), inside its own timeout.
pytestmark = pytest.mark.timeout(1800)

STACKS = (*CLUSTER_STACKS, CI_ROLE_STACK)
# tofu's own warning on every command while dev_overrides send a provider to a local build (the CLI
# configuration local/build/terraform.py writes): expected, and the only warning allowed.
OVERRIDES_WARNING = "Provider development overrides are in effect"


def validate(tofu, stack_dir: Path) -> dict:
    init = tofu(stack_dir, "init", "-backend=false", "-input=false", "-no-color")
    assert init.returncode == 0, f"tofu init in {stack_dir} failed:\n{init.stdout}\n{init.stderr}"
    checked = tofu(stack_dir, "validate", "-json", "-no-color")
    try:
        return json.loads(checked.stdout)
    except ValueError:
        pytest.fail(
            f"tofu validate in {stack_dir} wrote no JSON (exit {checked.returncode}):\n{checked.stderr}"
        )


@pytest.fixture(scope="module")
def validated(synthesized_with_ci, tofu) -> dict[str, dict]:
    return {stack: validate(tofu, synthesized_with_ci.outdir / "stacks" / stack) for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_opentofu_validates_the_stack_as_synthesized_with_no_error_and_no_warning(validated, stack):
    result = validated[stack]
    found = [f"{d['severity']}: {d['summary']}: {d.get('detail', '')}" for d in result["diagnostics"]
             if not d["summary"].startswith(OVERRIDES_WARNING)]  # fmt: skip
    assert result["valid"] is True and found == [], "\n".join(found)


def aws_types(stack: dict) -> set[str]:
    return {t for block in ("resource", "data") for t in stack.get(block, {}) if t.startswith("aws_")}


def declared_by_service() -> dict[str, set[str]]:
    """Each service package of the provider version we build, and the resource and data source types it
    declares (its generated service_package_gen.go)."""
    root = Path(
        module_info(f"github.com/hashicorp/terraform-provider-aws@{versions.AWS_PROVIDER}", Path.cwd())["Dir"]
    )
    return {
        f.parent.name: set(re.findall(r'TypeName:\s+"(aws_\w+)"', f.read_text()))
        for f in (root / "internal" / "service").glob("*/service_package_gen.go")
    }


def test_the_providers_service_packages_are_those_of_the_stacks_types(synthesized_with_ci):
    used = set().union(*(aws_types(synthesized_with_ci.stack(s)) for s in STACKS))
    declared = declared_by_service()
    owner = {t: svc for svc, types in declared.items() for t in types}
    unknown = sorted(used - set(owner))
    assert unknown == [], f"no service package of the provider declares {unknown}"
    needed = {owner[t] for t in used}
    assert needed - set(terraform.AWS_SERVICES) == set(), (
        f"the stacks use types of {sorted(needed - set(terraform.AWS_SERVICES))}: add them to AWS_SERVICES"
    )
    assert set(terraform.AWS_SERVICES) - needed == set(), (
        f"AWS_SERVICES lists {sorted(set(terraform.AWS_SERVICES) - needed)}, whose types no stack uses"
    )


def test_a_value_cdktn_accepts_and_the_provider_refuses_fails_validate_with_the_providers_message(
    synthesized_with_ci, tofu, tmp_path
):
    from cdktn_provider_aws.launch_template import LaunchTemplateMetadataOptions

    LaunchTemplateMetadataOptions(http_tokens="sometimes")  # cdktn's type for it is any string
    stack_dir = tmp_path / "cluster"
    shutil.copytree(synthesized_with_ci.outdir / "stacks" / "cluster", stack_dir)
    path = stack_dir / "cdk.tf.json"
    stack = json.loads(path.read_text())
    (name, template), *_ = stack["resource"]["aws_launch_template"].items()
    template["metadata_options"]["http_tokens"] = "sometimes"
    path.write_text(json.dumps(stack))
    result = validate(tofu, stack_dir)
    errors = [d for d in result["diagnostics"] if d["severity"] == "error"]
    assert result["valid"] is False and len(errors) == 1, errors
    (error,) = errors
    assert error["summary"] == 'expected http_tokens to be one of ["optional" "required"], got sometimes'
    assert error["address"] == f"aws_launch_template.{name}"
    assert error["snippet"]["context"] == f"resource.aws_launch_template.{name}.metadata_options"
