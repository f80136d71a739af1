"""Quantizing a whole model: which layers, and the module swap (its on-disk cache:
``engine.loading.quant_cache``).

The kernels and the quantized modules themselves live in ``engine.layers.quantization``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import torch
from torch import nn

from engine.errors import ModelLoadError
from engine.layers.int4_linear import Int4Linear
from engine.layers.kernel_choice import KernelChoice
from engine.layers.quantization import (
    INT4_GROUP_SIZES,
    Int8Embedding,
    Int8Linear,
    quantize_int8,
)
from engine.loading.quant_cache import QuantCache

log = logging.getLogger(__name__)


def quantized_modules(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    for name, module in model.named_modules():
        if isinstance(module, (Int8Linear, Int4Linear, Int8Embedding)):
            yield name, module


def weight_bytes(model: nn.Module) -> int:
    """Bytes of the model's weights as stored: quantized modules in the layout their
    kernel reads, float parameters (or a float Linear's packed copy), each counted once,
    not a tied head's copy."""
    from engine.layers.linear import Linear

    total = 0
    seen: set[int] = set()
    for name, module in model.named_modules():
        if name == "tied_head" or name.startswith("tied_head."):
            continue
        tensors: list[torch.Tensor] = []
        if isinstance(module, (Int8Linear, Int4Linear)) and module.stored_bytes:
            total += module.stored_bytes
        elif isinstance(module, Linear) and module.packed is not None:
            total += module.in_features * module.out_features * module.packed.element_size()
        else:
            tensors = list(module.parameters(recurse=False)) + list(module.buffers(recurse=False))
        if isinstance(module, (Int8Linear, Int4Linear, Linear)):
            tensors = [module.bias] if module.bias is not None else tensors[:0]
        for t in tensors:
            if t.numel() and t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                total += t.numel() * t.element_size()
    return total


def decode_weight_bytes(model: nn.Module) -> int:
    """Bytes of weights one decode step reads, its memory-bound floor: every weight but
    the embedding table, of which a step gathers a row (a tied head reads the table
    whole, so a tied model's count keeps it)."""
    total = weight_bytes(model)
    table = model.get_submodule("embed_tokens")
    table_bytes = sum(
        t.numel() * t.element_size()
        for t in [*table.parameters(recurse=False), *table.buffers(recurse=False)]
    )
    if getattr(model, "lm_head", None) is not None:
        return total - table_bytes
    tied_head = getattr(model, "tied_head", None)
    if tied_head is not None:  # the head reads its own copy (a packed or dense one)
        return total - table_bytes + weight_bytes(tied_head)
    return total


# ---- the model transform (its disk cache: engine.loading.quant_cache) ----------------


def set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, leaf = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, leaf, module)


def linear_names(model: nn.Module) -> list[str]:
    """The projections quantized by the method: every decoder Linear (the embedding and
    the LM head are int8 at either method: `quantize_model`)."""
    from engine.layers.linear import Linear

    return [
        n for n, m in model.named_modules() if isinstance(m, Linear) and n.startswith("layers.")
    ]


def check_group_size(model: nn.Module, group_size: int) -> None:
    """ModelLoadError naming the first layer whose input size ``group_size`` does not divide."""
    sizes: dict[str, int] = {
        n: int(cast(Any, model.get_submodule(n)).in_features) for n in linear_names(model)
    }
    valid = [g for g in INT4_GROUP_SIZES if all(k % g == 0 for k in sizes.values())]
    for name, k in sizes.items():
        if k % group_size:
            raise ModelLoadError(
                f"int4 quantization: layer {name} has input size {k}, not divisible by "
                f"quantization_group_size={group_size}; valid group sizes for this model: "
                f"{valid}"
            )


