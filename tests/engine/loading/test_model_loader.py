"""Weight loading: sharded checkpoints, fused projections, layouts."""

from __future__ import annotations

from pathlib import Path

import torch

from engine import LLM, SamplingParams
from engine.loading.model_loader import load_model
from tests.engine.tiny_models import build_tiny, hf_greedy


def test_sharded_checkpoint_with_index(tmp_path: Path) -> None:
    path, hf = build_tiny(tmp_path / "sharded", model_type="qwen2", tie=False)
    hf.save_pretrained(tmp_path / "sharded", max_shard_size="100KB")
    assert (path / "model.safetensors.index.json").is_file()
    assert len(list(path.glob("*.safetensors"))) > 1
    llm = LLM(str(path), quantization="none")
    prompt = [5, 9, 3, 7, 11]
    out = llm.generate([prompt], SamplingParams(max_tokens=8, temperature=0, ignore_eos=True))
    assert out[0].token_ids == hf_greedy(hf, prompt, 8)


def test_fused_projections_hold_the_checkpoint_weights(tiny_llama: Path) -> None:
    from safetensors.torch import load_file

    model = load_model(tiny_llama, torch.device("cpu"), torch.float32)
    state = load_file(str(tiny_llama / "model.safetensors"))
    layer = model.layers[1]
    x = torch.randn(3, 64)
    qkv = torch.cat([state[f"model.layers.1.self_attn.{p}_proj.weight"] for p in "qkv"])
    torch.testing.assert_close(layer.self_attn.qkv_proj(x), x @ qkv.t())
    gate_up = torch.cat([state[f"model.layers.1.mlp.{p}_proj.weight"] for p in ("gate", "up")])
    torch.testing.assert_close(layer.mlp.gate_up_proj(x), x @ gate_up.t())


def test_bfloat16_runs_and_mostly_agrees(tiny_llama: Path) -> None:
    prompt = [5, 9, 3, 7, 11, 2, 40]
    params = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
    fp32 = LLM(str(tiny_llama), quantization="none").generate([prompt], params)[0].token_ids
    bf16 = (
        LLM(str(tiny_llama), dtype="bfloat16", quantization="none")
        .generate([prompt], params)[0]
        .token_ids
    )
    assert len(bf16) == 6 and bf16[0] == fp32[0]
