"""Without the local cluster: the local Kueue runs with the reconciler concurrency and client limits of the
Configuration Kueue's chart installs on AWS (the addons stack keeps the chart's managerConfig), read from the
pinned chart, not controller-runtime's one reconciler per kind."""

from __future__ import annotations

from local.cluster.controllers import kueue_chart_controller_config


def test_the_chart_configurations_concurrency_and_client_limits_are_taken_whole() -> None:
    cfg = kueue_chart_controller_config()
    assert set(cfg) == {"controller", "clientConnection"}
    kinds = cfg["controller"]["groupKindConcurrency"]
    assert kinds["Job.batch"] >= 5 and kinds["Workload.kueue.x-k8s.io"] >= 5, kinds
    assert cfg["clientConnection"]["qps"] >= 50, cfg["clientConnection"]


def test_a_chart_without_the_sections_is_named_not_a_key_error(tmp_path, monkeypatch) -> None:
    import pytest

    from local.cluster import controllers
    from local.cluster.processes import LocalError

    (tmp_path / "charts/kueue").mkdir(parents=True)
    (tmp_path / "charts/kueue/values.yaml").write_text(
        "managerConfig:\n  controllerManagerConfigYaml: |-\n    controller: {}\n"
    )
    monkeypatch.setattr(controllers, "module_dir", lambda _m: tmp_path)
    with pytest.raises(LocalError, match=r"values.yaml: expected managerConfig.controllerManagerConfigYaml "
                       r"with clientConnection, found \['controller'\]"):  # fmt: skip
        controllers.kueue_chart_controller_config()
