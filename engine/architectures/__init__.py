"""Model architectures the engine implements, by Hugging Face ``model_type``."""

from engine.architectures.llama import LlamaForCausalLM, Qwen2ForCausalLM

MODEL_REGISTRY: dict[str, type[LlamaForCausalLM]] = {
    "llama": LlamaForCausalLM,
    "qwen2": Qwen2ForCausalLM,
}

__all__ = ["MODEL_REGISTRY", "LlamaForCausalLM", "Qwen2ForCausalLM"]
