"""One session's voice activity detection over its 16 kHz input stream.

The stream position (in samples) is the clock every turn is measured on, so the VAD
owns it: `reset()` forgets speech state and model state but never rewinds the position
(rewinding made the next utterance look like it began inside the previous turn); it
continues at the position of the audio buffer's end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.speech.vad import CONTEXT, FRAME, RATE, SileroModel

# A frame is silence below `threshold - HYSTERESIS` (as Silero's own VADIterator: a soft
# syllable just under the threshold does not start a pause), and below SILENCE_FLOOR
# whatever the threshold (a threshold under HYSTERESIS still hears silence).
HYSTERESIS = 0.15
SILENCE_FLOOR = 0.01


@dataclass(frozen=True)
class VADEvent:
    """`kind`: "speech_started" | "speech_lull" | "speech_paused" | "speech_resumed" |
    "speech_stopped".

    A lull is `VADConfig.lull_ms` of silence inside speech: the final transcription may
    start. A pause is `VADConfig.early_ms` of silence: the turn may be ending, so the turn
    model judges it. "speech_resumed" follows either. `sample` is the position in the
    session's 16 kHz input stream (for a pause or a stop: where the silence began);
    `heard_at` is where the VAD had heard enough to say so (the end of the frame that
    decided it).
    """

    kind: str
    sample: int
    heard_at: int | None = None


@dataclass
class VADConfig:
    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    early_ms: int = 200
    # The final transcription starts at a lull, sooner than the pause: its words are ready
    # sooner, so the answer is too (a lull that was only a breath costs a cancelled pass).
    # Two VAD frames (FRAME). The pause itself stays at `early_ms`: the turn model
    # judging that early split more utterances, so only the transcription moves.
    lull_ms: int = 64

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")
        if min(self.silence_duration_ms, self.early_ms, self.lull_ms) <= 0:
            raise ValueError("silence_duration_ms, early_ms and lull_ms must be > 0")
        if self.prefix_padding_ms < 0:
            raise ValueError("prefix_padding_ms must be >= 0")


class VADStream:
    """Feed 16 kHz samples, get speech start/pause/resume/stop events with positions.

    Speech starts on the first frame above `threshold`; it stops after
    `silence_duration_ms` of frames below `threshold - HYSTERESIS`. `process` is
    blocking (one ONNX call per FRAME): run it on the VAD model's executor.
    """

    def __init__(self, model: SileroModel, config: VADConfig, position: int = 0) -> None:
        self.model = model
        self.config = config
        self.position = position  # stream position of the next sample fed
        self._forget_speech()

    def _forget_speech(self) -> None:
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)
        self.speaking = False
        self._silence_samples = 0
        self._paused = self._lulled = False
        self._pause_limit: int | None = None  # samples: this pause ends the turn sooner

    def reset(self, position: int) -> None:
        """Forget speech in progress (buffer cleared or committed, VAD switched back on)
        and continue at stream `position`, which never goes back."""
        if position < self.position - self._pending.size:
            raise ValueError(f"stream position {position} is before {self.position}")
        self.position = position
        self._forget_speech()

    @property
    def silence_samples(self) -> int:
        """How long the current pause inside speech has lasted (0 outside speech)."""
        return self._silence_samples

    def end_speech(self) -> None:
        """The turn was ended by someone else (the turn model): the next speech starts
        a new one. Blocking only in that it must run where `process` runs."""
        self.speaking = False
        self._silence_samples = 0
        self._paused = self._lulled = False
        self._pause_limit = None

    def end_pause_after(self, ms: int, silence_start: int) -> None:
        """End the turn once the pause that began at `silence_start` lasts `ms` (if the
        speech is still paused there; a later pause keeps `silence_duration_ms`). Run it
        where `process` runs."""
        heard = self.position - self._pending.size
        if (
            self.speaking
            and self._silence_samples
            and heard - self._silence_samples == silence_start
        ):
            self._pause_limit = ms * RATE // 1000

    def process(self, samples: np.ndarray) -> list[VADEvent]:
        """Consume samples (any length); return the events they cause, in order."""
        events: list[VADEvent] = []
        buf = np.concatenate([self._pending, samples]) if self._pending.size else samples
        frame_start = self.position - self._pending.size
        n_frames = buf.size // FRAME
        for i in range(n_frames):
            frame = buf[i * FRAME : (i + 1) * FRAME]
            prob, self._state = self.model.frame_probability(
                np.concatenate([self._context, frame]), self._state
            )
            self._context = frame[-CONTEXT:]
            events.extend(self._update(prob, frame_start))
            frame_start += FRAME
        self._pending = buf[n_frames * FRAME :].copy()
        self.position += samples.size
        return events

    def _update(self, prob: float, frame_start: int) -> list[VADEvent]:
        cfg = self.config
        if not self.speaking:
            if prob >= cfg.threshold:
                self.speaking = True
                self._silence_samples = 0
                return [VADEvent("speech_started", frame_start)]
            return []
        if prob < max(cfg.threshold - HYSTERESIS, SILENCE_FLOOR):
            self._silence_samples += FRAME
            silence_start = frame_start + FRAME - self._silence_samples
            limit = cfg.silence_duration_ms * RATE // 1000
            if self._silence_samples >= min(limit, self._pause_limit or limit):
                self.end_speech()
                return [VADEvent("speech_stopped", silence_start)]
            events = []
            early = min(cfg.early_ms, cfg.silence_duration_ms)
            for kind, ms, done in (
                ("speech_lull", min(cfg.lull_ms, early), self._lulled),
                ("speech_paused", early, self._paused),
            ):
                if not done and self._silence_samples * 1000 >= ms * RATE:
                    events.append(VADEvent(kind, silence_start, frame_start + FRAME))
            self._lulled = self._lulled or bool(events)
            self._paused = self._paused or any(e.kind == "speech_paused" for e in events)
            return events
        elif prob >= cfg.threshold or self._silence_samples == 0:
            self._silence_samples = 0
            self._pause_limit = None
            if self._lulled:
                self._paused = self._lulled = False
                return [VADEvent("speech_resumed", frame_start)]
        return []
