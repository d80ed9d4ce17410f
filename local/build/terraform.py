"""Terraform as `make up` runs it, built on this machine: OpenTofu and the providers our stacks require, from
the Go module proxy, cached outside the clone, so `tofu validate`, plan, apply and destroy read the synthesized
stacks offline (tests/infra/test_terraform_*.py; docs/local.md, Terraform on this machine).

- OpenTofu (its cmd/tofu) at versions.OPENTOFU, the release the nightly installs, its version stamped as the
  release does (no `-dev`).
- hashicorp/aws, hashicorp/kubernetes and hashicorp/helm at the commits the proxy serves (versions.py: their
  tagged releases are refused here, so these are the newest commits it serves, not the versions the stacks pin;
  docs/local.md lists what that changes for the resource types we use).
- The AWS provider is built with only the service packages our stacks use (AWS_SERVICES), in a copy of its
  module with two generated files trimmed: its registry of service packages
  (internal/provider/sdkv2/service_packages_gen.go) and its AWS client accessors (internal/conns/awsclient_gen.go,
  which imports every AWS SDK client). The accessors kept are those the packages still compiled name; each
  accessor finds its client through its service package's registry entry (a panic, "unknown service package",
  when that entry is gone), so the registry keeps every package an accessor kept belongs to, to a fixed point
  (S3's resources call S3 Control, for one). The resources and data sources we use are the provider's own code, unchanged; a type of a
  package not listed is unknown to the binary (`tofu validate`: "The provider hashicorp/aws does not support
  resource type ..."), and tests/infra/test_terraform_validate.py holds the list to the stacks' types. Measured
  on 2 cores (docs/local.md, Terraform on this machine): the whole provider compiles every AWS SDK client
  (about 860 packages of 1,730) and took over 20 min; trimmed, 943 packages, TOOLS' figures.
- `cli_config()` writes a CLI configuration whose `dev_overrides` send each provider to its binary: tofu asks no
  registry, uses these builds whatever version a stack's required_providers pins (the JSON stays exactly as
  `make up` applies it), and warns that overrides are in effect on every command.

Each tool is built by one `go build -v` (progress lines as the unified build's, progress.py) into a folder keyed
by the digest of its module version, its patch, the flags and the Go toolchain, after a check that the machine
has the memory its link needs (NEED_GIB, measured). One build at a time per cache (CACHE/terraform.lock)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from local.build import progress, versions
from local.build.binaries import CACHE, BuildError, follow, go_env, module_info

ROOT = CACHE / "terraform"
# The AWS provider's service packages our stacks' resource and data types live in (internal/service/<name>):
# tests/infra/test_terraform_validate.py fails when a stack uses a type of a package not listed, or a listed
# package serves none of the stacks' types.
AWS_SERVICES = (
    "budgets", "dynamodb", "ec2", "ecr", "eks", "events", "fis", "iam", "kms", "logs", "s3", "sqs", "sts",
)  # fmt: skip
REGISTRY_FILE = "internal/provider/sdkv2/service_packages_gen.go"
CLIENTS_FILE = "internal/conns/awsclient_gen.go"
MODULE_PREFIX = "github.com/hashicorp/terraform-provider-aws/"
CLIENT_ACCESSOR = re.compile(
    r"^func \(c \*AWSClient\) (\w+Client)\(ctx context\.Context\) \*(\w+)\.Client \{\n.*?\n\}\n\n?",
    re.M | re.S,
)
ACCESSOR_SERVICE = re.compile(r"^func \(c \*AWSClient\) (\w+Client)\(ctx[^\n]*\n[^\n]*\bnames\.(\w+)\b", re.M)
NAMES_FILE = "names/consts_gen.go"
NAME_CONST = re.compile(r'^\t(\w+)\s+= "(\w+)"$', re.M)
SDK_IMPORT = re.compile(r'^\t"github\.com/aws/aws-sdk-go-v2/service/(\w+)"\n', re.M)
SERVICE_IMPORT = re.compile(
    r'^\t"github\.com/hashicorp/terraform-provider-aws/internal/service/(\w+)"\n', re.M
)
SERVICE_CALL = re.compile(r"^\t\t(\w+)\.ServicePackage\(ctx\),\n", re.M)


@dataclass(frozen=True)
class Tool:
    name: str  # the binary
    module: str
    version: str
    package: str  # the main package, relative to the module's root
    provider: str | None  # its source address in dev_overrides; None for tofu itself
    need_gib: float  # memory its build needs, measured peak RSS with headroom (docs/local.md)
    # its cold build on the 2-core machine, in TOOLS' order (each after the one before it, sharing its compiled
    # packages: docs/log/measurements.md, 2026-12-06): the estimate before one is recorded
    first: dict[str, float]
    ldflags: str = "-s -w"
    trim: bool = False  # the AWS provider: only AWS_SERVICES in its service registry

    def patch_text(self) -> str:
        return "registry+clients, closed:" + ",".join(AWS_SERVICES) if self.trim else ""


TOOLS = (
    Tool(
        "tofu",
        "github.com/opentofu/opentofu",
        versions.OPENTOFU,
        "./cmd/tofu",
        None,
        3.0,
        {"seconds": 238.0, "packages": 1781},
        ldflags="-s -w -X github.com/opentofu/opentofu/version.dev=no",
    ),
    Tool(
        "terraform-provider-aws",
        "github.com/hashicorp/terraform-provider-aws",
        versions.AWS_PROVIDER,
        ".",
        "hashicorp/aws",
        6.0,
        {"seconds": 173.0, "packages": 518},
        trim=True,
    ),
    Tool(
        "terraform-provider-kubernetes",
        "github.com/hashicorp/terraform-provider-kubernetes",
        versions.KUBERNETES_PROVIDER,
        ".",
        "hashicorp/kubernetes",
        4.0,
        {"seconds": 94.0, "packages": 678},
    ),
    Tool(
        "terraform-provider-helm",
        "github.com/hashicorp/terraform-provider-helm",
        versions.HELM_PROVIDER,
        ".",
        "hashicorp/helm",
        4.0,
        {"seconds": 85.0, "packages": 777},
    ),
)
BY_NAME = {t.name: t for t in TOOLS}


def build_flags(tool: Tool) -> list[str]:
    return ["-trimpath", "-ldflags", tool.ldflags]


def cache_key(tool: Tool) -> str:
    """The folder of `tool`'s binary: its name and the digest of what decides its bytes."""
    digest = hashlib.sha256(
        "\0".join(
            [
                tool.module,
                tool.version,
                tool.package,
                tool.patch_text(),
                *build_flags(tool),
                versions.GO_TOOLCHAIN,
            ]
        ).encode()
    )
    return f"{tool.name}-{digest.hexdigest()[:16]}"


