"""The ASR catalog: the server's model, the other installed ones loaded once on demand."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from app.catalog.registry import ModelError
from app.speech.transcribers import TranscriberCatalog


class _Model:
    def __init__(self, name: str) -> None:
        self.name = name
        self.executor = _Executor()

    def close(self) -> None:
        self.executor.shutdown()


class _Executor:
    def __init__(self) -> None:
        self.closed = False

    def shutdown(self) -> None:
        self.closed = True


def _counting_loader(loads: list[str]) -> Any:
    def load(name: str) -> Any:
        time.sleep(0.05)  # long enough for concurrent callers to overlap
        loads.append(name)
        return _Model(name)

    return load


def test_offers_the_default_then_the_installed_models(shared_components: Any) -> None:
    catalog = TranscriberCatalog(shared_components.asr, load=_counting_loader([]))
    names = catalog.names()
    assert names[0] == shared_components.asr.name
    assert "whisper-base" in names  # prepared by `make`
    assert not set(catalog.unavailable()) & set(names)
    assert catalog.loaded(shared_components.asr.name) is shared_components.asr
    assert catalog.loaded("whisper-base") is None  # not loaded until chosen


def test_a_model_loads_once_however_many_ask(shared_components: Any) -> None:
    loads: list[str] = []
    catalog = TranscriberCatalog(shared_components.asr, load=_counting_loader(loads))
    got: list[Any] = []
    threads = [
        threading.Thread(target=lambda: got.append(catalog.get("whisper-base"))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == ["whisper-base"]
    assert len({id(m) for m in got}) == 1 and got[0].name == "whisper-base"
    assert asyncio.run(catalog.load("whisper-base")) is got[0]  # loaded: returns at once
    assert catalog.get(shared_components.asr.name) is shared_components.asr
    assert loads == ["whisper-base"]


def test_an_unknown_model_is_refused_with_the_choices(shared_components: Any) -> None:
    loads: list[str] = []
    catalog = TranscriberCatalog(shared_components.asr, load=_counting_loader(loads))
    with pytest.raises(ModelError, match=r"'whisper-huge' is not available; available: \["):
        catalog.get("whisper-huge")
    assert loads == []


def test_close_stops_the_loaded_models_but_not_before(shared_components: Any) -> None:
    catalog = TranscriberCatalog(_Model("whisper-tiny.en"), load=_counting_loader([]))  # type: ignore[arg-type]
    base = catalog.get("whisper-base")
    catalog.close()
    assert base.executor.closed
    assert catalog.loaded("whisper-tiny.en").executor.closed  # type: ignore[union-attr]


def test_a_model_not_prepared_is_listed_with_what_to_run(
    shared_components: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.catalog import registry

    reason = "model 'whisper-base' is not prepared: run `r1voice models prepare whisper-base`"
    rows = [
        registry.ModelRow("whisper-base", "asr", "not prepared", reason),
        registry.ModelRow("silero-vad", "vad", "ready", "/somewhere"),
    ]
    monkeypatch.setattr(registry, "list_models", lambda: rows)
    catalog = TranscriberCatalog(shared_components.asr, load=_counting_loader([]))
    assert catalog.names() == [shared_components.asr.name]
    assert catalog.unavailable() == {"whisper-base": reason}
    with pytest.raises(ModelError, match="'whisper-base' is not available"):
        catalog.get("whisper-base")
