"""Each binary's recipe: the module it is built in, its main package, its flags and its command; the cache keys
stay the pins (issue 28 changed how binaries are built, not what they are keyed by)."""

from __future__ import annotations

from local.build import binaries, versions


def test_recipes_keep_the_build_order_and_each_binarys_flags(tmp_path):
    names = ("etcd", "kwok", "kueue", "karpenter-kwok", "kube-state-metrics")  # kube needs the module proxy
    got = {r.name: r for r in binaries.recipes(tmp_path, names)}
    assert list(got) == ["etcd", "kwok", "kueue", "karpenter-kwok", "kube-state-metrics"]
    assert (tmp_path / "etcd" / "main.go").read_text() == binaries.ETCD_MAIN
    assert f"require go.etcd.io/etcd/server/v3 {versions.ETCD}" in (tmp_path / "etcd" / "go.mod").read_text()
    assert (got["kueue"].package, got["kueue"].install) == ("sigs.k8s.io/kueue/cmd/kueue", versions.KUEUE)
    assert (tmp_path / "karpenter" / "main.go").read_bytes() == binaries.KARPENTER_MAIN.read_bytes()
    ksm = versions.KUBE_STATE_METRICS.removeprefix("v")
    assert got["kube-state-metrics"].ldflags == f"-s -w -X github.com/prometheus/common/version.Version={ksm}"
    assert got["etcd"].ldflags == "-s -w" and got["etcd"].install is None


def test_a_build_is_one_go_build_with_trimpath_and_the_flags(tmp_path):
    (etcd,) = binaries.recipes(tmp_path, ("etcd",))
    assert binaries.build_command(etcd, tmp_path / "out" / "etcd") == [
        "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp_path / "out" / "etcd"), ".",
    ]  # fmt: skip


def test_an_install_recipe_installs_module_at_version_and_moves_the_binary_to_its_target(tmp_path):
    (kwok,) = binaries.recipes(tmp_path, ("kwok",))
    cmd = binaries.build_command(kwok, tmp_path / "kwok")
    assert cmd[:2] == ["sh", "-c"]
    assert f"go install -trimpath -ldflags '-s -w' sigs.k8s.io/kwok/cmd/kwok@{versions.KWOK}" in cmd[2]
    assert f"mv {tmp_path}/.gobin-kwok/kwok {tmp_path}/kwok" in cmd[2]


def test_the_cache_keys_are_still_the_pins():
    keys = binaries.binary_keys()
    assert (
        keys["kueue"] == f"kueue-{versions.KUEUE}" and keys["kube-apiserver"] == f"k8s-{versions.KUBERNETES}"
    )
    assert keys["karpenter-kwok"].startswith(
        f"karpenter-{versions.KARPENTER}-aws-{versions.KARPENTER_AWS}-main-"
    )
