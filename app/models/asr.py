"""Speech recognition: faster-whisper (CTranslate2) on a local model directory, int8 on CPU."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.executor import CancelToken, ModelExecutor

WINDOW_S = 30  # Whisper's input window
# Segments Whisper is likely to have hallucinated from noise or silence.
NO_SPEECH_PROB_MAX = 0.6


@dataclass
class Transcript:
    text: str
    language: str
    duration_s: float


class WhisperASR:
    """A loaded Whisper model. `transcribe` is blocking: call it off the event loop."""

    def __init__(
        self, model_dir: Path, *, name: str, threads: int = 2, language: str | None = None
    ) -> None:
        from faster_whisper import WhisperModel

        self.name = name
        self.english_only = name.endswith(".en")
        self.language = "en" if self.english_only else language
        try:
            self.model = WhisperModel(
                str(model_dir), device="cpu", compute_type="int8", cpu_threads=threads
            )
        except Exception as exc:  # CTranslate2 raises RuntimeError for a corrupt model.bin
            raise RuntimeError(
                f"cannot load ASR model '{name}' from {model_dir}: {exc}; "
                f"run `r1voice models prepare {name} --force` or reinstall its package"
            ) from exc
        # One transcription at a time per model: CTranslate2 with one worker serialises
        # anyway, and this keeps two sessions from oversubscribing 2 cores. Its own
        # executor: VAD and TTS never queue behind a transcription.
        self._lock = threading.Lock()
        self.executor = ModelExecutor("asr", workers=1, max_pending=32)

    @property
    def busy(self) -> bool:
        """A transcription is running or queued (optional work such as partials waits)."""
        return self.executor.pending > 0

    async def run(self, audio_16k: np.ndarray, prefix: str | None = None) -> Transcript:
        """`transcribe` on this model's executor; a cancelled caller stops it between segments."""
        return await self.executor.run_cancellable(
            lambda token: self.transcribe(audio_16k, prefix=prefix, cancel=token)
        )

    def transcribe(
        self,
        audio_16k: np.ndarray,
        prompt: str | None = None,
        prefix: str | None = None,
        cancel: CancelToken | None = None,
    ) -> Transcript:
        """Transcribe a whole utterance (float32, 16 kHz, mono). Blocking.

        `prefix` forces the start of the transcript (partial passes only: faster-whisper
        applies it to the first 30 s window alone). Audio longer than Whisper's 30 s
        window is decoded with timestamps, so each window starts where the last word
        ended; without them a word across a window's edge came out twice (25% WER on a
        47 s monologue against 4.5% with). Segments are decoded lazily, so a set
        `cancel` token stops the work at the next segment.
        """
        with self._lock:
            if cancel is not None and cancel.cancelled:
                return Transcript(text="", language=self.language or "", duration_s=0.0)
            segments, info = self.model.transcribe(
                audio_16k.astype(np.float32),
                language=self.language,
                beam_size=1,
                vad_filter=False,
                condition_on_previous_text=False,
                initial_prompt=prompt,
                prefix=prefix,
                without_timestamps=audio_16k.size <= WINDOW_S * 16_000,
            )
            kept = []
            for s in segments:
                if cancel is not None and cancel.cancelled:
                    break
                if s.no_speech_prob < NO_SPEECH_PROB_MAX or s.avg_logprob > -0.5:
                    kept.append(s.text.strip())
        text = " ".join(t for t in kept if t)
        return Transcript(text=text, language=info.language, duration_s=info.duration)
