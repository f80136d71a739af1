"""espeak-ng TTS: the small fallback voice, in any language espeak-ng speaks (Debian `espeak-ng`)."""

from __future__ import annotations

import functools
import io
import shutil
import subprocess

import numpy as np
import soundfile as sf

from app.audio import resample
from app.executor import CancelToken
from app.speech.mandarin import PINYIN_VOICE, to_pinyin
from app.text_units import has_han

WORDS_PER_MINUTE = 175  # espeak-ng's default rate, scaled by the session's speed


class EspeakTTS:
    """Runs the `espeak-ng` program; `synthesize` is blocking: call it off the event loop."""

    def __init__(self, language: str = "en-us") -> None:
        binary = shutil.which("espeak-ng")
        if binary is None:
            raise RuntimeError(
                "espeak-ng is not installed: run `apt-get install espeak-ng` (or `make install`)"
            )
        self.binary = binary
        self.language = language
        self.name = f"espeak-ng:{language}"

    def synthesize(
        self, text: str, out_rate: int, speed: float = 1.0, cancel: CancelToken | None = None
    ) -> np.ndarray:
        """Blocking: one call per clause, so `cancel` is only checked by the caller."""
        wpm = str(int(WORDS_PER_MINUTE * max(speed, 0.25)))
        voice = self.language
        if voice in ("cmn", PINYIN_VOICE) and has_han(text) and _has_pinyin_voice():
            voice, text = PINYIN_VOICE, to_pinyin(text)
        # "--" ends the options, so text starting with "-" is spoken, not parsed.
        result = subprocess.run(
            [self.binary, "-v", voice, "-s", wpm, "--stdout", "--", text],
            capture_output=True,
            check=False,
            timeout=30,
        )
        if result.returncode != 0 or not result.stdout:
            raise RuntimeError(
                f"espeak-ng failed for voice '{self.language}': {result.stderr.decode(errors='replace').strip()}"
            )
        audio, rate = sf.read(io.BytesIO(result.stdout), dtype="float32")
        return resample(audio, rate, out_rate)


@functools.cache
def _has_pinyin_voice() -> bool:
    """Debian's espeak-ng has `cmn-latn-pinyin`; a build without it reads characters."""
    return PINYIN_VOICE in espeak_languages()


def espeak_languages() -> list[str]:
    """The voices (language codes) the installed espeak-ng offers; empty when absent."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        return []
    listing = subprocess.run(
        [binary, "--voices"], capture_output=True, text=True, check=False, timeout=10
    )
    return [line.split()[1] for line in listing.stdout.splitlines()[1:] if len(line.split()) > 1]
