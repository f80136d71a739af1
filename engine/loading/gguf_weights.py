"""Loading a GGUF's weights straight into the engine's layout, tensor by tensor.

No fp32 copy is written and the fp32 model is never whole in memory: each projection is
dequantized (or read as its int4 groups) on its own and swapped for its quantized
module before the next is read. What each projection becomes:

* ``int8``: every projection int8 per output channel, from its dequantized weights.
* ``int4``: a projection whose parts are all 4-bit (Q4_K, Q4_0, Q4_1) keeps the file's
  own values: q, scale and min of each group of 32 read from the blocks (the group size
  of the config applies to what is quantized from floats); one with a wider part (Q5,
  Q6_K, Q8_0) is int8, which holds it (requantized to 4 bits it would lose what the
  file kept); one of float parts (F32/F16/BF16) is quantized to int4 as usual.
* ``none``: the GGUF's own dequantized weights, as the model's float parameters.

The embedding and an untied head are int8 at either method, as for a float checkpoint.
The quantized tensors and the float ones (norms, biases) go to the QuantCache, keyed by
the GGUF's sha256 (or path, size and mtime where its directory did not record it), so a
later start reads neither the GGUF nor its tokens.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.errors import ModelLoadError
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.int4_linear import Int4Linear
from engine.layers.quantization import Int8Embedding, Int8Linear, pack_nibbles, quantize_int8
from engine.loading.gguf_file import FLOAT_TYPES, GROUP, INT4_EXACT, GGUFFile
from engine.loading.model_store import gguf_sha256
from engine.loading.quant_cache import QuantCache
from engine.loading.quantized_model import linear_names, set_module

FLOAT_PREFIX = "float."  # the cache's float parameters (norms, biases)
# Our module -> the GGUF tensors stacked (along the rows) into it.
_LAYER_PARTS = {
    "self_attn.qkv_proj": ("attn_q", "attn_k", "attn_v"),
    "self_attn.o_proj": ("attn_output",),
    "mlp.gate_up_proj": ("ffn_gate", "ffn_up"),
    "mlp.down_proj": ("ffn_down",),
    "input_layernorm": ("attn_norm",),
    "post_attention_layernorm": ("ffn_norm",),
}
_TOP = {"embed_tokens": "token_embd", "lm_head": "output", "norm": "output_norm"}


def gguf_names(module: str) -> list[str]:
    """The GGUF tensors (without ``.weight``/``.bias``) behind one of our modules."""
    if module in _TOP:
        return [_TOP[module]]
    match = re.fullmatch(r"layers\.(\d+)\.(.+)", module)
    if match is None or match[2] not in _LAYER_PARTS:
        raise ModelLoadError(f"no GGUF tensor maps to the engine's {module}")
    return [f"blk.{match[1]}.{part}" for part in _LAYER_PARTS[match[2]]]


class _Reader:
    """A GGUF's tensors under our names, rows un-permuted where llama.cpp permuted them."""

    def __init__(self, path: Path, config: Any) -> None:
        self.gguf = GGUFFile(path)
        self.heads = {
            "attn_q": int(config.num_attention_heads),
            "attn_k": int(getattr(config, "num_key_value_heads", config.num_attention_heads)),
        }
        # llama.cpp's converter interleaves the rotary halves of llama's q and k rows
        # (not qwen2's); transformers' GGUF loader undoes it the same way.
        self.permuted = self.gguf.architecture == "llama"

    def _rows(self, name: str, n: int) -> torch.Tensor | None:
        part = name.split(".")[2] if name.startswith("blk.") else ""
        if not self.permuted or part not in self.heads:
            return None
        heads = self.heads[part]
        return torch.arange(n).reshape(heads, n // heads // 2, 2).transpose(1, 2).reshape(-1)

    def types(self, module: str, leaf: str = "weight") -> list[str]:
        return [self.gguf.tensor(f"{n}.{leaf}").type_name for n in gguf_names(module)]

    def float(self, module: str, leaf: str = "weight") -> torch.Tensor:
        parts = []
        for base in gguf_names(module):
            w = self.gguf.dequantize(f"{base}.{leaf}")
            rows = self._rows(f"{base}.{leaf}", w.shape[0])
            parts.append(w if rows is None else w[rows])
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def int8_rows(self, module: str, chunk: int = 8192) -> tuple[torch.Tensor, torch.Tensor]:
        """quantize_int8 of a one-tensor module (the embedding, the head) a chunk of rows
        at a time (per-row scales: the same result), never the whole table in fp32."""
        (base,) = gguf_names(module)
        n = self.gguf.tensor(f"{base}.weight").shape[0]
        parts = [
            quantize_int8(self.gguf.dequantize(f"{base}.weight", slice(i, i + chunk)))
            for i in range(0, n, chunk)
        ]
        return torch.cat([q for q, _ in parts]), torch.cat([s for _, s in parts])

    def int4(self, module: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        qs, ss, ms = [], [], []
        for base in gguf_names(module):
            q, s, m = self.gguf.int4_groups(f"{base}.weight")
            rows = self._rows(f"{base}.weight", q.shape[0])
            if rows is not None:
                q, s, m = q[rows], s[rows], m[rows]
            qs.append(q)
            ss.append(s)
            ms.append(m)
        return torch.cat(qs), torch.cat(ss), torch.cat(ms)

    def has(self, module: str, leaf: str) -> bool:
        return all(f"{n}.{leaf}" in self.gguf.tensors for n in gguf_names(module))


def _check(reader: _Reader, model: nn.Module) -> None:
    """Before any weight is read: every tensor present, of a type we read, of its shape."""
    for name, param in model.named_parameters():
        module, _, leaf = name.rpartition(".")
        if not param.numel() or name.startswith("tied_head"):
            continue
        rows = 0
        for base in gguf_names(module):
            tensor = reader.gguf.tensor(f"{base}.{leaf}")
            rows += tensor.shape[0]
            if tensor.shape[1:] != param.shape[1:]:
                raise ModelLoadError(
                    f"{reader.gguf.path}: tensor {base}.{leaf} has shape {tensor.shape}, "
                    f"the model's {name} wants {tuple(param.shape)}"
                )
        if rows != param.shape[0]:
            raise ModelLoadError(
                f"{reader.gguf.path}: {gguf_names(module)} make {rows} rows, "
                f"the model's {name} has {param.shape[0]}"
            )


def _projection(
    reader: _Reader, name: str, lin: Any, method: str, group_size: int
) -> Int8Linear | Int4Linear:
    bias = reader.float(name, "bias") if lin.bias is not None else None
    types = reader.types(name)
    if method == "int4" and all(t in INT4_EXACT for t in types):
        q, s, m = reader.int4(name)
        qmod = Int4Linear(lin.in_features, lin.out_features, GROUP, bias is not None)
        qmod.weight, qmod.scales, qmod.mins = pack_nibbles(q), s, m
        if bias is not None:
            qmod.bias = nn.Parameter(bias, requires_grad=False)
        return qmod
    if method == "int4" and all(t in FLOAT_TYPES for t in types):
        return Int4Linear.from_float(reader.float(name), group_size, bias)
    return Int8Linear.from_float(reader.float(name), bias)


def _entries(name: str, qmod: Int8Linear | Int4Linear) -> dict[str, torch.Tensor]:
    """What the cache keeps of a projection: its buffers, or once ``prepare`` packed it
    for our kernels that layout (repacking took seconds a start), with int4's group."""
    if qmod.vnni is None:
        return {f"{name}.{k}": v for k, v in qmod.named_buffers()}
    out = {f"{name}.vnni{i}": t for i, t in enumerate(qmod.vnni) if t is not None}
    if isinstance(qmod, Int4Linear):
        out[f"{name}.group"] = torch.tensor([qmod.group_size])
    else:  # the unpadded scales: the int_mm path reads them
        out[f"{name}.scales"] = qmod.scales
    return out


def _from_cache(cached: dict[str, torch.Tensor], name: str, lin: Any) -> Int8Linear | Int4Linear:
    bias = cached.get(f"{FLOAT_PREFIX}{name}.bias")
    vnni = [cached[k] for i in range(4) if (k := f"{name}.vnni{i}") in cached]
    qmod: Int8Linear | Int4Linear
    if f"{name}.mins" in cached or f"{name}.group" in cached:
        if vnni:
            group = int(cached[f"{name}.group"][0])
        else:
            group = lin.in_features // cached[f"{name}.mins"].shape[1]
        qmod = Int4Linear(lin.in_features, lin.out_features, group, bias is not None)
        if not vnni:
            qmod.scales, qmod.mins = cached[f"{name}.scales"], cached[f"{name}.mins"]
    else:
        qmod = Int8Linear(lin.in_features, lin.out_features, bias is not None)
        qmod.scales = cached[f"{name}.scales"]
    if bias is not None:
        qmod.bias = nn.Parameter(bias, requires_grad=False)
    if vnni:
        qmod.load_packed(tuple(vnni))
    else:
        qmod.weight = cached[f"{name}.weight"]
    return qmod


def quant_cache(
    model_dir: Path,
    gguf_path: Path,
    method: str,
    group_size: int,
    device: torch.device,
    dtype: torch.dtype,
) -> QuantCache | None:
    """Where a GGUF model's quantized tensors are cached (None at "none"): in our CPU
    kernels' packed layout when they will run it (fp32 on CPU), else as plain buffers."""
    if method == "none":
        return None
    ours = device.type == "cpu" and dtype == torch.float32 and CpuKernels.ops() is not None
    layout = "vnni" if ours else ""
    sha256 = gguf_sha256(model_dir)
    return QuantCache(model_dir, method, group_size, gguf_path, layout, source_sha256=sha256)


def load_gguf_weights(
    model: nn.Module, gguf_path: Path, model_dir: Path, method: str, group_size: int
) -> None:
    """Fill ``model`` (materialized, float) from the GGUF at ``gguf_path``: quantized
    projections swapped in (module docstring), then the float parameters left."""
    embed: Any = model.get_submodule("embed_tokens")
    device: torch.device = embed.weight.device
    cache = quant_cache(model_dir, gguf_path, method, group_size, device, embed.weight.dtype)
    layout = cache.layout if cache is not None else ""
    cached = cache.load() if cache is not None else None
    reader = None
    if cached is None:
        reader = _Reader(gguf_path, model.config)  # type: ignore[arg-type]
        _check(reader, model)
    out: dict[str, torch.Tensor] = {}
    if method != "none":
        for name in linear_names(model):
            lin: Any = model.get_submodule(name)
            if cached is not None:
                qmod = _from_cache(cached, name, lin)
            else:
                assert reader is not None
                qmod = _projection(reader, name, lin, method, group_size).to(device)
                if layout:
                    qmod.prepare()
                out.update(_entries(name, qmod))
            set_module(model, name, qmod.to(device))
        _int8_ends(model, reader, cached, out, layout)
    for name, param in model.named_parameters():
        if not param.numel():
            continue
        module, _, leaf = name.rpartition(".")
        if cached is not None:
            tensor = cached[FLOAT_PREFIX + name]
        else:
            assert reader is not None
            tensor = reader.float(module, leaf)
            out[FLOAT_PREFIX + name] = tensor
        with torch.no_grad():
            param.copy_(tensor.reshape(param.shape))
    if cache is not None and cached is None:
        cache.save(out)


def _int8_ends(
    model: nn.Module,
    reader: _Reader | None,
    cached: dict[str, torch.Tensor] | None,
    out: dict[str, torch.Tensor],
    layout: str,
) -> None:
    """The embedding (and an untied head) as int8, read one at a time."""
    emb: Any = model.get_submodule("embed_tokens")
    if cached is not None:
        q, s = cached["embed_tokens.qweight"], cached["embed_tokens.scales"]
    else:
        assert reader is not None
        q, s = reader.int8_rows("embed_tokens")
        out["embed_tokens.qweight"], out["embed_tokens.scales"] = q, s
    device, dtype = emb.weight.device, emb.weight.dtype
    model.embed_tokens = Int8Embedding(q.to(device), s.to(device), dtype)  # type: ignore[assignment]
    head: Any = getattr(model, "lm_head", None)
    if head is None:
        return
    if cached is not None:
        qhead = _from_cache(cached, "lm_head", head)
    else:
        assert reader is not None
        qhead = Int8Linear(head.in_features, head.out_features)
        qhead.weight, qhead.scales = reader.int8_rows("lm_head")
        if layout:
            qhead.prepare()
        out.update(_entries("lm_head", qhead))
    model.lm_head = qhead.to(head.weight.device)  # type: ignore[assignment]
