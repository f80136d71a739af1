"""The heavy parts shared by every session, loaded once in the lifespan and warmed up."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from app.catalog import registry as model_registry
from app.llm import ChatMessage, GenerationParams, LLMBackend, create_backend
from app.llm.catalog import LLMCatalog
from app.settings import Settings
from app.speech.asr import WhisperASR
from app.speech.languages import language_error, normalize
from app.speech.piper_tts import PiperTTS
from app.speech.transcribers import TranscriberCatalog
from app.speech.turn_model import SmartTurnModel
from app.speech.vad import SileroModel
from app.speech.voices import AUTO, VoiceCatalog
from engine import default_quantization, os_thread_named

log = logging.getLogger("r1voice")


@dataclass
class Components:
    settings: Settings
    vad: SileroModel
    turn: SmartTurnModel
    asr: WhisperASR  # the server's ASR model: loaded and warmed up at start
    transcribers: TranscriberCatalog  # every ASR model a session may choose
    tts: VoiceCatalog
    llm: LLMBackend  # the server's LLM: loaded and warmed up at start
    llms: LLMCatalog  # every LLM a session may choose
    timings: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        """What the server serves, for its start-up log: the LLM (and how), the ASR, the
        voice and the turn detection."""
        s = self.settings
        if s.llm_backend == "embedded":
            quantization = s.quantization or default_quantization(s.llm_model)
            how = f"our engine, {quantization}, speculative {s.llm_speculative}"
        elif s.llm_backend == "remote":
            how = f"remote, {urlsplit(s.llm_url).netloc.rpartition('@')[2]}"  # no credentials
        else:
            how = s.llm_backend
        return (
            f"LLM {s.llm_model} ({how}, context {self.llm.context_length} tokens); "
            f"ASR {self.asr.name}; voice {s.voice or s.tts_voice}; "
            f"turn detection {s.turn_detection}"
        )


def load_components(settings: Settings) -> Components:
    """Load VAD, ASR, LLM and TTS (blocking; run it off the event loop). The LLM loads on
    a thread of its own meanwhile: its imports and the speech models' native loads
    overlap on two cores, where one after the other they added up."""
    timings: dict[str, float] = {}

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        with os_thread_named(f"{name}-load"):  # bench capacity's stages go by these names
            value = fn()
        timings[f"load_{name}_s"] = round(time.perf_counter() - start, 3)
        return value

    start = time.perf_counter()
    with ThreadPoolExecutor(1, thread_name_prefix="llm-load") as pool:
        llm_loading = pool.submit(timed, "llm", lambda: _create_llm(settings))
        try:
            speech = _load_speech(settings, timed)
        except BaseException:
            _close_when_loaded(llm_loading)
            raise
        llm = llm_loading.result()
    timings["load_s"] = round(time.perf_counter() - start, 3)
    vad, turn, asr, tts = speech
    tts.give_way_with(llm.give_way)  # a first clause's synthesis has the cores
    return Components(
        settings=settings,
        vad=vad,
        turn=turn,
        asr=asr,
        transcribers=TranscriberCatalog(
            asr,
            threads=settings.asr_threads,
            user_models=Path(settings.asr_models) if settings.asr_models else None,
        ),
        tts=tts,
        llm=llm,
        llms=LLMCatalog.from_settings(llm, settings),
        timings=timings,
    )


def _create_llm(settings: Settings) -> LLMBackend:
    return create_backend(
        settings.llm_backend,
        settings.llm_model,
        settings.quantization,
        settings.llm_max_queue_delay_s,
        settings.llm_clustering,
        engine=settings.engine_options(),
        **settings.remote_llm_options(),
    )


def _close_when_loaded(loading: Future[LLMBackend]) -> None:
    """A speech model failed: the LLM loading beside it is closed once it is up."""
    try:
        llm = loading.result()
    except BaseException:  # the speech model's error is the one to report
        return
    with contextlib.suppress(Exception):
        asyncio.run(llm.close())


def _load_speech(settings: Settings, timed: Any) -> tuple[Any, Any, WhisperASR, VoiceCatalog]:
    """The speech models; Piper's voice (most of the time: ONNX Runtime's session, native
    code) loads on a thread of its own beside the others."""
    with ThreadPoolExecutor(1, thread_name_prefix="tts-load") as pool:
        tts_loading = pool.submit(timed, "tts", lambda: _load_voices(settings))
        vad, turn, asr = _load_hearing(settings, timed)  # its error: raised once tts is done
        tts = tts_loading.result()
    if settings.voice and settings.voice not in tts.voices():
        raise ValueError(f"R1VOICE_VOICE={settings.voice!r} is not a voice here: {tts.voices()}")
    if normalize(settings.asr_language) not in (None, *asr.languages):
        message = language_error(
            normalize(settings.asr_language) or "", asr.name, asr.languages, []
        )
        raise ValueError(f"R1VOICE_ASR_LANGUAGE: {message}")
    return vad, turn, asr, tts


def _load_voices(settings: Settings) -> VoiceCatalog:
    return VoiceCatalog(
        PiperTTS(model_registry.locate(settings.tts_voice, "tts"), name=settings.tts_voice),
        Path(settings.piper_voices) if settings.piper_voices else None,
    )


def _load_hearing(settings: Settings, timed: Any) -> tuple[Any, Any, WhisperASR]:
    vad = timed("vad", lambda: SileroModel(model_registry.locate("silero-vad", "vad")))
    turn = timed("turn", lambda: SmartTurnModel(model_registry.locate("smart-turn-v3.2", "turn")))
    asr = timed(
        "asr",
        lambda: WhisperASR(
            model_registry.locate(settings.asr_model, "asr"),
            name=settings.asr_model,
            threads=settings.asr_threads,
            min_window_s=settings.asr_min_window_s,
            partials_apart=settings.asr_partials_apart,
            final_beam=settings.asr_final_beam,
        ),
    )
    return vad, turn, asr


def warm_up(components: Components) -> None:
    """One short transcription, generation and synthesis, so the first user is not slow.
    The LLM's runs on a thread of its own beside the speech models' (the partial passes'
    process starts meanwhile); each part's seconds go to ``timings``."""
    start = time.perf_counter()
    timings = components.timings

    def timed(name: str, fn: Any) -> Any:
        began = time.perf_counter()
        value = fn()
        timings[f"warmup_{name}_s"] = round(time.perf_counter() - began, 3)
        return value

    with ThreadPoolExecutor(1, thread_name_prefix="llm-warmup") as pool:
        llm_warming = pool.submit(timed, "llm", components.llm.warmup)
        speech = timed("tts", lambda: components.tts.synthesize("Hello there.", 16_000))
        heard = speech if speech.size else np.zeros(16_000, dtype=np.float32)
        timed("asr", lambda: components.asr.transcribe(heard))
        timed("partials", lambda: components.asr.warm_up_partials(heard))
        timed("turn", lambda: components.turn.complete_probability(speech))
        if _may_answer_in_chinese(components.settings, components.asr):
            # the first Chinese answer's voice loads pypinyin's dictionaries: 0.2 s of turn 1
            voice = components.tts.choose(components.settings.voice or AUTO, "zh")
            components.tts.synthesize("你好。", 16_000, voice=voice)
        llm_warming.result()
    timings["warmup_s"] = round(time.perf_counter() - start, 3)
    log.info("warm-up done in %.2f s", timings["warmup_s"])


def _may_answer_in_chinese(settings: Settings, asr: WhisperASR) -> bool:
    """Sessions speak a Chinese answer with a voice of its own (voice `auto`, or espeak-ng's
    Mandarin) and hear Mandarin: their language is fixed to it, or left to a model that
    hears it."""
    if settings.voice not in (AUTO, "espeak-ng:cmn"):
        return False
    language = normalize(settings.asr_language)
    return language == "zh" if language is not None else "zh" in asr.languages


async def close_components(components: Components) -> None:
    await components.llms.close()
    await components.llm.close()
    components.transcribers.close()
    for model in (components.vad, components.turn, components.tts):
        model.executor.shutdown()


__all__ = [
    "ChatMessage",
    "Components",
    "GenerationParams",
    "close_components",
    "load_components",
    "warm_up",
]
