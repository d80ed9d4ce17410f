"""`gpu-finops diagnose` and `gpu-finops gpus` end to end over a fake Kubernetes (client model objects)
and a DCGM source: exit codes, bad input said plainly, JSON, and nothing guessed without Prometheus."""

from __future__ import annotations

import json

import pytest

from gpu_finops.cli import main
from gpu_finops.diagnose import cli_diagnose, cli_gpus
from gpu_finops.diagnose.model import GpuStats
from gpu_finops.facts.file_schema import validate
from gpu_finops.report.schemas import DiagnosisFile
from tests.gpu_finops.diagnose import kube_shapes as ks
from tests.gpu_finops.diagnose.diagnose_fixtures import stats as profile_stats
from tests.gpu_finops.diagnose.test_observers import situation

UNREACHABLE = "Prometheus at http://prom:9090 unreachable (last error: connection refused)"


@pytest.fixture
def cluster(monkeypatch):
    """Serves `situation()` as the cluster and a resident model's DCGM rows as Prometheus."""
    state = {
        "kube": situation(),
        "stats": [profile_stats("gpu-a", 0, "resident-model", "team-a/llm")],
        "why": None,
    }
    monkeypatch.setattr(cli_diagnose, "kube_client", lambda _path: state["kube"])
    monkeypatch.setattr(cli_gpus, "kube_client", lambda _path: state["kube"])

    def read(url, window, *, retry_for=None, at=None, spelling=None):
        return (None, state["why"]) if state["why"] else (state["stats"], None)

    monkeypatch.setattr("gpu_finops.diagnose.prom_observer.read_or_reason", read)
    return state


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pending_pod_json_names_the_first_cause(cluster, capsys):
    code, out, _ = run(capsys, "diagnose", "train-x", "-n", "team-a", "--json")
    assert code == 0
    body = json.loads(out)
    (d,) = body["diagnoses"]
    assert d["target"] == "team-a/train-x" and d["first_cause"] == "allocation"
    assert [f["check"] for f in d["findings"]] == [
        "admission",
        "allocation",
        "memory",
        "placement",
        "application",
    ]
    allocation = d["findings"][1]
    assert allocation["key_evidence"] == ["holder:team-a/llm"]
    assert allocation["evidence"]["holders"][0]["class"] == "resident"
    assert d["findings"][0]["summary"].startswith("Kueue admitted workload team-a/job-train-aaaaa")


def test_terminal_output_shows_every_check(cluster, capsys):
    code, out, _ = run(capsys, "diagnose", "train-x", "-n", "team-a")
    assert code == 0
    assert "team-a/train-x (pod): first cause allocation" in out
    for check in ("admission", "memory", "placement", "application", "FIRST CAUSE"):
        assert check in out


@pytest.mark.parametrize(
    "argv, says",
    [
        (("llm", "-n", "team-a"), "pod team-a/llm is not pending: it is Running on node gpu-a"),
        (("web", "-n", "team-a"), "pod team-a/web is not pending"),
        (("gone", "-n", "team-a"), "pod team-a/gone not found: it does not exist or is gone"),
        (("--workload", "nope", "-n", "team-a"), "workload team-a/nope not found"),
        (("--workload", "job-train-aaaaa", "-n", "team-a"), "is admitted: its pods are the scheduler's"),
    ],
)
def test_bad_targets_exit_1_and_say_why(cluster, capsys, argv, says):
    code, out, err = run(capsys, "diagnose", *argv)
    assert code == 1 and says in err and out == ""


def test_not_a_gpu_pod_exits_1(cluster, capsys):
    cluster["kube"].pods.append(ks.pod("cpu-pending", gpus=None))
    code, _, err = run(capsys, "diagnose", "cpu-pending", "-n", "team-a")
    assert (
        code == 1 and "is not a GPU pod: it requests neither nvidia.com/gpu nor nvidia.com/gpu.shared" in err
    )


@pytest.mark.parametrize(
    "argv, says",
    [
        (("diagnose",), "name a POD, --workload NAME, or --all"),
        (("diagnose", "p", "--workload", "w"), "give a POD or --workload NAME, not both"),
        (("diagnose", "p", "--port", "9465"), "--port serves the diagnosis of --all; add --all"),
    ],
)
def test_usage_errors_exit_2(cluster, capsys, argv, says):
    code, _, err = run(capsys, *argv)
    assert code == 2 and says in err


