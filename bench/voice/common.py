"""What the parts of the voice benchmark share: targets, the wire format, event names."""

from __future__ import annotations

from typing import Any

from app.audio import PROTOCOL_RATE
from app.protocol.server_events import AudioDelta, AudioTranscriptDone, TranscriptionCompleted, ga

# Printed next to the results; nothing asserts them.
TARGETS_MS = {
    "voice_to_voice_p50": 800.0,
    "voice_to_voice_p95": 1200.0,
    "barge_in": 500.0,
}

CHUNK_MS = 20

AUDIO_DELTAS = (AudioDelta.TYPE, ga.RENAMED[AudioDelta])
# Logged by the WebRTC client for each audible frame of the answer's track: its audio
# events, where a WebSocket has deltas
RTC_AUDIO_FRAME = "bench.rtc.audio_frame"
ANSWER_AUDIO = (*AUDIO_DELTAS, RTC_AUDIO_FRAME)
# PCM16 RMS above which a window of the answer is heard, not silence or Opus's noise floor
AUDIBLE_RMS = 100.0
# The window: short beside a 20 ms frame, so that where a sound starts inside a frame
# (a codec's lookahead moves it by a few ms) counts as that, not as a whole frame
AUDIBLE_WINDOW_MS = 5


def first_audible_ms(pcm: bytes, rate: int = PROTOCOL_RATE) -> float | None:
    """Where the first audible 5 ms of PCM16 `pcm` starts, in ms; None if none is."""
    import numpy as np

    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype=np.int16).astype(np.float32)
    frame = rate * AUDIBLE_WINDOW_MS // 1000
    for start in range(0, samples.size, frame):
        window = samples[start : start + frame]
        if float(np.sqrt(np.mean(window**2))) > AUDIBLE_RMS:
            return start * 1000 / rate
    return None


def ms_between(t: float | None, since: float | None) -> float | None:
    """ms from monotonic time `since` to `t`, to 0.1 ms; None if either is unknown."""
    return None if t is None or since is None else round((t - since) * 1000, 1)


ANSWER_DONE = (AudioTranscriptDone.TYPE, ga.RENAMED[AudioTranscriptDone])
TRANSCRIPT_DONE = TranscriptionCompleted.TYPE
# A response's statuses that are a whole answer: "incomplete" is one cut at its
# max_output_tokens, spoken to its end all the same.
ANSWERED = ("completed", "incomplete")


def paired_clips(args: Any, transport: str) -> tuple[list[Any], list[Any], int, dict[str, Any]]:
    """What a transport's paired bench says (bench/voice/phone.py, xiaozhi.py): all the
    clips, the ones said in pairs (the quick run: jfk and three questions), the rounds
    (`--paired`; quick 1, else 3) and the result's head (machine, load)."""
    import os

    from bench.kit.machine import describe
    from bench.voice.workload import HUMAN_CLIPS, prepare_clips

    quick = bool(getattr(args, "quick", False))
    human = ["jfk"] if quick else list(HUMAN_CLIPS)
    clips = [c for c in prepare_clips(human).values() if c.name != "interruption"]
    said = clips[: len(human) + 3] if quick else clips
    rounds = max(getattr(args, "paired", 0) or (1 if quick else 3), 1)
    result: dict[str, Any] = {"benchmark": "voice", "transport": transport, "quick": quick}
    result["machine"] = describe()
    result["load_before"] = os.getloadavg()
    return clips, said, rounds, result
