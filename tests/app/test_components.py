"""What the server loads and warms before its first user (app/components.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.components import Components, _may_answer_in_chinese
from app.settings import Settings
from app.speech.languages import ENGLISH_ONLY
from engine import DEFAULT_LLM, default_quantization

MULTILINGUAL = ("en", "zh", "de")


@pytest.mark.parametrize(
    ("voice", "asr_language", "languages", "warmed"),
    [
        ("auto", "", MULTILINGUAL, True),  # Whisper detects Mandarin, auto speaks it
        ("auto", "zh", MULTILINGUAL, True),
        ("espeak-ng:cmn", "zh", MULTILINGUAL, True),
        ("auto", "en", MULTILINGUAL, False),  # the sessions hear English only
        ("auto", "", ENGLISH_ONLY, False),  # tiny.en never hears Mandarin
        ("", "zh", MULTILINGUAL, False),  # an English voice reads it: nothing to load
        ("piper-en_US-joe-medium", "", MULTILINGUAL, False),
    ],
)
def test_the_chinese_voice_is_warmed_where_a_first_answer_may_need_it(
    voice: str, asr_language: str, languages: tuple[str, ...], warmed: bool
) -> None:
    """Bug: the first Mandarin answer of a server paid 0.2 s for pypinyin's dictionaries
    (its first synthesis); warm-up now loads them where a Chinese answer may come."""
    settings = Settings(voice=voice, asr_language=asr_language)
    asr = SimpleNamespace(languages=languages)
    assert _may_answer_in_chinese(settings, asr) is warmed  # type: ignore[arg-type]


def _served(settings: Settings) -> str:
    parts = dict.fromkeys(("vad", "turn", "transcribers", "tts", "llms"))
    asr, llm = SimpleNamespace(name="whisper-tiny.en"), SimpleNamespace(context_length=4096)
    return Components(settings=settings, asr=asr, llm=llm, **parts).describe()  # type: ignore[arg-type]


def test_the_start_up_log_says_what_is_served() -> None:
    """A new user could not tell from the log which LLM, at which precision, was loaded."""
    line = _served(Settings())
    assert line.startswith(f"LLM {DEFAULT_LLM} (our engine, {default_quantization(DEFAULT_LLM)}, ")
    assert "speculative ngram, context 4096 tokens); ASR whisper-tiny.en;" in line
    assert "voice piper-en_US-joe-medium; turn detection semantic_vad" in line
    remote = _served(Settings(llm_backend="remote", llm_url="http://u:secret@vllm:8000/v1"))
    assert "(remote, vllm:8000, context 4096 tokens)" in remote and "secret" not in remote
    assert "(our engine, int8," in _served(Settings(quantization="int8"))


def test_load_and_warm_up_time_each_part_and_serve() -> None:
    """The LLM loads (and warms up) beside the speech models; each part keeps its time."""
    import asyncio

    from app.components import close_components, load_components, warm_up
    from tests.conftest import make_settings

    components = load_components(make_settings())
    try:
        warm_up(components)
        parts = {"vad", "turn", "asr", "tts", "llm"}
        assert {f"load_{p}_s" for p in parts} | {"load_s"} <= components.timings.keys()
        warmed = {"tts", "asr", "partials", "turn", "llm"}
        assert {f"warmup_{p}_s" for p in warmed} | {"warmup_s"} <= components.timings.keys()
        assert components.llm.stats()["num_running"] == 0
        # a first clause's synthesis has the cores: the server's engine gives way to it
        engine = components.llm.llm  # type: ignore[attr-defined]
        before = engine.give_way.holds
        voice = components.tts.default_name
        asyncio.run(components.tts.speak("Hello there.", 24000, 1.0, voice, first=True))
        asyncio.run(components.tts.speak("And more.", 24000, 1.0, voice))
        assert engine.give_way.holds == before + 1
        # the server's KV blocks (R1VOICE_LLM_BLOCK_SIZE), not the engine's own default
        assert engine.stats().kv_block_size == 4
    finally:
        asyncio.run(close_components(components))


def test_a_speech_model_failing_reports_its_error_and_closes_the_llm_beside_it() -> None:
    import threading

    from app.components import load_components
    from tests.conftest import make_settings

    def engines() -> int:
        return sum(t.name == "r1voice-engine" for t in threading.enumerate())

    before = engines()  # a session's shared server may hold one
    with pytest.raises(ValueError, match=r"R1VOICE_VOICE='no-such-voice' is not a voice here"):
        load_components(make_settings(voice="no-such-voice"))
    assert engines() == before


def test_the_voice_loads_on_its_own_thread_beside_the_hearing_models() -> None:
    """Piper's ONNX session (most of the speech models' load) no longer waits for VAD,
    the turn model and Whisper: it loads on a thread of its own, timed as before."""
    import threading

    from app.components import _load_speech
    from tests.conftest import make_settings

    threads: dict[str, str] = {}

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        threads[name] = threading.current_thread().name
        return fn()

    vad, turn, asr, tts = _load_speech(make_settings(), timed)
    try:
        assert set(threads) == {"vad", "turn", "asr", "tts"}
        assert threads["tts"].startswith("tts-load") and threads["tts"] != threads["asr"]
        assert threads["vad"] == threads["turn"] == threads["asr"]
        assert tts.voices() and asr.languages
    finally:
        asr.close()
        for model in (vad, turn, tts):
            model.executor.shutdown()


def test_a_hearing_model_failing_is_the_error_said_once_the_voice_is_loaded() -> None:
    from app.components import _load_speech
    from tests.conftest import make_settings

    loaded: list[str] = []

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        if name == "asr":
            raise RuntimeError("whisper is broken")
        value = fn()
        loaded.append(name)
        return value

    with pytest.raises(RuntimeError, match="whisper is broken"):
        _load_speech(make_settings(), timed)
    assert "tts" in loaded  # waited for, not left loading
