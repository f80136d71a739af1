"""LLM: the synchronous public entry point."""

from engine.llm_engine import LLMEngine


class LLM(LLMEngine):
    """``LLM(model, **EngineConfig fields)``; ``generate(prompts, SamplingParams(...))``.

    ``model`` is a Hugging Face directory, a .gguf file or a bundled model name.
    """
