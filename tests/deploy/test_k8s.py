"""The Kubernetes manifests: probes, GPU, drain, sticky sessions, HPA and PDB targets,
CLI commands and settings; schema-validated when kubernetes-validate is installed."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.deploy.helpers import ROOT, check_cli, check_env

K8S = ROOT / "deploy" / "k8s"


# ---- Kubernetes -----------------------------------------------------------------------


def k8s_objects() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_k8s_manifests() -> None:
    objects = k8s_objects()
    kustomization = next(o for o in objects if o["kind"] == "Kustomization")
    assert all((K8S / r).is_file() for r in kustomization["resources"])
    by_kind: dict[str, dict[str, Any]] = {}
    for o in objects:
        if o["kind"] == "Kustomization":
            continue
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
    deployments = by_kind["Deployment"]
    assert {"r1voice", "vllm", "r1voice-front"} <= set(deployments)
    drains = []
    for name, deployment in deployments.items():
        spec = deployment["spec"]
        labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= labels.items()
        container = spec["template"]["spec"]["containers"][0]
        if name == "vllm":
            assert container["resources"]["limits"]["nvidia.com/gpu"] >= 1
            continue
        check_env(e["name"] for e in container.get("env", []))
        assert container["args"][0] == "r1voice"
        check_cli(container["args"][1:])
        ready = container["readinessProbe"]
        assert ready["httpGet"]["path"] == "/v2/models/r1voice/ready"  # the served alias
        assert (ready["initialDelaySeconds"], ready["failureThreshold"]) == (45, 3)
        assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
        drain = int(container["args"][container["args"].index("--drain-timeout") + 1])
        pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
        assert spec["template"]["spec"]["terminationGracePeriodSeconds"] >= drain + pre_stop
        drains.append(drain)
    gpu = deployments["r1voice"]["spec"]["template"]["spec"]["containers"][0]
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == 1
    mounts = {m["mountPath"] for m in gpu["volumeMounts"]}
    assert "/models" in mounts
    for name, service in by_kind["Service"].items():
        pods = deployments[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pods.items()
        if name != "vllm":
            assert service["spec"]["sessionAffinity"] == "ClientIP"  # sticky WebSockets
    front = deployments["r1voice-front"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in front["env"]}
    assert "secretKeyRef" in str(front["env"])  # the API key comes from a Secret
    assert env["R1VOICE_LLM_URL"].startswith("http://vllm:")
    hpa = by_kind["HorizontalPodAutoscaler"]["r1voice"]
    assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
    metrics = [m.get("pods", {}).get("metric", {}).get("name") for m in hpa["spec"]["metrics"]]
    assert "r1voice_active_sessions" in metrics  # a series /metrics publishes
    pdb = by_kind["PodDisruptionBudget"]["r1voice"]
    assert pdb["spec"]["selector"] == deployments["r1voice"]["spec"]["selector"]
    assert drains


def test_k8s_schemas() -> None:
    validate = pytest.importorskip("kubernetes_validate")
    checked = 0
    for obj in k8s_objects():
        if obj["kind"] != "Kustomization":
            validate.validate(obj, "1.30.0", strict=True)  # raises on a schema violation
            checked += 1
    assert checked > 0
