"""Where each stack keeps its Terraform state: the config's `state_backend`.

- **s3**: the cluster stacks' state in the bootstrap stack's bucket (`Config.state_bucket`, versioned,
  encrypted, public access blocked), one object per stack at `names.state_key`, locked by S3's own lock file
  (`use_lockfile`, Terraform and OpenTofu 1.10+: no DynamoDB table). Teardown reads the same objects
  (teardown/remote.py), so a runner that lost its disk still proves what the stacks created.
- **local**: one file per stack under `state_dir`, outside the synth folder, so `make synth` never touches
  what `make up` applied.

The bootstrap stack itself (the CI role, the bucket) always keeps local state: it creates the bucket, and an
administrator applies it once by hand (docs/runbook.md).

Bucket names are global, so the bucket's name holds the account: the backend needs the account at synth.
`infra up` and `infra destroy` pass the caller's; `infra synth` takes `--account`, else the one account in
`allowed_accounts`; with neither, an s3 backend cannot be named and synth refuses (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from cdktn import LocalBackend, S3Backend, TerraformBackend, TerraformStack

from gpu_finops.facts.config import Config
from gpu_finops.facts.errors import ConfigError
from gpu_finops.facts.names import state_file, state_key


def local_state(stack: TerraformStack, c: Config, name: str) -> LocalBackend:
    """A stack's state in a file under state_dir (resolved: the synthesized stack runs in its own folder)."""
    return LocalBackend(stack, path=str(Path(c.state_dir).resolve() / state_file(name)))


def state_account(c: Config, account: str | None) -> str | None:
    """The account whose bucket holds the state (None for local state): the given one, which must be
    allowed, else the single allowed account."""
    if c.state_backend == "local":
        return None
    if account is not None:
        if c.allowed_accounts and account not in c.allowed_accounts:
            raise ConfigError(
                "allowed_accounts",
                f"the state bucket would be account {account}'s, which is not in {list(c.allowed_accounts)}: "
                "run with credentials for an allowed account",
            )
        return account
    if len(c.allowed_accounts) == 1:
        return c.allowed_accounts[0]
    raise ConfigError(
        "state_backend",
        f"'s3' keeps state in the bucket nightly-<cluster>-tf-<account>, and the account is not known: "
        f"allowed_accounts lists {len(c.allowed_accounts)} (expected one), and no --account was given; pass "
        "`gpu-finops infra synth --account ID`, list the one sandbox account, or set state_backend: local",
    )


def cluster_state(stack: TerraformStack, c: Config, name: str, account: str | None) -> TerraformBackend:
    """A cluster stack's backend, as `state_backend` says (account: from `state_account`)."""
    if c.state_backend == "local":
        return local_state(stack, c, name)
    if account is None:
        raise ConfigError("state_backend", "'s3' needs the account that holds the bucket (state_account)")
    return S3Backend(
        stack,
        bucket=c.state_bucket(account),
        key=state_key(c.region, c.cluster_name, name),
        region=c.region,
        encrypt=True,
        use_lockfile=True,
    )
