"""Voice activity detection: Silero VAD (ONNX, from the `silero-vad` package), streamed.

We run the ONNX model with onnxruntime directly instead of importing `silero_vad`,
whose import calls torch.set_num_threads(1) process-wide and would slow the LLM engine.
The per-frame protocol (512 samples at 16 kHz with 64 samples of left context and a
recurrent state) follows silero_vad.utils_vad.OnnxWrapper.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime

from app.executor import ModelExecutor

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
        # Its own thread: a VAD chunk (under a millisecond) never queues behind ASR or TTS.
        self.executor = ModelExecutor("vad", workers=1, max_pending=256)

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
