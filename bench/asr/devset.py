"""The long-speech dev set of `r1voice bench asr --long`: recordings the server was never
tuned on, with their published reference texts.

Each source is a public repository's test data. They are read from
../shared/data/speech/<folder>/ when the project's shared data has them, else from
bench/asr/data/<folder>/ (LJSpeech's eight pieces, 1.4 MB, public domain, are kept there
in git so a fresh clone has the dev set), else from $R1VOICE_SPEECH_CACHE/<folder>/
(default ~/.cache/r1voice/speech): copy the files named below there (`git show
<commit>:<path>` of a clone of the repository).

- ljspeech/: LJ001-0001 ... LJ001-0008 of LJSpeech 1.1 (public domain), a woman reading
  one passage of a book (52 s), cut by LJSpeech at pauses, often inside a sentence
  ("... represented in the Exhibition" | "in being comparatively modern."). From
  coqui-ai/TTS, tests/data/ljspeech/wavs/*.flac (22.05 kHz mono) at commit
  dbf1a08a0d4e47fdad6172e433eeb34bc6b13b4e; the texts are LJSpeech's normalized
  transcriptions (its metadata_flac.csv), listed in LJSPEECH below.

No spontaneous Mandarin recording with a published reference text was found in a public
repository's test data (AISHELL, WenetSpeech and MagicData-RAMC keep their audio off
GitHub; the meeting samples found were Git LFS pointers). The Mandarin cases are built
from the shared read recordings instead: each cut at its quietest point near the middle
with a hesitation's pause (`halves`), and the same over a phone line (`phone_line`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

RATE = 16_000
LJSPEECH = [
    (
        "LJ001-0001.flac",
        "Printing, in the only sense with which we are at present concerned, differs from "
        "most if not from all the arts and crafts represented in the Exhibition",
    ),
    ("LJ001-0002.flac", "in being comparatively modern."),
    (
        "LJ001-0003.flac",
        "For although the Chinese took impressions from wood blocks engraved in relief for "
        "centuries before the woodcutters of the Netherlands, by a similar process",
    ),
    (
        "LJ001-0004.flac",
        "produced the block books, which were the immediate predecessors of the true printed book,",
    ),
    (
        "LJ001-0005.flac",
        "the invention of movable metal letters in the middle of the fifteenth century may "
        "justly be considered as the invention of the art of printing.",
    ),
    (
        "LJ001-0006.flac",
        "And it is worth mention in passing that, as an example of fine typography,",
    ),
    (
        "LJ001-0007.flac",
        'the earliest book printed with movable types, the Gutenberg, or "forty-two line '
        'Bible" of about fourteen fifty-five,',
    ),
    ("LJ001-0008.flac", "has never been surpassed."),
]


def source_dir(folder: str) -> Path:
    """Where a dev-set source's files are: ../shared first, then bench/asr/data, then the cache."""
    from bench.voice.workload import speech_dir

    shared = speech_dir() / folder
    if shared.is_dir():
        return shared
    in_git = Path(__file__).parent / "data" / folder
    if in_git.is_dir():
        return in_git
    cache = Path(os.environ.get("R1VOICE_SPEECH_CACHE", "~/.cache/r1voice/speech"))
    return cache.expanduser() / folder


def ljspeech() -> list[tuple[str, Any]]:
    """(what was said, float32 samples at 16 kHz) for each LJSpeech piece, in order."""
    import soundfile as sf

    from app.audio import resample

    folder = source_dir("ljspeech")
    pieces = []
    for name, said in LJSPEECH:
        path = folder / name
        if not path.is_file():
            raise SystemExit(
                f"missing {path}: copy LJSpeech's {name} from coqui-ai/TTS "
                "tests/data/ljspeech/wavs/ there (see bench/asr/devset.py)"
            )
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        pieces.append((said, resample(data.mean(axis=1), rate, RATE)))
    return pieces


def phone_line(samples: Any, seed: int) -> Any:
    """`samples` (16 kHz) as a phone call hears them: 8 kHz, the 300-3400 Hz band, mu-law
    (G.711) and line noise, back at 16 kHz."""
    import numpy as np
    from scipy.signal import butter, sosfilt

    from app.audio import resample

    narrow = resample(samples, RATE, 8_000)
    narrow = sosfilt(butter(4, [300, 3400], "bandpass", fs=8_000, output="sos"), narrow)
    narrow = narrow + np.random.default_rng(seed).normal(0, 0.004, narrow.size)
    mu = 255.0
    peak = max(float(np.abs(narrow).max()), 1e-6)
    coded = np.sign(narrow) * np.log1p(mu * np.abs(narrow / peak)) / np.log1p(mu)
    coded = np.round(coded * 127) / 127  # 8 bits a sample
    decoded = np.sign(coded) * np.expm1(np.abs(coded) * np.log1p(mu)) / mu * peak
    return resample(decoded.astype(np.float32), 8_000, RATE)


def halves(samples: Any) -> list[Any]:
    """`samples` cut in two at its quietest 50 ms in the middle third: a speaker stopping
    inside a sentence (the pause between them is the caller's)."""
    import numpy as np

    frame = RATE // 20
    third = samples.size // 3
    middle = samples[third : 2 * third]
    n = middle.size // frame
    rms = np.sqrt((middle[: n * frame].reshape(n, frame) ** 2).mean(axis=1))
    cut = third + int(np.argmin(rms)) * frame + frame // 2
    return [samples[:cut], samples[cut:]]
