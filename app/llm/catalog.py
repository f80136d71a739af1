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
import logging
import threading
from collections.abc import Callable

from app.executor import ModelExecutor
from app.llm import LLMBackend, create_backend
from app.models import registry as model_registry
from app.settings import Settings

log = logging.getLogger("r1voice")

Loader = Callable[[str], LLMBackend]


class LLMCatalog:
    """The LLMs on offer, the loaded ones, and the thread that loads the others."""

    def __init__(self, default: LLMBackend, *, load: Loader | None = None) -> None:
        """`load(name)` builds and warms up a bundled LLM (blocking); None: the server's
        backend serves only `default`."""
        self.default = default
        self._load_model = load
        self._loaded: dict[str, LLMBackend] = {default.model: default}
        self._lock = threading.Lock()  # the dict only: never held across a load
        self._load_lock = threading.Lock()  # one load at a time
        self._unavailable: dict[str, str] = {}
        names = [default.model]
        for row in model_registry.list_models():
            if row.role != "llm" or row.name == default.model:
                continue
            if load is None:
                self._unavailable[row.name] = (
                    f"the '{default.name}' backend serves only '{default.model}'; other bundled "
                    "LLMs can be chosen with R1VOICE_LLM_BACKEND=embedded"
                )
            elif row.state == "ready":
                names.append(row.name)
            else:  # `location` holds the reason (how to prepare it)
                self._unavailable[row.name] = row.location
        self._names = names
        self._loader = ModelExecutor("llm-load", workers=1, max_pending=8)

    @classmethod
    def from_settings(cls, default: LLMBackend, settings: Settings) -> LLMCatalog:
        """The catalog of a server: others load as the default was built (same
        quantization, queue delay and clustering), with the embedded backend only."""
        if settings.llm_backend != "embedded":
            return cls(default)

        def load(name: str) -> LLMBackend:
            backend = create_backend(
                "embedded",
                name,
                settings.quantization,
                settings.llm_max_queue_delay_s,
                settings.llm_clustering,
            )
            try:
                backend.warmup()
            except BaseException:
                asyncio.run(backend.close())  # its engine thread would outlive the failure
                raise
            return backend

        return cls(default, load=load)

    def names(self) -> list[str]:
        """The models a session may choose now (the default first)."""
        return list(self._names)

    def unavailable(self) -> dict[str, str]:
        """Bundled LLMs that cannot be chosen, each with why (and what to do about it)."""
        return dict(self._unavailable)

    def loaded(self, name: str) -> LLMBackend | None:
        with self._lock:
            return self._loaded.get(name)

    def get(self, name: str) -> LLMBackend:
        """The model `name`, loading it now if needed (blocking: call it off the event loop).
        A failed load is not remembered: the next request tries again."""
        if name not in self._names:
            reason = self._unavailable.get(name)
            detail = f": {reason}" if reason else ""
            raise model_registry.ModelError(
                f"LLM '{name}' is not available{detail}; available: {self._names}"
            )
        with self._load_lock:
            model = self.loaded(name)
            if model is None:
                assert self._load_model is not None  # only the default is named without one
                try:
                    model = self._load_model(name)
                except Exception as exc:
                    log.warning("cannot load LLM %s: %s", name, exc)
                    raise model_registry.ModelError(
                        f"LLM '{name}' failed to load ({type(exc).__name__}: {exc})"
                    ) from exc
                with self._lock:
                    self._loaded[name] = model
            return model

    async def load(self, name: str) -> LLMBackend:
        """`get` on the loader thread (a loaded model returns at once)."""
        model = self.loaded(name)
        return model if model is not None else await self._loader.run(self.get, name)

    async def close(self) -> None:
        """Stop the loader and the models it loaded (the default belongs to the components)."""
        self._loader.shutdown()
        with self._lock:
            others = [m for m in self._loaded.values() if m is not self.default]
        for model in others:
            await model.close()
