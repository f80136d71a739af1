"""Text to speech: Piper (neural, fast on CPU) with the bundled voice."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from app.audio import resample
from app.executor import CancelToken


def piper_language(model_path: Path) -> str:
    """The language of a Piper voice, as its `<voice>.onnx.json` says ("zh_CN" -> "zh").
    Raises ValueError naming what is wrong when the file is missing or unreadable."""
    config = Path(f"{model_path}.json")
    try:
        code = json.loads(config.read_text(encoding="utf-8"))["language"]["code"]
    except FileNotFoundError:
        raise ValueError(f"{config.name} is missing beside {model_path.name}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{config.name} has no readable language.code ({exc})") from None
    if not isinstance(code, str) or not code:
        raise ValueError(f"{config.name}: language.code is not a language code")
    return code.replace("-", "_").split("_")[0].lower()


class PiperTTS:
    """A loaded Piper voice. `synthesize` is blocking: call it off the event loop."""

    def __init__(self, model_path: Path, *, name: str) -> None:
        from piper import PiperVoice

        self.name = name
        self.language = piper_language(model_path)
        try:
            self.voice = PiperVoice.load(str(model_path))
        except Exception as exc:  # onnxruntime raises its own types for a corrupt file
            raise RuntimeError(
                f"cannot load TTS voice '{name}' from {model_path}: {exc}; reinstall its package"
            ) from exc
        self.sample_rate = int(self.voice.config.sample_rate)
        self._lock = threading.Lock()

    def synthesize(
        self, text: str, out_rate: int, speed: float = 1.0, cancel: CancelToken | None = None
    ) -> np.ndarray:
        """Speak `text`; float32 mono samples at `out_rate`. Blocking; a set `cancel`
        token stops it at the next sentence (Piper synthesizes sentence by sentence)."""
        from piper import SynthesisConfig

        config = SynthesisConfig(length_scale=1.0 / max(speed, 0.25))
        chunks = []
        with self._lock:
            for chunk in self.voice.synthesize(text, config):
                if cancel is not None and cancel.cancelled:
                    break
                chunks.append(chunk.audio_float_array)
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        audio = np.concatenate(chunks).astype(np.float32)
        return resample(audio, self.sample_rate, out_rate)
