"""Hearing and speaking: VAD, turn model, Whisper ASR, TTS voices."""

from app.speech.openmp_isolation import isolate_ctranslate2_openmp

# Before any module here imports faster-whisper: see openmp_isolation.
isolate_ctranslate2_openmp()
