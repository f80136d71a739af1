"""Tiny random-weight models built from transformers configs, and their reference outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import transformers

TINY_SHAPES: dict[str, dict[str, Any]] = {
    "llama-gqa-tied": dict(model_type="llama", num_attention_heads=4, num_key_value_heads=2),
    "llama-mha-untied": dict(
        model_type="llama", num_attention_heads=4, num_key_value_heads=4, tie=False
    ),
    "qwen2-gqa-bias": dict(model_type="qwen2", num_attention_heads=4, num_key_value_heads=1),
    "llama3-rope": dict(
        model_type="llama",
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    ),
}


def build_tiny(
    out: Path, model_type: str = "llama", tie: bool = True, seed: int = 0, **overrides: Any
) -> tuple[Path, Any]:
    """Save a random tiny model to ``out``; returns (directory, the transformers model)."""
    kwargs: dict[str, Any] = dict(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        # Larger than the 0.02 default: peaked logits, so greedy argmax has no near-ties.
        initializer_range=0.2,
        tie_word_embeddings=tie,
        eos_token_id=1,
        bos_token_id=0,
        pad_token_id=0,
    )
    kwargs.update(overrides)
    cls = transformers.Qwen2Config if model_type == "qwen2" else transformers.LlamaConfig
    config = cls(**kwargs)
    torch.manual_seed(seed)
    model_cls = (
        transformers.Qwen2ForCausalLM if model_type == "qwen2" else transformers.LlamaForCausalLM
    )
    model = model_cls(config).eval()
    if model_type == "qwen2":  # default init zeroes biases: make them matter
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                    proj.bias.normal_(0, 0.5)
                layer.self_attn.v_proj.bias.normal_(0, 0.5)
    model.save_pretrained(out)
    return out, model


def hf_greedy(model: Any, prompt: list[int], max_new_tokens: int) -> list[int]:
    """transformers' own greedy decoding of one prompt (no padding, EOS ignored)."""
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
    return out[0, len(prompt) :].tolist()


THINK_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)


def save_think_tokenizer(out: Path) -> Any:
    """A byte-level tokenizer with R1's single-token ``<think>``/``</think>`` and a chat
    template that opens thinking in the generation prompt (as R1-Distill's does); its
    vocabulary (260 ids) fits a tiny model with ``vocab_size`` >= 260."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(byte_chars))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", chat_template=THINK_TEMPLATE
    )
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.add_tokens(["<think>", "</think>"])  # as R1's: whole tokens, kept in the text
    fast.save_pretrained(out)
    return fast