def quantize_model(
    model: nn.Module,
    method: str,
    group_size: int,
    cache: QuantCache | None,
    cached: dict[str, torch.Tensor] | None,
    quantize_embedding: bool = True,
) -> None:
    """Swap the loaded model's decoder Linears (and the embedding and LM head, as int8)
    for quantized modules, from ``cached`` tensors or by quantizing and saving."""
    if method == "int4":
        check_group_size(model, group_size)
    out: dict[str, torch.Tensor] = {}
    for name in linear_names(model):
        lin: Any = model.get_submodule(name)
        bias = None if lin.bias is None else lin.bias.data
        qmod: Int8Linear | Int4Linear
        if method == "int8":
            if cached is not None:
                qmod = Int8Linear(lin.in_features, lin.out_features, bias is not None)
                qmod.weight, qmod.scales = cached[f"{name}.weight"], cached[f"{name}.scales"]
                if bias is not None:
                    qmod.bias = nn.Parameter(bias, requires_grad=False)
            else:
                qmod = Int8Linear.from_float(lin.weight.data, bias)
        else:
            if cached is not None:
                qmod = Int4Linear(lin.in_features, lin.out_features, group_size, bias is not None)
                qmod.weight = cached[f"{name}.weight"]
                qmod.scales, qmod.mins = cached[f"{name}.scales"], cached[f"{name}.mins"]
                if bias is not None:
                    qmod.bias = nn.Parameter(bias, requires_grad=False)
            else:
                qmod = Int4Linear.from_float(lin.weight.data, group_size, bias)
        device = lin.bias.device if lin.bias is not None else lin.weight.device
        qmod.to(device)
        set_module(model, name, qmod)
        out.update({f"{name}.{k}": v for k, v in qmod.named_buffers()})
    # int4 too: a float head would be most of an int4 model's bytes read per token.
    if method in ("int8", "int4") and quantize_embedding:
        emb: Any = model.get_submodule("embed_tokens")
        if cached is not None:
            q, s = cached["embed_tokens.qweight"], cached["embed_tokens.scales"]
        else:
            q, s = quantize_int8(emb.weight.data)
        device, dtype = emb.weight.device, emb.weight.dtype
        qemb = Int8Embedding(q.to(device), s.to(device), dtype)
        model.embed_tokens = qemb  # type: ignore[assignment]
        out["embed_tokens.qweight"], out["embed_tokens.scales"] = q, s
        head: Any = getattr(model, "lm_head", None)
        if head is not None:  # untied (Qwen2.5's 151,936-row head): a float one dominated a step
            qhead = Int8Linear(head.in_features, head.out_features)
            if cached is not None:
                qhead.weight, qhead.scales = cached["lm_head.weight"], cached["lm_head.scales"]
            else:
                qhead.weight, qhead.scales = quantize_int8(head.weight.data)
            qhead.to(head.weight.device)
            model.lm_head = qhead  # type: ignore[assignment]
            out["lm_head.weight"], out["lm_head.scales"] = qhead.weight, qhead.scales
    if cached is None and cache is not None:
        cache.save(out)


HEAD_SLICE = 8192  # the head's outputs KernelChoice times


def prepare_quantized(
    model: nn.Module, int8_kernel: str = "measure", transposed: QuantCache | None = None
) -> dict[str, str]:
    """After the float layers' ``prepare``: pick kernels, the int8 projections' paths
    by measurement (KernelChoice; ``int8_kernel`` may force one); an int8 tied head
    shares the embedding's int8 table (ignoring any packed float head ``prepare`` made).
    ``transposed``: where the int_mm path's transposed weights are cached (making them
    from the packed layout took seconds a start). Returns each int8 shape's paths by row
    class, as the startup log gives them, and the head's under ``"head <in>x<out>"``."""
    choosing: dict[str, Int8Linear] = {}
    for name, module in quantized_modules(model):
        if isinstance(module, (Int8Linear, Int4Linear)):
            module.prepare()
        if isinstance(module, Int8Linear) and module.vnni is not None and name != "lm_head":
            choosing[name] = module
    emb = getattr(model, "embed_tokens", None)
    head: Int8Linear | None = getattr(model, "lm_head", None)
    if isinstance(emb, Int8Embedding) and head is None:
        head = Int8Linear(emb.qweight.shape[1], emb.qweight.shape[0])
        head.weight, head.scales = emb.qweight, emb.scales
        head.prepare(release=False)  # the embedding still gathers rows from it
        model.tied_head = head  # type: ignore[assignment]
    chooser = KernelChoice(int8_kernel)
    choices = chooser.choose((m.in_features, m.out_features) for m in choosing.values())
    cached = transposed.load() if transposed is not None else None
    for name, module in choosing.items():
        if cached is not None and f"{name}.weight_t" in cached:
            module.weight_t = cached[f"{name}.weight_t"]  # take_paths then keeps it
        module.take_paths(choices[(module.in_features, module.out_features)].paths)
    made = {f"{n}.weight_t": m.weight_t for n, m in choosing.items() if m.weight_t is not None}
    if transposed is not None and cached is None and made:
        transposed.save(made)
    summary = {}
    for (k, n), choice in choices.items():
        log.info("int8 %dx%d (%s): %s", k, n, chooser.source, choice.describe())
        summary[f"{k}x{n}"] = " ".join(choice.paths)
    if isinstance(head, Int8Linear) and head.vnni is not None:
        # Timed on its first HEAD_SLICE outputs (all 151,936 of Qwen's would cost seconds
        # a start), on our kernels only: torch's path would keep a second copy of the
        # whole table. The slice sits in cache where the table streams from memory, so
        # this times the arithmetic; MARGIN keeps a close call on our VNNI kernel.
        heads = KernelChoice(int8_kernel, ours_only=True)
        shape = (head.in_features, min(head.out_features, HEAD_SLICE))
        choice = heads.choose([shape])[shape]
        head.take_paths(choice.paths)
        name = f"head {head.in_features}x{head.out_features}"
        log.info("int8 %s (%s on %d outputs): %s", name, heads.source, shape[1], choice.describe())
        summary[name] = " ".join(choice.paths)
    return summary
