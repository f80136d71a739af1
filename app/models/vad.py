"""Voice activity detection: Silero VAD (ONNX, from the `silero-vad` package), streamed.

We run the ONNX model with onnxruntime directly instead of importing `silero_vad`,
whose import calls torch.set_num_threads(1) process-wide and would slow the LLM engine.
The per-frame protocol (512 samples at 16 kHz with 64 samples of left context and a
recurrent state) follows silero_vad.utils_vad.OnnxWrapper.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime

FRAME = 512  # samples per VAD frame at 16 kHz (32 ms)
CONTEXT = 64
RATE = 16_000


class SileroModel:
    """The loaded ONNX model; shared by all sessions (each keeps its own state)."""

    def __init__(self, path: Path) -> None:
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(path), sess_options=opts, providers=["CPUExecutionProvider"]
        )

    def frame_probability(
        self, frame_with_context: np.ndarray, state: np.ndarray
    ) -> tuple[float, np.ndarray]:
        out, new_state = self.session.run(
            None,
            {
                "input": frame_with_context[None, :].astype(np.float32),
                "state": state,
                "sr": np.array(RATE, dtype=np.int64),
            },
        )
        return float(out[0][0]), new_state


@dataclass
class VADEvent:
    # "speech_started" | "speech_paused" | "speech_resumed" | "speech_stopped"; a pause is
    # `early_ms` of silence inside speech: the turn may be ending, so work can start early.
    kind: str
    sample: int  # position in the session's 16 kHz input stream


@dataclass
class VADConfig:
    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    early_ms: int = 200


class VADStream:
    """One session's VAD: feed 16 kHz samples, get speech start/stop events.

    Speech starts on the first frame above `threshold`; it stops after
    `silence_duration_ms` of frames below `threshold - 0.15` (hysteresis, as Silero's
    own VADIterator does, so a soft syllable does not end the turn).
    """

    def __init__(self, model: SileroModel, config: VADConfig) -> None:
        self.model = model
        self.config = config
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)
        self._position = 0  # samples consumed into frames
        self.speaking = False
        self._silence_samples = 0
        self._paused = False
        self.last_probability = 0.0

    def reset(self) -> None:
        self.__init__(self.model, self.config)  # type: ignore[misc]

    def process(self, samples: np.ndarray) -> list[VADEvent]:
        """Consume samples (any length); return the events they cause, in order."""
        events: list[VADEvent] = []
        buf = np.concatenate([self._pending, samples]) if self._pending.size else samples
        n_frames = buf.size // FRAME
        for i in range(n_frames):
            frame = buf[i * FRAME : (i + 1) * FRAME]
            prob, self._state = self.model.frame_probability(
                np.concatenate([self._context, frame]), self._state
            )
            self._context = frame[-CONTEXT:]
            self.last_probability = prob
            frame_start = self._position
            self._position += FRAME
            events.extend(self._update(prob, frame_start))
        self._pending = buf[n_frames * FRAME :].copy()
        return events

    def _update(self, prob: float, frame_start: int) -> list[VADEvent]:
        cfg = self.config
        if not self.speaking:
            if prob >= cfg.threshold:
                self.speaking = True
                self._silence_samples = 0
                return [VADEvent("speech_started", frame_start)]
            return []
        if prob < max(cfg.threshold - 0.15, 0.01):
            self._silence_samples += FRAME
            silence_start = frame_start + FRAME - self._silence_samples
            if self._silence_samples * 1000 >= cfg.silence_duration_ms * RATE:
                self.speaking = False
                self._silence_samples = 0
                self._paused = False
                return [VADEvent("speech_stopped", silence_start)]
            early = min(cfg.early_ms, cfg.silence_duration_ms)
            if not self._paused and self._silence_samples * 1000 >= early * RATE:
                self._paused = True
                return [VADEvent("speech_paused", silence_start)]
        elif prob >= cfg.threshold or self._silence_samples == 0:
            self._silence_samples = 0
            if self._paused:
                self._paused = False
                return [VADEvent("speech_resumed", frame_start)]
        return []
