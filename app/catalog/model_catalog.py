"""ModelCatalog: the models of one role a session may choose, each loaded once.

The server's model of the role (the default) is loaded at start. Every other bundled
model of the role that is ready loads the first time a session asks for it, on a loader
thread of its own (a load takes seconds, and nothing else waits behind it), and stays
loaded for the next session. `TranscriberCatalog` (ASR) and `LLMCatalog` are the two.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from app.catalog import registry as model_registry
from app.executor import ModelExecutor

log = logging.getLogger("r1voice")

M = TypeVar("M")


class ModelCatalog(Generic[M]):
    """The models on offer, the loaded ones, and the thread that loads the others."""

    def __init__(
        self,
        default: M,
        default_name: str,
        *,
        role: str,
        label: str,
        load: Callable[[str], M] | None,
        not_offered: str = "",
    ) -> None:
        """`role`: the registry's role ("asr", "llm"); `label` names a model in errors
        ("ASR model"); `load(name)` builds a model (blocking). Without `load` only the
        default is offered, and the others are listed with the reason `not_offered`."""
        self.default = default
        self._label = label
        self._load_model = load
        self._loaded: dict[str, M] = {default_name: default}
        self._lock = threading.Lock()  # the dict only: never held across a load
        self._load_lock = threading.Lock()  # one load at a time
        self._unavailable: dict[str, str] = {}
        names = [default_name]
        for row in model_registry.list_models():
            if row.role != role or row.name == default_name:
                continue
            if load is None:
                self._unavailable[row.name] = not_offered
            elif row.state == "ready":
                names.append(row.name)
            else:  # `location` holds the reason (how to prepare or install it)
                self._unavailable[row.name] = row.location
        self._names = names
        self._loader = ModelExecutor(f"{role}-load", workers=1, max_pending=8)

    def names(self) -> list[str]:
        """The models a session may choose now (the default first)."""
        return list(self._names)

    def _offer(self, name: str, reason: str | None = None) -> None:
        """Offer one more model (one the user brought), or list it with why it cannot be."""
        if reason is not None:
            self._unavailable[name] = reason
        elif name not in self._names:
            self._names.append(name)

    def unavailable(self) -> dict[str, str]:
        """Bundled models of the role that cannot be chosen, each with why (and what to do)."""
        return dict(self._unavailable)

    def loaded(self, name: str) -> M | None:
        with self._lock:
            return self._loaded.get(name)

    def get(self, name: str) -> M:
        """The model `name`, loading it now if needed (blocking: call it off the event loop).
        A failed load is not remembered: the next request tries again."""
        if name not in self._names:
            reason = self._unavailable.get(name)
            detail = f": {reason}" if reason else ""
            raise model_registry.ModelError(
                f"{self._label} '{name}' is not available{detail}; available: {self._names}"
            )
        with self._load_lock:
            model = self.loaded(name)
            if model is None:
                assert self._load_model is not None  # only the default is named without one
                try:
                    model = self._load_model(name)
                except Exception as exc:
                    log.warning("cannot load %s %s: %s", self._label, name, exc)
                    raise model_registry.ModelError(
                        f"{self._label} '{name}' failed to load ({type(exc).__name__}: {exc})"
                    ) from exc
                with self._lock:
                    self._loaded[name] = model
            return model

    async def load(self, name: str) -> M:
        """`get` on the loader thread (a loaded model returns at once)."""
        model = self.loaded(name)
        return model if model is not None else await self._loader.run(self.get, name)

    def _stop_loading(self) -> list[M]:
        """Stop the loader; the models loaded so far, the default first, to close."""
        self._loader.shutdown()
        with self._lock:
            return list(self._loaded.values())
