"""Non-speech for `bench conversation`'s false interruptions: sounds a room makes over an
answer, synthesised (seeded), and the crowd noise at the end of ../shared's jfk.flac.

A cough is voiced (glottal pulses through vowel-like resonances, a sharp attack and a
fast decay, two or three bursts), as real ones are: an unvoiced noise burst is not what a
throat makes, and Silero VAD never takes one for speech, so it would never reach the
server's pause at all. Knocks and noise bursts are kept as they are: whether the VAD lets
them through is part of what is measured.
"""

from __future__ import annotations

from typing import Any

from app.audio import PROTOCOL_RATE

JFK_SPEECH_ENDS_S = 10.4
PEAK = 0.9  # a sound louder than its level allows is turned down, not clipped  # past "...for your country": what follows is the crowd


def _norm(x: Any, dbfs: float) -> Any:
    """`x` at `dbfs` RMS, its peak at most PEAK."""
    import numpy as np

    rms = float(np.sqrt(np.mean(x**2))) or 1.0
    y = x / rms * 10 ** (dbfs / 20)
    peak = float(np.abs(y).max())
    return (y * min(1.0, PEAK / peak) if peak else y).astype(np.float32)


def _envelope(n: int, attack_s: float, decay_s: float) -> Any:
    import numpy as np

    t = np.arange(n) / PROTOCOL_RATE
    return np.minimum(t / attack_s, 1.0) * np.exp(-t / decay_s)


def _resonate(x: Any, formants: tuple[float, ...], bandwidths: tuple[float, ...]) -> Any:
    """`x` through parallel two-pole resonators (a crude vocal tract)."""
    import numpy as np
    from scipy.signal import lfilter

    out = np.zeros_like(x)
    for f, bw in zip(formants, bandwidths, strict=True):
        r = np.exp(-np.pi * bw / PROTOCOL_RATE)
        theta = 2 * np.pi * f / PROTOCOL_RATE
        out += lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], x)
    return out


def _pulses(f0: float, n: int, fall: float) -> Any:
    """A glottal pulse train starting at `f0` Hz, falling by `fall` (a share) over `n`."""
    import numpy as np

    f = f0 * (1 - fall * np.arange(n) / n)
    return (np.sin(np.cumsum(2 * np.pi * f / PROTOCOL_RATE)) > 0.95).astype(np.float64)


def _band_noise(rng: Any, n: int, low: float, high: float) -> Any:
    from scipy.signal import butter, lfilter

    b, a = butter(2, [low / (PROTOCOL_RATE / 2), high / (PROTOCOL_RATE / 2)], "band")
    return lfilter(b, a, rng.standard_normal(n))


def cough(rng: Any) -> Any:
    import numpy as np

    bursts = int(rng.integers(2, 4))
    f0 = float(rng.uniform(110, 210))
    parts = []
    for _ in range(bursts):
        n = int(rng.uniform(0.25, 0.4) * PROTOCOL_RATE)
        voiced = float(rng.uniform(0.5, 0.8))
        src = voiced * _pulses(f0, n, 0.3) + (1 - voiced) * 0.3 * rng.standard_normal(n)
        burst = _resonate(src, (600, 1300, 2400), (80, 120, 160)) * _envelope(n, 0.008, 0.1)
        parts += [burst, np.zeros(int(rng.uniform(0.1, 0.18) * PROTOCOL_RATE))]
    return _norm(np.concatenate(parts[:-1]), float(rng.uniform(-20, -16)))


def knock(rng: Any) -> Any:
    import numpy as np

    parts = []
    pitch = float(rng.uniform(150, 260))
    for _ in range(int(rng.integers(2, 5))):
        n = int(0.15 * PROTOCOL_RATE)
        t = np.arange(n) / PROTOCOL_RATE
        thud = np.sin(2 * np.pi * pitch * t) * np.exp(-t / 0.02)
        click = 0.3 * _band_noise(rng, n, 1000, 4000) * np.exp(-t / 0.005)
        parts += [thud + click, np.zeros(int(rng.uniform(0.08, 0.15) * PROTOCOL_RATE))]
    return _norm(np.concatenate(parts[:-1]), float(rng.uniform(-20, -16)))


def noise(rng: Any) -> Any:
    n = int(rng.uniform(0.5, 1.0) * PROTOCOL_RATE)
    burst = _band_noise(rng, n, 200, 6000) * _envelope(n, 0.02, 1.0)
    return _norm(burst, float(rng.uniform(-24, -18)))


def sigh(rng: Any) -> Any:
    """A voiced out-breath: falling pitch, open vowel, swelling and fading."""
    import numpy as np

    n = int(rng.uniform(0.7, 1.1) * PROTOCOL_RATE)
    src = 0.5 * _pulses(float(rng.uniform(100, 180)), n, 0.35) + 0.2 * rng.standard_normal(n)
    swell = np.sin(np.pi * np.arange(n) / n) ** 1.5
    return _norm(_resonate(src, (700, 1200, 2600), (80, 120, 160)) * swell, -22.0)


def crowd(rng: Any) -> Any:
    """The crowd after JFK's last word in ../shared's jfk.flac, at a seeded level."""
    import soundfile as sf

    from app.audio import resample
    from bench.voice.workload import speech_dir

    path = speech_dir() / "jfk.flac"
    if not path.is_file():
        raise SystemExit(f"missing {path}: the benchmark reads its crowd noise from ../shared")
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    tail = resample(data.mean(axis=1)[int(JFK_SPEECH_ENDS_S * rate) :], rate, PROTOCOL_RATE)
    return _norm(tail, float(rng.uniform(-24, -18)))


MAKERS = {"cough": cough, "knock": knock, "noise": noise, "sigh": sigh, "crowd": crowd}
KINDS = tuple(MAKERS)


def make(kind: str, seed: int) -> Any:
    """One sound of `kind` (float32 at the wire rate), the same for the same seed."""
    import numpy as np

    return MAKERS[kind](np.random.default_rng(seed))
