"""What both ASR benches (the window bench, asr.py, and the long-turn one, long.py) use:
where a model is, and a pass of faster-whisper alone, as its users call it."""

from __future__ import annotations

from typing import Any


def locate(model: str) -> Any:
    """An ASR model's directory: the path given, else the bundled model of that name."""
    from pathlib import Path

    from app.catalog import registry as model_registry

    path = Path(model)
    return path if path.is_dir() else model_registry.locate(model, "asr")


def alone(model: Any, audio: Any, language: str | None) -> Any:
    """faster-whisper as its users call it: the full 30 s window, beam 5, its defaults."""
    from app.speech.asr import FRAMES_PER_S, WINDOW_S, Transcript
    from app.speech.languages import simplified
    from app.text_units import join

    model.window_frames = WINDOW_S * FRAMES_PER_S
    segments, info = model.transcribe(audio, language=language, beam_size=5)
    text = join(s.text.strip() for s in segments)
    return Transcript(simplified(text), info.language, info.duration)