def binary_path(name: str) -> Path:
    if name not in BY_NAME:
        raise BuildError(f"no Terraform tool {name!r}; the ones built are {', '.join(BY_NAME)}")
    tool = BY_NAME[name]
    return ROOT / cache_key(tool) / tool.name


def trimmed_registry(text: str, keep: tuple[str, ...]) -> str:
    """The provider's generated service registry with only `keep`'s imports and ServicePackage calls."""
    have = set(SERVICE_IMPORT.findall(text))
    if not have or have != set(SERVICE_CALL.findall(text)):
        raise BuildError(
            f"{REGISTRY_FILE} is not the generated registry this build trims (an import and a ServicePackage "
            "call per service): the provider's layout changed; read the file and update local/build/terraform.py"
        )
    absent = sorted(set(keep) - have)
    if absent:
        raise BuildError(f"{REGISTRY_FILE} has no service package {', '.join(absent)}: fix AWS_SERVICES")
    text = SERVICE_IMPORT.sub(lambda m: m.group(0) if m.group(1) in keep else "", text)
    return SERVICE_CALL.sub(lambda m: m.group(0) if m.group(1) in keep else "", text)


def trimmed_clients(text: str, called: set[str]) -> str:
    """The provider's generated AWS client accessors with only those `called`, and only their SDK imports."""
    accessors = {m.group(1): m.group(2) for m in CLIENT_ACCESSOR.finditer(text)}
    if not accessors or not set(SDK_IMPORT.findall(text)) >= set(accessors.values()):
        raise BuildError(
            f"{CLIENTS_FILE} is not the generated accessor file this build trims (a method per AWS SDK client): "
            "the provider's layout changed; read the file and update local/build/terraform.py"
        )
    keep = {accessors[name] for name in called & set(accessors)}
    text = CLIENT_ACCESSOR.sub(lambda m: m.group(0) if m.group(1) in called else "", text)
    return SDK_IMPORT.sub(lambda m: m.group(0) if m.group(1) in keep else "", text)


