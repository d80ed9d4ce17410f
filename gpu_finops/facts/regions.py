"""The AWS regions this installation knows, read offline from botocore's bundled endpoint data: one list
that the configuration's region field and the CLI's `--region` option both check against."""

from __future__ import annotations

import functools


@functools.cache
def known_regions() -> frozenset[str]:
    """Every region botocore's bundled endpoint data lists for EC2, in every partition (offline)."""
    import botocore.session

    session = botocore.session.get_session()
    return frozenset(
        region
        for partition in session.get_available_partitions()
        for region in session.get_available_regions("ec2", partition_name=partition)
    )
