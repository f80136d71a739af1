"""The partial passes' worker process (`python -m app.speech.partial_asr MODEL_DIR NAME
THREADS MIN_WINDOW_S`): the same Whisper model as the server's, transcribing the
requests of `WhisperASR.run(partial=True)` one at a time (see app/pausable_process.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.pausable_process import serve


def main(argv: list[str]) -> None:
    model_dir, name, threads, min_window_s = argv

    def load() -> Callable[[Any], tuple[str, str, float]]:
        from app.speech.asr import WhisperASR

        # greedy partials decode no faster apart: not worth a second copy of the model
        asr = WhisperASR(
            Path(model_dir),
            name=name,
            threads=int(threads),
            min_window_s=float(min_window_s),
            decode_apart=False,
        )

        def transcribe(request: Any) -> tuple[str, str, float]:
            audio, prefix, language = request
            heard = asr.transcribe(audio, prefix=prefix, language=language, partial=True)
            return heard.text, heard.language, heard.duration_s

        return transcribe

    serve(load)


if __name__ == "__main__":
    main(sys.argv[1:])
