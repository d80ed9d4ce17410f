"""The simulated DRA driver's cards against what Karpenter's AWS provider expects NVIDIA's driver to publish on each
instance type (its drametadata, scraped from the real driver), asked of the provider's own code at the pinned
version through `karpenter-kwok dra-devices`: every attribute and capacity the provider names, with the value it
gives, for one type of each family the simulated driver knows."""

from __future__ import annotations

import json
import subprocess

import pytest

from local.sim import dra_driver

pytestmark = [pytest.mark.binaries]
TYPES = {
    "g6e": "g6e.12xlarge",
    "g6": "g6.xlarge",
    "g5": "g5.xlarge",
    "g4dn": "g4dn.xlarge",
    "p5": "p5.48xlarge",
}


@pytest.fixture(scope="module")
def expected() -> dict[str, list[dict]]:
    from local.build import binaries

    binary = binaries.binary_path("karpenter-kwok")
    if not binary.is_file():
        binaries.build_all()
    run = subprocess.run(
        [str(binary), "dra-devices", *TYPES.values()], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_every_family_the_simulated_driver_knows_is_one_the_provider_expects_devices_on():
    assert set(TYPES) == set(dra_driver.CARDS)


@pytest.mark.parametrize("family", sorted(TYPES))
def test_each_card_carries_the_attributes_and_memory_the_provider_expects_the_driver_to_publish(
    family, expected
):
    itype = TYPES[family]
    theirs = expected[itype]
    assert theirs, f"the provider expects no NVIDIA devices on {itype}"
    ours = [dra_driver.device("n", i, itype, f"GPU-{i}") for i in range(len(theirs))]
    for mine, want in zip(ours, theirs, strict=True):
        assert mine["name"] == want["name"]
        # the provider leaves per-card values (the PCIe root) to the runtime; its key must still be published
        per_card = {"resource.kubernetes.io/pcieRoot"}
        assert set(want["attributes"]) <= set(mine["attributes"]), (
            itype,
            set(want["attributes"]) - set(mine),
        )
        for key, value in want["attributes"].items():
            if key not in per_card:
                assert mine["attributes"][key] == value, (itype, key, mine["attributes"][key], value)
        assert mine["capacity"] == want["capacity"], (itype, mine["capacity"], want["capacity"])


def test_the_provider_expects_nothing_of_a_type_without_nvidia_cards(expected):
    assert "m7i.large" not in expected or not expected.get("m7i.large")
