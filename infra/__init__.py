"""CDK Terrain app: the network, cluster and addons stacks, their typed config and builders."""

import os

# jsii (the runtime under cdktn) prints an eleven-line banner on every load when Node is past its support
# window; Debian bookworm's Node 20, which `make setup` installs, is since 2026-10-30, and every synth here still
# runs on it (tests/infra). Silenced for Node 20 only, so any other unsupported Node still shows it; a user's own
# setting of the variable wins.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