def test_bad_window_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["diagnose", "--all", "--window", "five"])
    assert info.value.code == 2
    assert "window must be a positive duration" in capsys.readouterr().err


def test_window_units():
    assert [cli_diagnose.parse_window(w) for w in ("300", "90s", "5m", "1h")] == [300, 90, 300, 3600]


def test_workload_is_diagnosed_as_admission(cluster, capsys):
    code, out, _ = run(capsys, "diagnose", "--workload", "job-queued-bbbbb", "-n", "team-a", "--json")
    d = json.loads(out)["diagnoses"][0]
    assert code == 0 and d["kind"] == "workload" and d["first_cause"] == "admission"
    assert "QuotaReserved=False" in d["findings"][0]["key_evidence"]


def test_all_lists_pods_and_workloads(cluster, capsys):
    code, out, _ = run(capsys, "diagnose", "--all", "--json")
    assert code == 0
    validate(DiagnosisFile, json.loads(out), "stdout", "diagnosis")  # what `gpu-finops report` reads
    assert [d["target"] for d in json.loads(out)["diagnoses"]] == [
        "team-a/train-x",
        "team-a/job-queued-bbbbb",
    ]


def test_prometheus_unreachable_shows_kubernetes_findings_names_what_was_not_checked_exit_3(cluster, capsys):
    cluster["why"] = UNREACHABLE
    code, out, _ = run(capsys, "diagnose", "train-x", "-n", "team-a")
    assert code == 3
    assert "first cause allocation" in out
    assert f"not checked: memory, application ({UNREACHABLE})" in " ".join(out.split())
    code, out, _ = run(capsys, "diagnose", "train-x", "-n", "team-a", "--json")
    body = json.loads(out)
    assert code == 3 and body["dcgm"] == f"not read: {UNREACHABLE}"
    assert body["diagnoses"][0]["not_checked"] == ["memory", "application"]


def test_kubernetes_unreachable_exit_3(cluster, capsys):
    cluster["kube"].down = True
    code, out, err = run(capsys, "diagnose", "--all")
    assert code == 3 and "Kubernetes API unreachable" in err and "nothing diagnosed" in err and out == ""


def test_gpus_shows_both_views(cluster, capsys):
    cluster["stats"] = [
        profile_stats("gpu-a", 0, "resident-model", "team-a/llm"),
        profile_stats("gpu-a", 1, "busy-trainer", "team-a/t"),
        GpuStats("gpu-b", "0", "GPU-free", sm_active=0.0, fb_used_mib=0.0, fb_free_mib=46068.0, power_w=70.0),
    ]
    code, out, _ = run(capsys, "gpus", "--json")
    body = json.loads(out)
    assert code == 0 and len(body["gpus"]) == 3
    assert body["looks_idle_is_held"] == ["gpu-a/GPU-gpu-a-0"]
    code, out, _ = run(capsys, "gpus")
    assert code == 0 and "GPUs: activity over the last 300s" in out and "Looks idle, is held" in out
    assert "(1 of 3)" in out


def test_gpus_without_prometheus_exits_3(cluster, capsys):
    cluster["why"] = UNREACHABLE
    code, out, err = run(capsys, "gpus")
    assert code == 3 and UNREACHABLE in err and out == ""


def test_all_with_nothing_pending_says_so_and_exits_0_even_without_prometheus(cluster, capsys):
    """Nothing pending needs no DCGM series, so an unreachable Prometheus is no failure then."""
    cluster["why"] = UNREACHABLE
    code, out, err = run(capsys, "diagnose", "--all", "-n", "nobody-here")
    assert code == 0, err
    assert "no pending GPU pod and no unadmitted workload in nobody-here: nothing to diagnose" in out
    assert err == ""


def test_all_with_pending_pods_and_no_prometheus_says_why_it_exits_3(cluster, capsys):
    cluster["why"] = UNREACHABLE
    code, _, err = run(capsys, "diagnose", "--all")
    assert code == 3
    assert f"Prometheus not read ({UNREACHABLE}): memory and application not checked" in err
