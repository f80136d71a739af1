"""What a client does over a connection: voice turns and whole sessions (barge-in trials:
barge_in.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.protocol.server_events import (
    ItemDeleted,
    OutputAudioStarted,
    ResponseCreated,
    ResponseDone,
    SpeechStopped,
    TurnMetrics,
)
from bench.kit.log import log
from bench.voice.common import (
    ANSWER_AUDIO,
    ANSWER_DONE,
    RTC_AUDIO_FRAME,
    TRANSCRIPT_DONE,
    ms_between,
)
from bench.voice.connection import DELTA_AUDIBLE_MS, Conn, heard_at
from bench.voice.pipecat_connection import PipecatConn
from bench.voice.rtc_connection import RtcConn
from bench.voice.workload import Clip


async def open_connection(url: str) -> Conn | RtcConn:
    """ws://...: a Realtime WebSocket; http://host:port: a WebRTC call;
    pipecat+ws://...: the Pipecat peer's WebSocket (`bench capacity --peer pipecat`)."""
    if url.startswith("http"):
        return await RtcConn.open(url)
    if url.startswith("pipecat+"):
        return await PipecatConn.open(url)
    return await Conn.open(url)


async def voice_turn(conn: Conn | RtcConn, clip: Clip, turn_timeout: float) -> dict[str, Any]:
    """Say the clip, keep the microphone on (silence), wait for the answer and its metrics."""
    start = len(conn.log)
    turn: dict[str, Any] = {
        "clip": clip.name,
        "kind": clip.kind,
        "speech_s": round(clip.duration_s, 2),
    }
    _, last_sent = await conn.say(clip.pcm)
    turn["speech_end"] = last_sent  # the client's clock: turns of sessions compared
    try:
        # The answer to the whole utterance is the first response created after its end
        # (answers to a part of it, before a pause, are created earlier and cancelled).
        i_created, _, created = await conn.wait_for(
            lambda t, e: e["type"] == ResponseCreated.TYPE and t > last_sent, start, turn_timeout
        )
        rid = created["response"]["id"]
        i_done, t_done, done = await conn.wait_for(
            lambda t, e: e["type"] == ResponseDone.TYPE and e["response"]["id"] == rid,
            i_created,
            turn_timeout,
        )
        turn["status"] = done["response"]["status"]
        turn["server"] = None  # the Pipecat peer has no r1voice.turn.metrics
        if not isinstance(conn, PipecatConn):
            turn.update(await _turn_metrics(conn, rid, i_done))
    except TimeoutError:
        turn["status"] = "timeout"
        turn["problem"] = f"no complete answer within {turn_timeout:.0f} s"
        rid, t_done = None, None
    events = conn.events(start)
    first_audio = next(
        (t for t, e in events if e["type"] in ANSWER_AUDIO and e.get("response_id") == rid), None
    )
    transcripts = [e.get("transcript") or "" for _, e in events if e["type"] == TRANSCRIPT_DONE]
    if isinstance(conn, RtcConn):  # the server's word that the answer's audio went out
        turn["voice_to_voice_started_event_ms"] = ms_between(
            next(
                (
                    t
                    for t, e in events
                    if e["type"] == OutputAudioStarted.TYPE and e.get("response_id") == rid
                ),
                None,
            ),
            last_sent,
        )
    # the first sound a player would make (the first audible frame, over WebRTC): an answer
    # begins with ~40-60 ms of Piper's silence, which a first delta's arrival leaves out
    if isinstance(conn, RtcConn):  # the first audible frame, where in it the sound starts
        frames = [
            (t, e)
            for t, e in events
            if e["type"] == RTC_AUDIO_FRAME and e.get("response_id") == rid
        ]
        heard = frames[0][0] + frames[0][1].get(DELTA_AUDIBLE_MS, 0.0) / 1000 if frames else None
        turn["voice_to_voice_audible_ms"] = ms_between(heard, last_sent)
    elif not isinstance(conn, PipecatConn):
        deltas = [
            (t, e) for t, e in events if e["type"] in ANSWER_AUDIO and e.get("response_id") == rid
        ]
        turn["voice_to_voice_audible_ms"] = ms_between(heard_at(deltas), last_sent)
    stopped = [t for t, e in events if e["type"] == SpeechStopped.TYPE]
    turn.update(
        {
            "voice_to_voice_ms": ms_between(first_audio, last_sent),
            "speech_end_to_speech_stopped_event_ms": ms_between(
                stopped[-1] if stopped else None, last_sent
            ),
            "speech_end_to_response_done_ms": ms_between(t_done, last_sent),
            "transcript": transcripts[-1] if transcripts else None,
            "transcripts_completed": len(transcripts),
            "items_deleted": sum(1 for _, e in events if e["type"] == ItemDeleted.TYPE),
            "errors": [e.get("error") for _, e in events if e["type"] == "error"],
            "answer": next(
                (
                    e.get("transcript")
                    for _, e in events
                    if e["type"] in ANSWER_DONE and e.get("response_id") == rid
                ),
                None,
            ),
        }
    )
    return turn


async def _turn_metrics(conn: Conn | RtcConn, rid: str, i_done: int) -> dict[str, Any]:
    """The server's `r1voice.turn.metrics` of answer `rid` (its stages' times)."""
    try:
        _, _, metrics = await conn.wait_for(
            lambda t, e: e["type"] == TurnMetrics.TYPE and e.get("response_id") == rid,
            i_done,
            5.0,
        )
    except TimeoutError:
        return {"server": None, "problem": "no r1voice.turn.metrics within 5 s after response.done"}
    keys = (
        "speech_stopped_to_transcript_ms",
        "speech_stopped_to_first_token_ms",
        "speech_stopped_to_first_clause_ms",
        "speech_stopped_to_first_synthesized_ms",
        "speech_stopped_to_first_audio_ms",
        "audio_ms",
        "status",
    )
    return {"server": {k: metrics.get(k) for k in keys}}


async def pause_after(speech_end: float | None, merge_window_s: float) -> None:
    """A short silence, and past the turn-merge window so the next turn is a new one."""
    import asyncio
    import time

    wait = 0.5
    if speech_end is not None:
        wait = max(wait, speech_end + merge_window_s + 0.5 - time.monotonic())
    await asyncio.sleep(wait)


async def run_session(
    url: str,
    clips: list[Clip],
    delay: float,
    turn_timeout: float,
    merge_window_s: float,
    think_s: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """One session saying `clips` in turn, each after the answer to the one before;
    `think_s()`: more silence after each answer (a person thinking), on a live mic."""
    import asyncio

    import websockets

    await asyncio.sleep(delay)
    try:
        conn = await open_connection(url)
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
        return {"turns": [], "error": f"cannot connect: {exc!r}", "mic_max_lag_ms": 0.0}
    turns: list[dict[str, Any]] = []
    error = None
    try:
        await asyncio.sleep(0.5)  # the microphone is on before anyone speaks
        for clip in clips:
            turn = await voice_turn(conn, clip, turn_timeout)
            turns.append(turn)
            await pause_after(turn["speech_end"], merge_window_s)
            if think_s is not None:
                await asyncio.sleep(think_s())
    except (ConnectionError, OSError, websockets.exceptions.WebSocketException) as exc:
        error = f"{type(exc).__name__}: {exc}"
        log(f"  a session ended early: {error}")
    finally:
        await conn.close()
    return {"turns": turns, "error": error, "mic_max_lag_ms": round(conn.mic_max_lag_ms, 1)}
