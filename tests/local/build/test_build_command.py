"""The one `go build` of the unified module: its flags, its output folder, the mains in order, and the cache key:
the digest of the module's files, the flags and the toolchain, so any change to them relinks every binary."""

from __future__ import annotations

import shutil

import pytest

from local.build import binaries, versions


def test_one_go_build_of_every_main_into_one_folder(tmp_path):
    cmd = binaries.build_command(tuple(binaries.MAINS), tmp_path)
    assert cmd[:2] == ["go", "build"]
    assert cmd[-9:] == [f"{tmp_path}/", *binaries.MAINS.values()]
    assert cmd[cmd.index("-ldflags") + 1] == binaries.ldflags()
    assert "-trimpath" in cmd and f"-gcflags={binaries.GCFLAGS}" in cmd


def test_the_ldflags_carry_the_kubernetes_and_kube_state_metrics_versions():
    flags = binaries.ldflags()
    assert flags.startswith("-s -w ")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion={versions.KUBERNETES}" in flags
    ksm = versions.KUBE_STATE_METRICS.removeprefix("v")
    assert f"-X github.com/prometheus/common/version.Version={ksm}" in flags


def test_a_binary_the_build_does_not_make_is_refused_naming_the_eight(tmp_path):
    with pytest.raises(
        binaries.BuildError, match="no main for helm in the unified build \\(etcd, kube-apiserver"
    ):
        binaries.build_command(("helm",), tmp_path)
    with pytest.raises(binaries.BuildError, match="no binary 'helm' in the unified build"):
        binaries.binary_path("helm")


@pytest.fixture
def module(tmp_path, monkeypatch):
    copy = tmp_path / "unified"
    shutil.copytree(binaries.UNIFIED, copy)
    monkeypatch.setattr(binaries, "UNIFIED", copy)
    return copy


@pytest.mark.parametrize("changed", ["go.mod", "go.sum", "etcd/main.go", "karpenter-kwok/main.go"])
def test_a_change_to_any_file_of_the_module_changes_the_key(module, changed):
    before = binaries.cache_key()
    (module / changed).write_text((module / changed).read_text() + "\n// changed\n")
    assert binaries.cache_key() != before


def test_the_flags_and_the_toolchain_are_in_the_key(module, monkeypatch):
    before = binaries.cache_key()
    monkeypatch.setattr(binaries, "GCFLAGS", "")
    no_gcflags = binaries.cache_key()
    monkeypatch.setattr(versions, "GO_TOOLCHAIN", "go1.99.0")
    assert len({before, no_gcflags, binaries.cache_key()}) == 3
    assert before.startswith("unified-")


def test_all_eight_binaries_live_in_the_keys_folder():
    assert binaries.bin_dir() == binaries.CACHE / "bin" / "set" / binaries.cache_key()
    assert binaries.binary_path("kueue") == binaries.bin_dir() / "kueue"


def test_a_module_missing_a_file_is_an_error_naming_it(module):
    (module / "go.sum").unlink()
    with pytest.raises(binaries.BuildError, match=f"the unified module lacks {module / 'go.sum'}"):
        binaries.cache_key()
