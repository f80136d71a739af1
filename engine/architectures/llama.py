"""Llama and Qwen2 (= Llama with q/k/v bias), our own forward pass over the paged cache."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.architectures.flat_forward import FlatForward
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers.activation import SiluAndMul
from engine.layers.attention import AttentionMetadata, PagedAttention
from engine.layers.linear import Linear, make_linear
from engine.layers.norm import RMSNorm
from engine.layers.rotary import RotaryEmbedding


def rope_settings(config: Any) -> tuple[float, dict[str, Any]]:
    """(theta, scaling dict) from a transformers 5 ``rope_parameters`` or a 4.x config."""
    params = dict(getattr(config, "rope_parameters", None) or {})
    scaling = dict(getattr(config, "rope_scaling", None) or {})
    merged = {**scaling, **params}
    theta = merged.get("rope_theta", getattr(config, "rope_theta", 10000.0))
    return float(theta), merged


class LlamaAttention(nn.Module):
    def __init__(self, config: Any, qkv_bias: bool, o_bias: bool) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or (config.hidden_size // self.num_heads)
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        # q, k and v in one matmul: fewer, larger ops (per-op overhead dominates decode).
        self.qkv_proj = make_linear(
            config.hidden_size, self.q_size + 2 * self.kv_size, bias=qkv_bias
        )
        self.o_proj = make_linear(self.q_size, config.hidden_size, bias=o_bias)
        self.attn = PagedAttention(self.num_heads, self.num_kv_heads, self.head_dim)
        self.fused = False  # set by LlamaForCausalLM.prepare: RoPE + cache write in C++

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, meta: AttentionMetadata
    ) -> torch.Tensor:
        t = x.shape[0]
        qkv = self.qkv_proj.forward(x)
        if self.fused and qkv.dtype == torch.float32:
            attn = self.attn
            q = CpuKernels.k.rope_and_cache(
                qkv.contiguous(),
                cos.view(t, -1),
                sin.view(t, -1),
                attn.k_cache,
                attn.v_cache,
                meta.slot_mapping,
                self.num_heads,
                self.num_kv_heads,
                self.head_dim,
            )
            return self.o_proj.forward(attn.attend_cached(q, meta))
        # Rotate q and k together: one set of rotary ops per layer instead of two.
        qk = qkv[:, : self.q_size + self.kv_size].view(t, -1, self.head_dim)
        qk = RotaryEmbedding.rotate(qk, cos, sin)
        q, k = qk.split([self.num_heads, self.num_kv_heads], dim=1)
        v = qkv[:, self.q_size + self.kv_size :].view(t, self.num_kv_heads, self.head_dim)
        return self.o_proj.forward(self.attn(q, k, v, meta))


class LlamaMLP(nn.Module):
    def __init__(self, config: Any, bias: bool) -> None:
        super().__init__()
        self.gate_up_proj = make_linear(config.hidden_size, 2 * config.intermediate_size, bias=bias)
        self.down_proj = make_linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act = SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj.forward(self.act.forward(self.gate_up_proj.forward(x)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: Any, qkv_bias: bool, o_bias: bool, mlp_bias: bool) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(config, qkv_bias, o_bias)
        self.mlp = LlamaMLP(config, mlp_bias)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        residual: torch.Tensor | None,
        cos: torch.Tensor,
        sin: torch.Tensor,
        meta: AttentionMetadata,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # .forward, not __call__: no hooks are used, and at one token per step
        # nn.Module.__call__'s overhead per module was a sizeable share of a decode step.
        x, residual = self.input_layernorm.forward(x, residual)
        x = self.self_attn.forward(x, cos, sin, meta)
        x, residual = self.post_attention_layernorm.forward(x, residual)
        return self.mlp.forward(x), residual


class LlamaForCausalLM(nn.Module):
    """Decoder-only Llama; Qwen2 is the same graph with q/k/v bias (see Qwen2ForCausalLM).

    ``forward`` takes the flat tokens of a step (all sequences concatenated) and returns
    their hidden states; ``compute_logits`` runs the LM head only where a token is sampled.
    """

    def __init__(self, config: Any) -> None:
        super().__init__()
        qkv_bias, o_bias, mlp_bias = self.bias_settings(config)
        self.config = config
        # given its table, nn.Embedding skips its random init: on the meta device that
        # init imports torch._dynamo, seconds of a server's start
        table = torch.empty(config.vocab_size, config.hidden_size)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, _weight=table)
        self.embed_tokens.weight.requires_grad_(False)
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(config, qkv_bias, o_bias, mlp_bias)
            for _ in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.tie_word_embeddings = bool(getattr(config, "tie_word_embeddings", False))
        self.lm_head = (
            None if self.tie_word_embeddings else make_linear(config.hidden_size, config.vocab_size)
        )
        head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        self.tied_head: Linear | None = None
        self.uses_cpu_kernels = False  # decode attention over block tables in C++
        self.flat: FlatForward | None = None  # set by flatten(): every layer on C++ kernels
        # each int8 projection shape's path per row class (the loader's KernelChoice)
        self.int8_paths: dict[str, str] = {}
        theta, scaling = rope_settings(config)
        self.rotary = RotaryEmbedding(head_dim, config.max_position_embeddings, theta, scaling)

    @staticmethod
    def bias_settings(config: Any) -> tuple[bool, bool, bool]:
        """(q/k/v bias, o_proj bias, mlp bias) as Llama reads them from its config."""
        attention_bias = bool(getattr(config, "attention_bias", False))
        return attention_bias, attention_bias, bool(getattr(config, "mlp_bias", False))

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata
    ) -> torch.Tensor:
        if self.flat is not None:
            return self.flat(input_ids, positions, meta)
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary.lookup(positions)
        residual = None
        for layer in self.layers:
            x, residual = layer.forward(x, residual, cos, sin, meta)
        x, _ = self.norm(x, residual)
        return x

    def prepare(self) -> None:
        """After loading: let every projection pick its fastest weight layout."""
        for module in self.modules():
            if isinstance(module, Linear):
                module.prepare()
        device, dtype = self.embed_tokens.weight.device, self.embed_tokens.weight.dtype
        self.uses_cpu_kernels = (
            device.type == "cpu" and dtype == torch.float32 and CpuKernels.ops() is not None
        )
        for module in self.modules():
            if isinstance(module, RMSNorm):
                module.prepare()
            elif isinstance(module, LlamaAttention):
                d = module.head_dim
                module.fused = self.uses_cpu_kernels and d % 16 == 0 and d <= 256
            elif isinstance(module, SiluAndMul):
                module.fused = self.uses_cpu_kernels
        if self.lm_head is None and self.embed_tokens.weight.numel():
            # Tied: the LM head may keep its own packed copy; the embedding stays as is.
            head = make_linear(self.config.hidden_size, self.config.vocab_size)
            head.weight = nn.Parameter(self.embed_tokens.weight.data, requires_grad=False)
            head.prepare(release=False)
            self.tied_head = head if head.packed is not None else None

    def flatten(self) -> None:
        """Resolve the C++-kernel pass (FlatForward) once every module is prepared,
        quantized projections included; without the kernels the module path stays."""
        self.flat = FlatForward.build(self)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.lm_head is not None:
            return self.lm_head(hidden)
        if self.tied_head is not None:
            return self.tied_head(hidden)
        return torch.nn.functional.linear(hidden, self.embed_tokens.weight)


class Qwen2ForCausalLM(LlamaForCausalLM):
    """Qwen2: q/k/v projections carry a bias, o_proj and the MLP do not."""

    @staticmethod
    def bias_settings(config: Any) -> tuple[bool, bool, bool]:
        return True, False, False
