"""Act 9's observation refuses what no checker could read, and its daemon clause reads every card of the node."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import find, settings

from assertions.card_shares import Billed
from assertions.mps import check_mps, the_control_daemon_limits_each_client_to_its_share
from local.sim.device_plugin import mps_daemon_commands
from tests.assertions.near_misses import act9

WORLD = find(act9.holding(), lambda _w: True, settings=settings(database=None, derandomize=True))


def test_the_simplest_world_holds_two_clients_billed_ten_seconds():
    v = check_mps(WORLD)
    assert v.holds, v.render()
    assert WORLD.bill.seconds == Fraction(10) and len(WORLD.pods) == 2


@pytest.mark.parametrize(
    "change, why",
    [
        ({"cards": None}, "cards None"),
        ({"replicas": 2.0}, "replicas 2.0"),
        ({"daemon": ("set_default_active_thread_percentage 50", 50)}, "daemon commands"),
        ({"bill": replace(WORLD.bill, card_usd=Decimal("NaN"))}, "card_usd Decimal('NaN')"),
        ({"bill": replace(WORLD.bill, rows=(Billed("team-a", "ns-team-a", 1.5, Decimal(1)),))}, "billed row team-a: 1.5 GPU-seconds"),  # type: ignore[arg-type]
    ],
)  # fmt: skip
def test_a_field_no_clause_can_read_is_refused_naming_it(change, why):
    with pytest.raises(ValueError) as err:
        replace(WORLD, **change)
    assert why in str(err.value), str(err.value)


@pytest.mark.parametrize("replicas", [2, 3, 4, 7])
def test_the_clause_accepts_what_the_simulated_daemon_sets_for_every_card_of_a_node(replicas):
    """Four cards of an H100 (81559 MiB): the clause expects each card's limit, as daemon.go sets them."""
    o = replace(
        WORLD,
        replicas=replicas,
        cards=4,
        node=replace(
            WORLD.node,
            labels={
                **WORLD.node.labels,
                "nvidia.com/gpu.memory": "81559",
                "node.kubernetes.io/instance-type": "p5.4xlarge",
            },
        ),
        daemon=tuple(mps_daemon_commands(4, replicas, 81559)),
    )
    assert the_control_daemon_limits_each_client_to_its_share(o) == []
    short = replace(
        o, daemon=tuple(c for c in o.daemon if not c.startswith("set_default_device_pinned_mem_limit 3 "))
    )
    (miss,) = the_control_daemon_limits_each_client_to_its_share(short)
    assert f"did not set ['set_default_device_pinned_mem_limit 3 {81559 // replicas}M']" in miss.observed