def called_accessors(copy: Path) -> set[str]:
    """Every `XClient` name the provider's packages that the trimmed registry still compiles mention (`go list
    -deps`, the go command's own import graph): an over-approximation, so no accessor a compiled package calls
    is removed."""
    listed = subprocess.run(
        ["go", "list", "-deps", "-f", "{{.ImportPath}}", "."],
        cwd=copy,
        env={**go_env(), "GOFLAGS": "-mod=readonly"},
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        raise BuildError(f"go list -deps in {copy} failed: {listed.stderr[-2000:]}")
    names: set[str] = set()
    for pkg in listed.stdout.split():
        if not pkg.startswith(MODULE_PREFIX):
            continue
        for f in (copy / pkg.removeprefix(MODULE_PREFIX)).glob("*.go"):
            if not f.name.endswith("_test.go") and f != copy / CLIENTS_FILE:
                names |= set(re.findall(r"\b(\w+Client)\b", f.read_text()))
    return names


def accessor_services(clients: str, names: str) -> dict[str, str]:
    """Each client accessor and the service package it belongs to (the `names.X` constant its body passes,
    whose value is the package's name)."""
    consts = dict(NAME_CONST.findall(names))
    return {
        accessor: consts[const] for accessor, const in ACCESSOR_SERVICE.findall(clients) if const in consts
    }


def trim(copy: Path) -> tuple[str, ...]:
    """Trim the copy's registry and accessors; the service packages its registry keeps. From AWS_SERVICES,
    each pass adds the packages of the accessors the compiled packages name, until none is added."""
    registry, clients = copy / REGISTRY_FILE, copy / CLIENTS_FILE
    registry_text, clients_text = registry.read_text(), clients.read_text()
    owner = accessor_services(clients_text, (copy / NAMES_FILE).read_text())
    keep = set(AWS_SERVICES)
    while True:
        registry.write_text(trimmed_registry(registry_text, tuple(sorted(keep))))
        called = called_accessors(copy) & set(owner)
        needed = {owner[a] for a in called} & set(SERVICE_IMPORT.findall(registry_text))
        if needed <= keep:
            break
        keep |= needed
    clients.write_text(trimmed_clients(clients_text, called))
    return tuple(sorted(keep))


def available_gib(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """MemAvailable, in GiB; None where the kernel does not say (not Linux)."""
    try:
        found = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo.read_text(), re.M)
    except OSError:
        return None
    return int(found.group(1)) / 2**20 if found else None


def check_memory(tool: Tool, available: float | None, echo: Callable[[str], None] = print) -> None:
    """Refuse to start a build whose link this machine cannot hold; where the kernel does not say how much
    memory is available, say that the check could not be made and build."""
    if available is None:
        echo(
            f"  {tool.name}: free memory unknown (no MemAvailable in /proc/meminfo): not checked against the "
            f"{tool.need_gib:g} GiB its link needs"
        )
        return
    if available < tool.need_gib:
        raise BuildError(
            f"building {tool.name} needs about {tool.need_gib:g} GiB of free memory (its link's peak, measured); "
            f"this machine has {available:.1f} GiB available (MemAvailable, /proc/meminfo): stop other work "
            "and rerun, or run the Terraform tests on a machine with more memory (docs/local.md)"
        )


def source(tool: Tool, echo: Callable[[str], None]) -> Path:
    """Where `tool` is built: its module's folder in the module cache as published, or, for the trimmed
    provider, a writable copy with the trimmed registry (`go build -overlay` may not replace files in the
    module cache)."""
    ROOT.mkdir(parents=True, exist_ok=True)
    published = Path(module_info(f"{tool.module}@{tool.version}", ROOT)["Dir"])
    if not tool.trim:
        return published
    copy = ROOT / "src" / cache_key(tool)
    if not (copy / REGISTRY_FILE).is_file():
        echo(f"  copying {tool.module}@{tool.version} to {copy} (its service registry and clients trimmed)")
        staging = copy.with_name(copy.name + f".copying-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(published, staging)
        for path in (staging, *staging.rglob("*")):
            if path.is_dir():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
        for name in (REGISTRY_FILE, CLIENTS_FILE):
            path = staging / name
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        trim(staging)
        shutil.rmtree(copy, ignore_errors=True)
        os.replace(staging, copy)
    return copy


def build(tool: Tool, echo: Callable[[str], None] = print, available: float | None = None) -> Path:
    """`tool`'s binary, built where missing (memory checked first); a failed build leaves none behind."""
    out = ROOT / cache_key(tool)
    if (out / tool.name).is_file():
        return out / tool.name
    check_memory(tool, available_gib() if available is None else available, echo)
    cwd = source(tool, echo)
    staging = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    log = ROOT / f"{tool.name}.log"
    clock = progress.Progress([tool.name], echo, key=tool.name, first=tool.first)
    clock.begin(log)
    cmd = ["go", "build", "-v", *build_flags(tool), "-o", str(staging / tool.name), tool.package]
    try:
        rc = follow(cmd, {**go_env(), "GOFLAGS": "-mod=readonly -buildvcs=false"}, log, staging, clock, cwd)
        if rc != 0 or not (staging / tool.name).is_file():
            raise BuildError(
                f"go build of {tool.name} failed (exit {rc}); log {log}:\n{log.read_text()[-3000:]}"
            )
        out.mkdir(parents=True, exist_ok=True)
        os.replace(staging / tool.name, out / tool.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    clock.finish()
    return out / tool.name


def build_all(echo: Callable[[str], None] = print) -> dict[str, Path]:
    """Every tool's binary, built where missing, one build at a time per cache (CACHE/terraform.lock): the
    background build `make test` starts and a test that needs tofu share it instead of building twice."""
    ROOT.mkdir(parents=True, exist_ok=True)
    with (CACHE / "terraform.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            echo(f"  waiting for the Terraform build already running (lock {CACHE / 'terraform.lock'}) ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        return {tool.name: build(tool, echo) for tool in TOOLS}


def pinned_providers(stacks: Path) -> dict[str, str]:
    """The provider versions the synthesized stacks under `stacks` pin (required_providers), by source address
    ("helm" is "hashicorp/helm", as Terraform reads a source without a namespace)."""
    pins: dict[str, str] = {}
    for path in sorted(stacks.glob("*/cdk.tf.json")):
        required = json.loads(path.read_text()).get("terraform", {}).get("required_providers", {})
        for spec in required.values():
            source = spec["source"] if "/" in spec["source"] else f"hashicorp/{spec['source']}"
            pins[source.lower()] = spec["version"]
    return pins


def cli_config(binaries: dict[str, Path], pins: Mapping[str, str] | None = None) -> Path:
    """A CLI configuration that sends each provider to its build and asks no registry:
    - dev_overrides: every command runs the build, whatever version a stack pins, and tofu warns that
      overrides are in effect;
    - a filesystem mirror holding each build under the version `pins` gives it (pinned_providers), so
      `tofu init` resolves the stacks' pins as `make up` runs it (init refuses a pin no source offers; with
      the override in effect, the mirror's copy is never run).
    The same content for the same binaries and pins, written whole."""
    mirror = ROOT / "mirror"
    lines = ["provider_installation {", "  dev_overrides {"]
    for tool in TOOLS:
        if tool.provider:
            lines.append(f'    "{tool.provider}" = "{binaries[tool.name].parent}"')
    lines += ["  }", "  filesystem_mirror {", f'    path = "{mirror}"', "  }", "}", ""]
    for tool in TOOLS:
        if tool.provider and tool.provider in (pins or {}):
            kind = tool.provider.split("/")[1]
            where = mirror / "registry.opentofu.org" / tool.provider / pins[tool.provider] / "linux_amd64"  # type: ignore[index]
            where.mkdir(parents=True, exist_ok=True)
            link = where / f"terraform-provider-{kind}"
            if not link.is_symlink() or link.readlink() != binaries[tool.name]:
                link.unlink(missing_ok=True)
                link.symlink_to(binaries[tool.name])
    text = "\n".join(lines)
    path = ROOT / f"tofurc-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(path.name + f".{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def environment(binaries: dict[str, Path], pins: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a tofu process needs to find these builds and nothing else: tofu first on PATH, the CLI
    configuration, no checkpoint calls, automation output."""
    return {
        "PATH": f"{binaries['tofu'].parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "TF_CLI_CONFIG_FILE": str(cli_config(binaries, pins)),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }


if __name__ == "__main__":
    try:
        for name, path in build_all().items():
            print(f"{name}: {path}")
    except BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
