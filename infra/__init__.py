"""CDK Terrain app: the network, cluster and addons stacks, their typed config and builders."""
