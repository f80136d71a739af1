"""`bench capacity --transport twilio`: the level's sessions as phone calls.

Each caller speaks Twilio's documented media stream (bench/voice/twilio_caller.py): the
same scripts as the WebSocket's sessions, said as 20 ms mu-law 8 kHz `media` frames at
real-time pace (the line's silence between them), `mark`s echoed as Twilio plays the
answer. A turn's voice-to-voice is the speech's last frame sent -> the answer's first
`media` frame arriving (as the WebSocket's first audio delta arriving); the barge-in
trial says a question with a long answer and talks over it: speech -> `clear`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

STREAM_PATH = "/v1/telephony/twilio/stream"


@functools.lru_cache(maxsize=64)
def ulaw(pcm16_24k: bytes) -> bytes:
    """A clip (PCM16, 24 kHz) as the line carries it (once per clip: the callers share
    the server's cores)."""
    from bench.voice.phone import _ulaw

    return _ulaw(pcm16_24k)


async def phone_session(
    url: str,
    clips: list[Any],
    delay: float,
    turn_timeout: float,
    merge_window_s: float,
    think_s: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """One call saying `clips` in turn, each after the answer to the one before (as
    bench/voice/client.py's run_session, over a media stream)."""
    import asyncio

    import websockets

    from bench.kit.log import log
    from bench.voice.client import pause_after
    from bench.voice.phone import phone_turn
    from bench.voice.twilio_caller import TwilioCaller

    await asyncio.sleep(delay)
    try:
        caller = await TwilioCaller.open(url)
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
        return {"turns": [], "error": f"cannot connect: {exc!r}", "mic_max_lag_ms": 0.0}
    turns: list[dict[str, Any]] = []
    error = None
    try:
        await asyncio.sleep(0.5)  # the line is open before anyone speaks
        for clip in clips:
            turn = {"clip": clip.name, "kind": clip.kind, "server": None}
            turn |= await phone_turn(caller, ulaw(clip.pcm), turn_timeout)
            turns.append(turn)
            await pause_after(turn["speech_end"], merge_window_s)
            if think_s is not None:
                await asyncio.sleep(think_s())
    except (ConnectionError, OSError, websockets.exceptions.WebSocketException) as exc:
        error = f"{type(exc).__name__}: {exc}"
        log(f"  a call ended early: {error}")
    finally:
        await caller.hang_up()
    return {"turns": turns, "error": error, "mic_max_lag_ms": round(caller.max_lag_ms, 1)}


async def phone_barge_in(
    url: str, question: bytes, interruption: Any, turn_timeout: float, delay: float
) -> dict[str, Any]:
    """One call interrupting a long answer while the level's calls talk: the
    interruption's first frame sent -> `clear` (what Twilio held is dropped then)."""
    import asyncio
    import contextlib

    from bench.voice.phone import barge_in
    from bench.voice.twilio_caller import TwilioCaller

    await asyncio.sleep(delay)
    try:
        caller = await TwilioCaller.open(url)
    except Exception as exc:  # reported: the level's load refused one more call
        return {"measured": False, "problem": f"cannot connect: {exc!r}"}
    try:
        await asyncio.sleep(0.5)
        return await barge_in(caller, question, ulaw(interruption.pcm), turn_timeout)
    except ConnectionError as exc:
        return {"measured": False, "problem": f"the call ended: {exc}"}
    finally:
        with contextlib.suppress(Exception):
            await caller.hang_up()
