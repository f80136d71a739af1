"""The loader: a model name -> our model (fused projections, quantized), its tokenizer
and its end-of-sequence ids, on the device the config asks for."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from engine.architectures import MODEL_REGISTRY, LlamaForCausalLM
from engine.errors import ConfigError, ModelLoadError
from engine.layers import quantization as quantization_module
from engine.loading import model_store, quantized_model
from engine.loading.bundled_gguf import default_quantization
from engine.loading.fast_tokenizer import FastTokenizer
from engine.loading.gguf_weights import load_gguf_weights, quant_cache
from engine.loading.model_config import ModelConfig
from engine.loading.model_store import gguf_source, resolve_model
from engine.loading.transformers_lock import TRANSFORMERS_LOCK

if TYPE_CHECKING:
    from engine.config import EngineConfig

log = logging.getLogger(__name__)
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Our fused parameter -> the Hugging Face tensors concatenated (along dim 0) into it.
_FUSED = {
    "self_attn.qkv_proj": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    "mlp.gate_up_proj": ("mlp.gate_proj", "mlp.up_proj"),
}


def load_config(model_dir: Path) -> Any:
    """The config of a model directory (its config.json as it is when that is complete,
    see ModelConfig; else transformers' AutoConfig), or ModelLoadError."""
    try:
        raw = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {model_dir / 'config.json'}: {exc}") from exc
    model_type = raw.get("model_type")
    if model_type not in MODEL_REGISTRY:
        raise ModelLoadError(
            f"unsupported architecture model_type={model_type!r} in {model_dir}; "
            f"the engine implements {sorted(MODEL_REGISTRY)}"
        )
    if ModelConfig.complete(raw):
        return ModelConfig(raw)
    with TRANSFORMERS_LOCK:  # the tokenizer may be loading through it on another thread
        import transformers

        try:
            return transformers.AutoConfig.from_pretrained(str(model_dir))
        except Exception as exc:  # transformers raises many types for a bad config
            raise ModelLoadError(f"cannot parse the config of {model_dir}: {exc}") from exc


def materialize(model: nn.Module, device: torch.device, dtype: torch.dtype) -> None:
    """``model.to_empty(device=device).to(dtype)`` for a model built on the meta device,
    allocating with ``torch.empty`` (floating tensors in ``dtype``): ``empty_like`` of a
    meta tensor runs torch._refs, whose first call imports sympy (half a second a start)."""
    made: dict[int, torch.Tensor] = {}  # a tensor two modules share stays shared

    def empty(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in made:
            kind = dtype if t.is_floating_point() else t.dtype
            made[id(t)] = torch.empty(t.shape, dtype=kind, device=device)
        return made[id(t)]

    for module in model.modules():
        for name, param in module._parameters.items():
            if param is not None:
                new = empty(param)
                if not isinstance(new, nn.Parameter):
                    new = made[id(param)] = nn.Parameter(new, param.requires_grad)
                module._parameters[name] = new
        for name, buffer in module._buffers.items():
            if buffer is not None:
                module._buffers[name] = empty(buffer)


def _open_checkpoint(model_dir: Path) -> dict[str, Any]:
    """Map every tensor name to an open safetensors handle (memory-mapped, lazy)."""
    from safetensors import safe_open

    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        files = sorted(set(weight_map.values()))
    else:
        files = sorted(p.name for p in model_dir.glob("*.safetensors"))
    if not files:
        raise ModelLoadError(f"no .safetensors weights in {model_dir}")
    handles: dict[str, Any] = {}
    for name in files:
        try:
            handle = safe_open(str(model_dir / name), framework="pt", device="cpu")
        except Exception as exc:  # SafetensorError, OSError: truncated or corrupt file
            raise ModelLoadError(
                f"cannot read weights {model_dir / name}: {exc} (truncated or corrupt?)"
            ) from exc
        for key in handle.keys():  # noqa: SIM118 - safe_open is not a dict
            handles[key] = handle
    return handles


def _hf_names(param_name: str) -> list[str]:
    """The checkpoint tensors behind one of our parameters."""
    module, _, leaf = param_name.rpartition(".")
    for fused, parts in _FUSED.items():
        if module.endswith(fused):
            prefix = module[: -len(fused)]
            return [f"model.{prefix}{part}.{leaf}" for part in parts]
    if param_name.startswith("lm_head."):
        return [param_name]
    return [f"model.{param_name}"]


def load_model(
    model_dir: Path,
    device: torch.device,
    dtype: torch.dtype,
    quantization: str = "none",
    group_size: int = 128,
    int8_kernel: str = "measure",
) -> LlamaForCausalLM:
    """Build the model for ``model_dir`` on ``device`` in ``dtype`` and load its weights,
    quantized (engine.layers.quantization; cached on disk) unless ``quantization`` is "none"."""
    config = load_config(model_dir)
    with torch.device("meta"):
        model = MODEL_REGISTRY[config.model_type](config)
    quantization_module.check_method(quantization, group_size)
    if quantization == "int4":  # fail before reading any weight
        quantized_model.check_group_size(model, group_size)
    materialize(model, device, dtype)
    gguf_path = gguf_source(model_dir)
    if gguf_path is not None:  # no fp32 copy: straight from the file, tensor by tensor
        load_gguf_weights(model, gguf_path, model_dir, quantization, group_size)
        cache = quant_cache(model_dir, gguf_path, quantization, group_size, device, dtype)
        transposed = cache.sibling("int_mm") if cache is not None and cache.layout else None
        return _ready(model, device, dtype, int8_kernel, transposed)
    cache, cached = None, None
    if quantization != "none":
        cache = quantized_model.QuantCache(model_dir, quantization, group_size)
        cached = cache.load()
        if cached is not None:  # swap first: the float weights are then never read
            quantized_model.quantize_model(model, quantization, group_size, cache, cached)
    handles = _open_checkpoint(model_dir)
    # (an int8 embedding keeps an empty float ``weight``: nothing to load into it)
    params: dict[str, nn.Parameter] = {n: p for n, p in model.named_parameters() if p.numel()}
    for name, param in params.items():
        sources = _hf_names(name)
        missing = [s for s in sources if s not in handles]
        if missing:
            raise ModelLoadError(f"{model_dir}: checkpoint lacks {missing[0]}")
        try:
            tensors = [handles[s].get_tensor(s) for s in sources]
        except Exception as exc:
            raise ModelLoadError(f"{model_dir}: cannot read {sources[0]}: {exc}") from exc
        tensor = tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim=0)
        if tensor.shape != param.shape:
            raise ModelLoadError(
                f"{model_dir}: {sources} has shape {tuple(tensor.shape)}, "
                f"expected {tuple(param.shape)}"
            )
        with torch.no_grad():
            param.copy_(tensor)
    if quantization != "none" and cached is None:
        quantized_model.quantize_model(model, quantization, group_size, cache, None)
    return _ready(model, device, dtype, int8_kernel)


def _ready(
    model: LlamaForCausalLM,
    device: torch.device,
    dtype: torch.dtype,
    int8_kernel: str,
    transposed: quantized_model.QuantCache | None = None,
) -> LlamaForCausalLM:
    """After the weights: kernels' layouts and paths, the flat pass, the rotary table."""
    model.prepare()
    model.int8_paths = quantized_model.prepare_quantized(model, int8_kernel, transposed)
    model.flatten()
    model.rotary.build(device, dtype)
    return model.eval()


def prepare_bundled_llm(name: str, *, force: bool = False) -> Path:
    """``model_store.prepare_bundled_llm``; a model read from its GGUF is quantized into
    its cache at the server's default for it (``default_quantization``: int4 for the
    1.5B) too, so a first start reads that cache."""
    path = model_store.prepare_bundled_llm(name, force=force)
    write_quantized_cache(path, default_quantization(name))
    return path


def write_quantized_cache(model_dir: Path, quantization: str, group_size: int = 128) -> None:
    """Quantize a model read from its GGUF into its QuantCache now (`r1voice models
    prepare`), so that a first start reads the cache instead of the GGUF's blocks."""
    gguf_path = gguf_source(model_dir)
    if gguf_path is None or quantization == "none":
        return
    cpu = torch.device("cpu")
    cache = quant_cache(model_dir, gguf_path, quantization, group_size, cpu, torch.float32)
    if cache is None or cache.path.is_file():
        return
    config = load_config(model_dir)
    with torch.device("meta"):
        model = MODEL_REGISTRY[config.model_type](config)
    materialize(model, cpu, torch.float32)
    load_gguf_weights(model, gguf_path, model_dir, quantization, group_size)


@dataclass
class LoadedModel:
    """What ``load`` hands the engine: the model and what it needs to serve it."""

    model_path: Path
    model: LlamaForCausalLM
    tokenizer: Any  # a transformers tokenizer, or None (token-id prompts only)
    eos_token_ids: set[int]
    max_model_len: int  # the config's, checked against the model's positions


def load(config: EngineConfig) -> LoadedModel:
    """Resolve ``config.model``, pick device and dtype, load weights and tokenizer."""
    model_path = resolve_model(config.model)
    use_cuda = config.device == "cuda" or (config.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if use_cuda else config.device.replace("auto", "cpu"))
    default_dtype = "bfloat16" if device.type == "cuda" else "float32"
    dtype = _DTYPES[default_dtype if config.dtype == "auto" else config.dtype]
    # The tokenizer loads beside the weights: its Rust parse and the quantized cache's
    # digest both run without the GIL. (A thread started here inherits this one's OS name.)
    with ThreadPoolExecutor(1, thread_name_prefix="tokenizer-load") as pool:
        tokenizer = pool.submit(load_tokenizer, model_path)
        model = load_model(
            model_path,
            device,
            dtype,
            config.quantization,
            config.quantization_group_size,
            config.int8_kernel,
        )
    max_pos = int(model.config.max_position_embeddings)
    max_model_len = config.max_model_len or max_pos
    if max_model_len > max_pos:
        raise ConfigError(f"max_model_len {max_model_len} > the model's {max_pos} positions")
    return LoadedModel(
        model_path,
        model,
        tokenizer.result(),
        eos_ids(model_path, model.config),
        max_model_len,
    )


def load_tokenizer(model_dir: Path) -> Any:
    """The directory's tokenizer: a FastTokenizer (no transformers import) where it
    reads the files as transformers would, else transformers' AutoTokenizer."""
    try:
        fast = FastTokenizer.load(model_dir)
    except Exception:  # files it cannot read: transformers decides, as it always did
        log.debug("FastTokenizer cannot read %s", model_dir, exc_info=True)
        fast = None
    if fast is not None:
        return fast
    with TRANSFORMERS_LOCK:  # the config may be loading through it on another thread
        import transformers

        try:
            return transformers.AutoTokenizer.from_pretrained(str(model_dir))
        except Exception:  # a directory without tokenizer files: token-id prompts only
            log.info("no tokenizer in %s: prompts must be token ids", model_dir)
            return None


def eos_ids(model_dir: Path, config: Any) -> set[int]:
    """End-of-sequence ids from the config and generation_config.json (either may list)."""
    ids: set[int] = set()
    values = [getattr(config, "eos_token_id", None)]
    gen = model_dir / "generation_config.json"
    if gen.is_file():
        values.append(json.loads(gen.read_text()).get("eos_token_id"))
    for value in values:
        ids.update(value if isinstance(value, list) else [] if value is None else [value])
    return ids
