"""Coqui TTS backend (optional extra: `pip install .[coqui]`) for users who have its models.

Coqui models are not bundled (no hub downloads here): point `R1VOICE_COQUI_MODEL` at a
local model directory holding `model.pth` (or `model_file.pth`) and `config.json`.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from app.audio import resample
from app.executor import CancelToken


class CoquiTTS:
    def __init__(self, model_dir: Path, name: str = "coqui") -> None:
        try:
            from TTS.api import TTS  # type: ignore[import-not-found]
        except ImportError as exc:
            raise RuntimeError(
                "the Coqui TTS backend needs the extra: `pip install .[coqui]`"
            ) from exc
        checkpoint = next(
            (p for p in (model_dir / "model.pth", model_dir / "model_file.pth") if p.is_file()),
            None,
        )
        config = model_dir / "config.json"
        if checkpoint is None or not config.is_file():
            raise RuntimeError(f"no Coqui model in {model_dir}: expected model.pth and config.json")
        self.name = name
        self.tts = TTS(model_path=str(checkpoint), config_path=str(config), progress_bar=False)
        self.sample_rate = int(self.tts.synthesizer.output_sample_rate)
        self._lock = threading.Lock()

    def synthesize(
        self, text: str, out_rate: int, speed: float = 1.0, cancel: CancelToken | None = None
    ) -> np.ndarray:
        """Blocking: one call per clause, so `cancel` is only checked by the caller."""
        with self._lock:
            audio = np.asarray(self.tts.tts(text=text, speed=speed), dtype=np.float32)
        return resample(audio, self.sample_rate, out_rate)
