"""docs/install.md's helm and kubectl commands, offline, with the pinned Helm: what tests/docs/doc_commands.py
cannot check (it parses `gpu-finops` and `make` only). Each helm command the doc shows for our chart is run
as `helm template` with the doc's own flags, values file and variables, and what the later commands name
(the Deployment `rollout status` waits for, the rules ConfigMap Prometheus mounts, the pod label `kubectl cp`
selects, the image tag `docker push` writes) must be in what it renders. The live run of the same commands
on the local target is tests/local/test_install_doc_on_local.py."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.names import PROJECT
from local.charts import product_chart
from local.charts.chart_render import OPERATOR_API_VERSIONS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "install.md"
TEXT = DOC.read_text(encoding="utf-8")


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", TEXT, re.S)


def variables() -> dict[str, str]:
    """The doc's `export NAME=value` lines (its first block), as a reader's shell would hold them."""
    found = dict(re.findall(r"^export (\w+)=(\S+)", blocks()[0], re.M))
    assert {"NS", "PROM_NS", "DCGM_NS", "REGISTRY"} <= set(found), found
    return found


def expand(text: str, env: dict[str, str]) -> str:
    return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env[m.group(1) or m.group(2)], text)


def commands(program: str) -> list[list[str]]:
    """Each `program ...` command of the doc's blocks (continuation lines joined), as words."""
    out = []
    for block in blocks():
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("   #")[0].strip()
            if line.startswith(f"{program} "):
                out.append(shlex.split(line, comments=True))
    return out


def values_file(work: Path, env: dict[str, str]) -> Path:
    (heredoc,) = re.findall(r"cat > gpu-finops-values.yaml <<EOF\n(.*?)\nEOF", TEXT, re.S)
    path = work / "gpu-finops-values.yaml"
    path.write_text(expand(heredoc, env))
    return path


def render(words: list[str], work: Path, env: dict[str, str], api_versions=()) -> list[dict]:
    """The doc's `helm install|upgrade RELEASE ./charts/gpu-finops ...` as `helm template`, same flags."""
    assert words[:2] in (["helm", "install"], ["helm", "upgrade"]) and words[3] == "./charts/gpu-finops", (
        words
    )
    args = ["template", words[2], str(ROOT / "charts" / PROJECT)]
    for word in words[4:]:
        word = expand(word, env)
        args.append(str(work / word) if word == "gpu-finops-values.yaml" else word)
    for api in api_versions:
        args += ["--api-versions", api]
    out = product_chart.helm(args, work)
    assert out.returncode == 0, f"{' '.join(words)}: {out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> tuple[dict[str, str], Path]:
    work = tmp_path_factory.mktemp("install-doc")
    found = variables()
    values_file(work, found)
    return found, work


def ours(program: str) -> list[list[str]]:
    return [w for w in commands(program) if "./charts/gpu-finops" in w]


def test_the_install_renders_what_the_later_commands_name(env):
    found, work = env
    (install,) = [w for w in ours("helm") if w[1] == "install"]
    docs = render(install, work, found)
    deployments = by_kind(docs, "Deployment")
    waited = [
        w.removeprefix("deploy/")
        for c in commands("kubectl")
        if "rollout" in c
        for w in c
        if w.startswith("deploy/")
    ]
    assert sorted(waited) == sorted(deployments), (
        f"the doc waits for {waited}; the chart runs {sorted(deployments)}"
    )
    assert {d["metadata"]["namespace"] for d in deployments.values()} == {found["NS"]}
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    # `docker push "$REGISTRY/gpu-finops:$(gpu-finops --version | cut -d' ' -f2)"`
    pushed = f"{found['REGISTRY']}/gpu-finops:{version}"
    for dep in deployments.values():
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert c["image"] == pushed, f"{dep['metadata']['name']} runs {c['image']}, the doc pushes {pushed}"
    (cp,) = [w for w in commands("kubectl") if "cp" in w]
    selector = next(w for w in re.findall(r"-l (\S+)", " ".join(cp)))
    key, _, value = selector.partition("=")
    pods = [d for d in deployments.values() if d["spec"]["template"]["metadata"]["labels"].get(key) == value]
    assert [p["metadata"]["name"] for p in pods] == [f"{install[2]}-collector"], selector
    (pod_spec,) = [p["spec"]["template"]["spec"] for p in pods]
    (c,) = pod_spec["containers"]
    assert any(m["mountPath"] == "/var/lib/gpu-finops" for m in c["volumeMounts"])  # where cp reads the store


def test_with_the_operator_the_upgrade_labels_the_rules_and_the_monitors_for_its_selector(env):
    found, work = env
    (upgrade,) = [w for w in ours("helm") if w[1] == "upgrade"]
    docs = render(upgrade, work, found, OPERATOR_API_VERSIONS)
    (rule,) = by_kind(docs, "PrometheusRule").values()
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    monitors = by_kind(docs, "ServiceMonitor")
    assert sorted(monitors) == [f"{upgrade[2]}-collector", f"{upgrade[2]}-diagnosis"]
    assert all(m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors.values())


def test_a_plain_prometheus_mounts_the_rules_configmap_the_doc_names(env):
    found, work = env
    (install,) = [w for w in ours("helm") if w[1] == "install"]
    plain = dict(found, NS=found["PROM_NS"])  # "install the chart in Prometheus' one (NS=$PROM_NS)"
    configmaps = by_kind(render(install, work, plain), "ConfigMap")
    (prom,) = [w for w in commands("helm") if "prometheus-community/prometheus" in w]
    mounts = yaml.safe_load(
        next(w.partition("=")[2] for w in prom if w.startswith("server.extraConfigmapMounts="))
    )
    (mount,) = mounts
    rules = configmaps[mount["configMap"]]
    assert rules["metadata"]["namespace"] == found["PROM_NS"]
    rule_files = yaml.safe_load(next(w.partition("=")[2] for w in prom if ".rule_files=" in w))
    glob = next(f for f in rule_files if f.startswith(mount["mountPath"]))
    assert all(Path(mount["mountPath"], k).match(glob) for k in rules["data"]), (glob, sorted(rules["data"]))


def test_the_dcgm_configmap_is_mounted_where_the_exporter_is_pointed():
    (create,) = [w for w in commands("kubectl") if "configmap" in w and "create" in w]
    name = create[create.index("configmap") + 1]
    source = next(w.partition("=")[2] for w in create if w.startswith("--from-file="))
    key = source.partition("=")[0] if "=" in source else Path(source).name
    (upgrade,) = [w for w in commands("helm") if "nvidia/dcgm-exporter" in w]
    sets = {w.partition("=")[0]: yaml.safe_load(w.partition("=")[2]) for w in upgrade if "=[" in w}
    (volume,) = sets["extraConfigMapVolumes"]
    (mount,) = sets["extraVolumeMounts"]
    assert volume["configMap"]["name"] == name and mount["name"] == volume["name"]
    assert sets["arguments"] == ["-f", f"{mount['mountPath']}/{key}"]
    # the GPU Operator mounts the ConfigMap's key dcgm-metrics.csv (its MetricsConfigFileName)
    assert key == "dcgm-metrics.csv", f"the ConfigMap's key is {key}; the GPU Operator reads dcgm-metrics.csv"
