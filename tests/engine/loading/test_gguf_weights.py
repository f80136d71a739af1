"""Loading a GGUF straight into the engine's layout, checked against gguf's own
dequantization (and transformers on those dequantized weights)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from engine import LLM, ModelLoadError, SamplingParams
from engine.architectures import MODEL_REGISTRY
from engine.layers.int4_linear import Int4Linear
from engine.layers.quantization import QUANTIZE_CALLS, Int8Linear, dequantize_int4, unpack_nibbles
from engine.loading import gguf_weights
from engine.loading.gguf_file import GGUFFile
from engine.loading.gguf_weights import load_gguf_weights, quant_cache
from engine.loading.model_loader import load_config, write_quantized_cache
from engine.loading.model_store import COMPLETE_MARKER, GGUF_SOURCE, gguf_source
from tests.engine.tiny_models import build_tiny, hf_greedy

gguf = pytest.importorskip("gguf")
T = gguf.GGMLQuantizationType
# Our module name in HF's checkpoint -> the GGUF's, per layer.
_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
}
# The Q4_K_M mix: 4-bit projections, a Q6_K one, a Q8_0 one (K-quants need rows of 256).
TYPES = {
    "attn_q": T.Q4_K,
    "attn_k": T.Q4_K,
    "attn_v": T.Q6_K,
    "attn_output": T.Q8_0,
    "ffn_gate": T.Q4_K,
    "ffn_up": T.Q4_0,
    "ffn_down": T.Q4_1,
    "token_embd": T.Q8_0,
    "output": T.F16,
}


def _q4_k(w: np.ndarray) -> np.ndarray:
    """A plain Q4_K quantizer (gguf-py has none): per sub-block of 32 an affine grid,
    6-bit scales and mins under fp16 super-block factors, packed as ggml lays them out."""
    rows = w.shape[0]
    g = w.astype(np.float32).reshape(-1, 8, 32)
    lo = np.minimum(g.min(-1), 0.0)
    scale = (g.max(-1) - lo) / 15.0
    d = np.maximum(scale.max(-1, keepdims=True) / 63.0, 1e-8).astype(np.float16)
    dmin = np.maximum((-lo).max(-1, keepdims=True) / 63.0, 1e-8).astype(np.float16)
    sc = np.clip(np.round(scale / d.astype(np.float32)), 1, 63).astype(np.uint8)
    mn = np.clip(np.round(-lo / dmin.astype(np.float32)), 0, 63).astype(np.uint8)
    s = (d.astype(np.float32) * sc)[..., None]
    m = (dmin.astype(np.float32) * mn)[..., None]
    q = np.clip(np.round((g + m) / s), 0, 15).astype(np.uint8)
    packed = np.zeros((g.shape[0], 12), dtype=np.uint8)
    packed[:, :4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    packed[:, 4:8] = mn[:, :4] | ((mn[:, 4:] >> 4) << 6)
    packed[:, 8:] = (sc[:, 4:] & 15) | ((mn[:, 4:] & 15) << 4)
    pairs = q.reshape(-1, 4, 2, 32)
    qs = (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).reshape(-1, 128)
    blocks = np.concatenate([d.view(np.uint8), dmin.view(np.uint8), packed, qs], axis=1)
    return blocks.reshape(rows, -1)


def _q6_k(w: np.ndarray, seed: int) -> np.ndarray:
    """Random Q6_K blocks of ``w``'s shape (gguf-py cannot quantize to Q6_K): any bits
    are a valid tensor once the fp16 factor is a small number."""
    rows, cols = w.shape
    raw = np.random.default_rng(seed).integers(0, 256, (rows * cols // 256, 210), np.uint8)
    raw[:, 208:] = np.full((raw.shape[0], 1), 0.002, np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def _encode(w: np.ndarray, qtype: Any, seed: int) -> np.ndarray:
    if qtype == T.Q4_K:
        return _q4_k(w)
    if qtype == T.Q6_K:
        return _q6_k(w, seed)
    if qtype == T.Q2_K:  # zeros: a valid Q2_K tensor of zeros (the engine refuses the type)
        return np.zeros((w.shape[0], w.shape[1] // 256 * 84), np.uint8)
    return gguf.quants.quantize(w.astype(np.float32), qtype)


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter's q/k row order for llama (the loader must undo it)."""
    return (
        w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def write_gguf(hf: Any, path: Path, types: dict[str, Any]) -> dict[str, np.ndarray]:
    """``hf``'s weights as a GGUF of ``types``; returns each GGUF tensor dequantized by
    gguf-py (in the checkpoint's row order), the reference the engine must hold."""
    cfg = hf.config
    arch = cfg.model_type
    writer = gguf.GGUFWriter(str(path), arch)
    reference: dict[str, np.ndarray] = {}
    for i, (hf_name, tensor) in enumerate(hf.state_dict().items()):
        parts = hf_name.split(".")
        if hf_name == "model.embed_tokens.weight":
            base, leaf = "token_embd", "weight"
        elif hf_name == "lm_head.weight":
            base, leaf = "output", "weight"
        elif hf_name == "model.norm.weight":
            base, leaf = "output_norm", "weight"
        else:
            layer, module, leaf = parts[2], ".".join(parts[3:-1]), parts[-1]
            base = f"blk.{layer}.{_NAMES[module]}"
        short = base.split(".")[-1]
        w = tensor.detach().float().numpy()
        qtype = types.get(short, T.F32) if leaf == "weight" and w.ndim == 2 else T.F32
        heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
        permute = arch == "llama" and short in heads
        stored = _permute(w, heads[short]) if permute else w
        data = _encode(stored, qtype, i) if qtype != T.F32 else stored.astype(np.float32)
        writer.add_tensor(f"{base}.{leaf}", data, raw_dtype=qtype)
        ref = gguf.quants.dequantize(data, qtype).reshape(w.shape)
        if permute:  # the inverse of _permute
            h = heads[short]
            ref = ref.reshape(h, w.shape[0] // h // 2, 2, *w.shape[1:]).swapaxes(1, 2)
            ref = ref.reshape(w.shape)
        reference[hf_name] = ref
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return reference


def gguf_model(tmp_path: Path, model_type: str, types: dict[str, Any] = TYPES) -> tuple[Path, Any]:
    """A model directory whose weights are a GGUF (as index_gguf writes one, with the
    tiny model's config), and the transformers model holding gguf's dequantization."""
    src, hf = build_tiny(
        tmp_path / "hf", model_type=model_type, tie=False, hidden_size=256, intermediate_size=512
    )
    path = tmp_path / "tiny.gguf"
    reference = write_gguf(hf, path, types)
    hf.load_state_dict({k: torch.from_numpy(v) for k, v in reference.items()})
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text((src / "config.json").read_text())
    stat = path.stat()
    source = {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    (model_dir / GGUF_SOURCE).write_text(json.dumps(source))
    (model_dir / COMPLETE_MARKER).write_text("{}")
    return model_dir, hf


@pytest.mark.parametrize("qtype", ["Q4_K", "Q4_0", "Q4_1"])
def test_4bit_blocks_read_as_groups_are_ggufs_own_values(tmp_path: Path, qtype: str) -> None:
    w = np.random.default_rng(0).normal(size=(48, 512)).astype(np.float32)
    data = _encode(w, T[qtype], 0)
    writer = gguf.GGUFWriter(str(tmp_path / "t.gguf"), "qwen2")
    writer.add_tensor("w", data, raw_dtype=T[qtype])
    writer.write_header_to_file(), writer.write_kv_data_to_file()
    writer.write_tensors_to_file(), writer.close()
    q, s, m = GGUFFile(tmp_path / "t.gguf").int4_groups("w")
    assert q.shape == (48, 512) and s.shape == m.shape == (48, 16)
    assert int(q.max()) <= 15
    ours = dequantize_int4(q, s, m, 32)
    assert torch.equal(ours, torch.from_numpy(gguf.quants.dequantize(data, T[qtype])))


@pytest.mark.parametrize("model_type", ["qwen2", "llama"])
def test_unquantized_load_matches_transformers_on_the_dequantized_weights(
    tmp_path: Path, model_type: str
) -> None:
    model_dir, hf = gguf_model(tmp_path, model_type)
    llm = LLM(str(model_dir), quantization="none")
    prompts = [[5, 9, 3, 7, 11], [40, 2, 2, 200, 17, 8]]
    out = llm.generate(prompts, SamplingParams(max_tokens=8, temperature=0, ignore_eos=True))
    assert [o.token_ids for o in out] == [hf_greedy(hf, p, 8) for p in prompts]


def _loaded(model_dir: Path, method: str) -> Any:
    config = load_config(model_dir)
    with torch.device("meta"):
        model = MODEL_REGISTRY[config.model_type](config)
    model.to_empty(device=torch.device("cpu"))
    path = gguf_source(model_dir)
    assert path is not None
    load_gguf_weights(model, path, model_dir, method, 128)
    return model


def _cache_path(model_dir: Path, path: Path, method: str = "int8") -> Path:
    cache = quant_cache(model_dir, path, method, 128, torch.device("cpu"), torch.float32)
    assert cache is not None
    return cache.path


def test_int4_keeps_the_files_4bit_groups_and_holds_wider_ones_at_int8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # without our kernels the modules keep their plain buffers (not the packed layout)
    monkeypatch.setattr(gguf_weights.CpuKernels, "ops", staticmethod(lambda: None))
    model_dir, hf = gguf_model(tmp_path, "qwen2")
    model = _loaded(model_dir, "int4")
    layer, ref = model.layers[1], hf.model.layers[1]
    gate_up = layer.mlp.gate_up_proj  # Q4_K + Q4_0: the file's groups of 32, exactly
    assert isinstance(gate_up, Int4Linear) and gate_up.group_size == 32
    want = torch.cat([ref.mlp.gate_proj.weight, ref.mlp.up_proj.weight])
    got = dequantize_int4(unpack_nibbles(gate_up.weight), gate_up.scales, gate_up.mins, 32)
    assert torch.equal(got, want)
    down = layer.mlp.down_proj  # Q4_1
    assert isinstance(down, Int4Linear)
    got = dequantize_int4(unpack_nibbles(down.weight), down.scales, down.mins, 32)
    assert torch.equal(got, ref.mlp.down_proj.weight)
    # q and k Q4_K, v Q6_K: the fused projection is int8, not requantized to 4 bits
    assert isinstance(layer.self_attn.qkv_proj, Int8Linear)
    assert isinstance(layer.self_attn.o_proj, Int8Linear)  # Q8_0
    assert torch.equal(
        layer.self_attn.qkv_proj.bias,
        torch.cat(
            [ref.self_attn.q_proj.bias, ref.self_attn.k_proj.bias, ref.self_attn.v_proj.bias]
        ),
    )
    assert torch.equal(layer.input_layernorm.weight, ref.input_layernorm.weight)


@pytest.mark.parametrize("method", ["int8", "int4"])
def test_a_cached_load_reads_no_tensor_and_a_changed_file_is_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2")
    path = gguf_source(model_dir)
    assert path is not None
    params = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
    first = LLM(str(model_dir), quantization=method).generate([[5, 9, 3]], params)
    assert _cache_path(model_dir, path, method).is_file()
    calls = dict(QUANTIZE_CALLS)

    def no_read(*args: Any) -> None:
        raise AssertionError("the GGUF was read on a cached load")

    with monkeypatch.context() as m:
        m.setattr(GGUFFile, "__init__", no_read)
        again = LLM(str(model_dir), quantization=method).generate([[5, 9, 3]], params)
    assert again[0].token_ids == first[0].token_ids and calls == QUANTIZE_CALLS
    key = _cache_path(model_dir, path, method)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1000))
    with pytest.raises(ModelLoadError, match=r"changed since .* was prepared"):
        LLM(str(model_dir), quantization=method)
    assert _cache_path(model_dir, path, method) != key


def test_an_unsupported_tensor_type_is_refused_by_name(tmp_path: Path) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2", {**TYPES, "ffn_down": T.Q2_K})
    with pytest.raises(ModelLoadError, match=r"tensor blk\.0\.ffn_down\.weight is of type Q2_K"):
        LLM(str(model_dir), quantization="int4")


def test_prepare_writes_the_quantized_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir, _ = gguf_model(tmp_path, "qwen2")
    path = gguf_source(model_dir)
    assert path is not None
    write_quantized_cache(model_dir, "int8")
    assert _cache_path(model_dir, path).is_file()

    def no_read(*args: Any) -> None:
        raise AssertionError("the GGUF was read again")

    monkeypatch.setattr(GGUFFile, "__init__", no_read)
    write_quantized_cache(model_dir, "int8")
