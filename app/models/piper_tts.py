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
        import onnxruntime
        from piper import PiperVoice
        from piper.config import PiperConfig

        self.name = name
        self.language = piper_language(model_path)

        def voice(threads: int | None) -> PiperVoice:
            options = onnxruntime.SessionOptions()
            if threads is not None:
                options.intra_op_num_threads = threads
            session = onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            return PiperVoice(config=PiperConfig.from_dict(config), session=session)

        try:
            config = json.loads(Path(f"{model_path}.json").read_text(encoding="utf-8"))
            # Urgent clauses (an answer's first, or audio about to run dry) on all the
            # cores onnxruntime takes; the rest on one, so a final transcription or a
            # first clause of another session keeps a core beside them (docs/benchmarks.md).
            self._voices = {True: voice(None), False: voice(1)}
        except Exception as exc:  # onnxruntime raises its own types for a corrupt file
            raise RuntimeError(
                f"cannot load TTS voice '{name}' from {model_path}: {exc}; reinstall its package"
            ) from exc
        self.sample_rate = int(self._voices[True].config.sample_rate)
        self._lock = threading.Lock()

    def threads(self, urgent: bool) -> int:
        """onnxruntime's intra-op threads for an urgent clause or another (0: its default)."""
        options = self._voices[urgent].session.get_session_options()
        return int(options.intra_op_num_threads)

    def synthesize(
        self,
        text: str,
        out_rate: int,
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        urgent: bool = True,
    ) -> np.ndarray:
        """Speak `text`; float32 mono samples at `out_rate`. Blocking; a set `cancel`
        token stops it at the next sentence (Piper synthesizes sentence by sentence).
        Not `urgent`: on one thread (its listener has seconds of audio still to hear)."""
        from piper import SynthesisConfig

        config = SynthesisConfig(length_scale=1.0 / max(speed, 0.25))
        chunks = []
        with self._lock:
            for chunk in self._voices[urgent].synthesize(text, config):
                if cancel is not None and cancel.cancelled:
                    break
                chunks.append(chunk.audio_float_array)
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        audio = np.concatenate(chunks).astype(np.float32)
        return resample(audio, self.sample_rate, out_rate)
