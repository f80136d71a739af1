"""The LLM catalog: the server's LLM, the other prepared bundled LLMs loaded once on demand
(embedded backend only), and what cannot be chosen, with why."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from app.catalog import registry
from app.catalog.registry import ModelError
from app.llm.catalog import LLMCatalog
from app.settings import Settings
from tests.app.llm.scripted import ScriptedLLM

DEFAULT = "smollm2-135m-instruct"
OTHER = "qwen2.5-coder-0.5b-instruct"


class _Named(ScriptedLLM):
    """A scripted backend under a bundled model's name, that records being closed."""

    def __init__(self, model: str, backend: str = "embedded") -> None:
        super().__init__(["Hi."])
        self.model, self.name = model, backend
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def _rows(other_state: str = "ready", reason: str = "/cache/qwen") -> list[registry.ModelRow]:
    return [
        registry.ModelRow(DEFAULT, "llm", "ready", "/cache/smollm2"),
        registry.ModelRow(OTHER, "llm", other_state, reason),
        registry.ModelRow("whisper-base", "asr", "ready", "/cache/whisper-base"),
    ]


@pytest.fixture(autouse=True)
def bundled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both bundled LLMs prepared (each test may say otherwise)."""
    monkeypatch.setattr(registry, "list_models", _rows)


def _counting_loader(loads: list[str]) -> Any:
    def load(name: str) -> _Named:
        time.sleep(0.05)  # long enough for concurrent callers to overlap
        loads.append(name)
        return _Named(name)

    return load


def test_offers_the_default_first_then_the_prepared_llms() -> None:
    default = _Named(DEFAULT)
    catalog = LLMCatalog(default, load=_counting_loader([]))
    assert catalog.names() == [DEFAULT, OTHER]
    assert catalog.unavailable() == {}
    assert catalog.loaded(DEFAULT) is default
    assert catalog.loaded(OTHER) is None  # not loaded until chosen
    assert asyncio.run(catalog.load(DEFAULT)) is default


def test_a_model_loads_once_however_many_ask() -> None:
    loads: list[str] = []
    catalog = LLMCatalog(_Named(DEFAULT), load=_counting_loader(loads))
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(catalog.get(OTHER))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == [OTHER]
    assert len({id(m) for m in got}) == 1 and got[0].model == OTHER
    assert asyncio.run(catalog.load(OTHER)) is got[0]  # loaded: returns at once
    assert loads == [OTHER]


def test_the_loaded_models_can_be_read_while_one_loads() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(name: str) -> _Named:
        started.set()
        release.wait()
        return _Named(name)

    catalog = LLMCatalog(_Named(DEFAULT), load=slow)
    loading = threading.Thread(target=catalog.get, args=(OTHER,))
    loading.start()
    started.wait()
    seen: list[Any] = []  # read on a thread of its own: a held lock would block it
    reader = threading.Thread(target=lambda: seen.append(catalog.loaded(OTHER)))
    reader.start()
    reader.join(timeout=30)
    release.set()
    loading.join()
    assert seen == [None]  # answered while the load ran (the components page reads this)
    assert catalog.loaded(OTHER) is not None


def test_an_unprepared_model_is_listed_with_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = f"model '{OTHER}' is not prepared: run `r1voice models prepare {OTHER}`"
    monkeypatch.setattr(registry, "list_models", lambda: _rows("not prepared", reason))
    loads: list[str] = []
    catalog = LLMCatalog(_Named(DEFAULT), load=_counting_loader(loads))
    assert catalog.names() == [DEFAULT]
    assert catalog.unavailable() == {OTHER: reason}
    with pytest.raises(ModelError, match=rf"'{OTHER}' is not available: .*r1voice models prepare"):
        catalog.get(OTHER)
    assert loads == []


def test_an_unknown_model_is_refused_with_the_choices() -> None:
    catalog = LLMCatalog(_Named(DEFAULT), load=_counting_loader([]))
    with pytest.raises(ModelError, match=r"'gpt-9' is not available; available: \["):
        catalog.get("gpt-9")


def test_a_failed_load_is_a_clear_error_and_the_next_request_loads_again() -> None:
    attempts: list[str] = []

    def flaky(name: str) -> _Named:
        attempts.append(name)
        if len(attempts) == 1:
            raise RuntimeError("model.safetensors is truncated")
        return _Named(name)

    catalog = LLMCatalog(_Named(DEFAULT), load=flaky)
    with pytest.raises(ModelError, match=rf"LLM '{OTHER}' failed to load .*is truncated"):
        asyncio.run(catalog.load(OTHER))
    assert catalog.loaded(OTHER) is None
    assert asyncio.run(catalog.load(OTHER)).model == OTHER
    assert attempts == [OTHER, OTHER]


@pytest.mark.parametrize("backend", ["remote", "transformers"])
def test_other_backends_offer_only_their_model(backend: str) -> None:
    settings = Settings(llm_backend=backend, llm_url="http://llm.invalid/v1")
    default = _Named("served-model", backend=backend)
    catalog = LLMCatalog.from_settings(default, settings)
    assert catalog.names() == ["served-model"]
    unavailable = catalog.unavailable()
    assert set(unavailable) == {DEFAULT, OTHER}
    assert f"the '{backend}' backend serves only 'served-model'" in unavailable[OTHER]
    assert "R1VOICE_LLM_BACKEND=embedded" in unavailable[OTHER]
    with pytest.raises(ModelError, match="backend serves only 'served-model'"):
        catalog.get(OTHER)


def test_close_stops_the_loaded_models_but_not_the_servers() -> None:
    default = _Named(DEFAULT)
    catalog = LLMCatalog(default, load=_counting_loader([]))
    other = catalog.get(OTHER)
    asyncio.run(catalog.close())
    assert other.closed  # type: ignore[attr-defined]
    assert not default.closed  # the components close it
