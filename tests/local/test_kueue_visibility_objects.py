"""Without the local cluster: the objects that make Kueue's visibility API reachable through kube-apiserver's
aggregation layer, and the host address they point at."""

from __future__ import annotations

import ipaddress

from local.cluster.controllers import VISIBILITY_SERVICE, feature_gates_flag, visibility_objects
from local.cluster.processes import PORTS, host_address


def test_each_version_kueue_serves_is_registered_behind_a_selector_less_service_and_a_manual_slice():
    objs = visibility_objects("192.0.2.2", "Q0E=")
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    (svc,) = by_kind["Service"]
    (eps,) = by_kind["EndpointSlice"]
    assert "selector" not in svc["spec"]  # no controller may replace the manual slice
    # the aggregator's resolver matches the slice's port to the Service's by name
    assert [p["name"] for p in eps["ports"]] == [p["name"] for p in svc["spec"]["ports"]] == ["https"]
    assert eps["ports"][0]["port"] == PORTS["kueue-visibility"] == 26095
    assert eps["metadata"]["labels"]["kubernetes.io/service-name"] == VISIBILITY_SERVICE
    assert eps["endpoints"] == [{"addresses": ["192.0.2.2"], "conditions": {"ready": True}}]
    specs = {a["spec"]["version"]: a["spec"] for a in by_kind["APIService"]}
    assert set(specs) == {"v1beta2", "v1beta1"}
    for spec in specs.values():
        assert spec["caBundle"] == "Q0E=" and "insecureSkipTLSVerify" not in spec
        assert spec["service"] == {"name": VISIBILITY_SERVICE, "namespace": "kueue-system", "port": 443}


def test_the_visibility_port_is_new_and_the_host_address_is_one_the_api_server_accepts():
    assert list(PORTS.values()).count(PORTS["kueue-visibility"]) == 1
    ip = ipaddress.ip_address(host_address())
    assert not (ip.is_loopback or ip.is_link_local or ip.is_unspecified), ip


def test_gates_flag_is_sorted_and_lowercase():
    assert (
        feature_gates_flag({"VisibilityOnDemand": False, "A": True})
        == "--feature-gates=A=true,VisibilityOnDemand=false"
    )
