"""The language models a session can choose (`session.update` `{"session": {"model": ...}}`).

The server's LLM (`R1VOICE_LLM_MODEL` on `R1VOICE_LLM_BACKEND`) loads and warms up at
start. With our `embedded` engine, every other prepared bundled LLM loads the first time
a session asks for it (on a loader thread of its own: a load takes seconds, and no answer
waits behind it), warms up there and stays loaded for the next session; each runs its own
engine, so sessions on different models never share a batch. The `remote` and
`transformers` backends serve their one model: the others are listed with that reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.catalog.model_catalog import ModelCatalog
from app.llm import LLMBackend, create_backend
from app.settings import Settings

Loader = Callable[[str], LLMBackend]


class LLMCatalog(ModelCatalog[LLMBackend]):
    """The LLMs on offer, the loaded ones, and the thread that loads the others."""

    def __init__(self, default: LLMBackend, *, load: Loader | None = None) -> None:
        """`load(name)` builds and warms up a bundled LLM (blocking); None: the server's
        backend serves only `default`."""
        not_offered = (
            f"the '{default.name}' backend serves only '{default.model}'; other bundled "
            "LLMs can be chosen with R1VOICE_LLM_BACKEND=embedded"
        )
        super().__init__(
            default, default.model, role="llm", label="LLM", load=load, not_offered=not_offered
        )

    @classmethod
    def from_settings(cls, default: LLMBackend, settings: Settings) -> LLMCatalog:
        """The catalog of a server: others load as the default was built (same
        queue delay and clustering; each at its own default quantization unless one is
        set), with the embedded backend only."""
        if settings.llm_backend != "embedded":
            return cls(default)

        def load(name: str) -> LLMBackend:
            backend = create_backend(
                "embedded",
                name,
                settings.quantization,
                settings.llm_max_queue_delay_s,
                settings.llm_clustering,
                engine=settings.engine_options(),
            )
            try:
                backend.warmup()
            except BaseException:
                asyncio.run(backend.close())  # its engine thread would outlive the failure
                raise
            return backend

        return cls(default, load=load)

    async def close(self) -> None:
        """Stop the loader and the models it loaded (the default belongs to the components)."""
        for model in self._stop_loading():
            if model is not self.default:
                await model.close()
