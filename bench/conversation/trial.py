"""One trial of `bench conversation`: a typed question, its spoken answer, and a sound said
over it at a chosen moment by a client that behaves like a microphone (bench.voice's
Conn: silence at real-time pace, then the sound, then silence). What the client saw is
returned: the `r1voice.interruption` verdicts, how the answer ended and with what text,
and the times on the client's clock (as `bench voice` measures barge-in)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from app.protocol.server_events import (
    AudioTranscriptDelta,
    Error,
    Interruption,
    ResponseCreated,
    ResponseDone,
    SessionUpdated,
    SpeechStarted,
    ga,
)
from bench.conversation.sounds import Overlap
from bench.voice.common import ANSWERED, AUDIO_DELTAS, TRANSCRIPT_DONE
from bench.voice.connection import Conn

TRANSCRIPT_DELTAS = (AudioTranscriptDelta.TYPE, ga.RENAMED[AudioTranscriptDelta])
QUESTIONS = (
    "Tell me a long story about a dragon and a knight.",
    "Tell me a long story about a fox who wanted to fly.",
    "Describe a walk through a forest in autumn, in detail.",
    "Tell me a long story about a sailor lost at sea.",
    "Describe a busy market in a small town, in detail.",
)
INSTRUCTIONS = "You are a storyteller. Tell long, detailed stories in plain spoken sentences."
# After the answer ends: how long the transcript of the overlap and a late verdict may take.
SETTLE_S = 3.0


def _ms(t: float | None, since: float | None) -> float | None:
    return None if t is None or since is None else round((t - since) * 1000, 1)


async def _configure(conn: Conn, overlap: Overlap) -> str | None:
    """A Mandarin sound is heard by a session set up for Mandarin speakers; the refusal,
    if the server refuses it."""
    if overlap.language == "en":
        return None
    start = len(conn.log)
    transcription = {"model": "whisper-base", "language": overlap.language}
    await conn.send(
        {"type": "session.update", "session": {"input_audio_transcription": transcription}}
    )
    _, _, reply = await conn.wait_for(
        lambda t, e: e["type"] in (SessionUpdated.TYPE, Error.TYPE), start, 120
    )
    return None if reply["type"] == SessionUpdated.TYPE else str(reply.get("error"))


async def _ask(conn: Conn, question: str, answer_tokens: int) -> None:
    content = [{"type": "input_text", "text": question}]
    item = {"type": "message", "role": "user", "content": content}
    await conn.send({"type": "conversation.item.create", "item": item})
    response = {"instructions": INSTRUCTIONS, "max_output_tokens": answer_tokens}
    await conn.send({"type": "response.create", "response": response})


async def overlap_trial(
    url: str, overlap: Overlap, question: str, delay_s: float, answer_tokens: int, wait_s: float
) -> dict[str, Any]:
    """Ask `question`, and `delay_s` after its first audio arrives, say `overlap` over it."""
    conn = await Conn.open(url)
    trial: dict[str, Any] = {
        "overlap": overlap.name,
        "voice": overlap.voice,
        "language": overlap.language,
        "question": question,
        "delay_s": delay_s,
    }
    try:
        refused = await _configure(conn, overlap)
        if refused is None:
            await asyncio.sleep(0.5)  # the microphone is on before anything is said
            await _ask(conn, question, answer_tokens)
            trial.update(await _overlap_answer(conn, overlap, delay_s, wait_s))
        else:
            trial["problem"] = f"session.update refused: {refused}"
    except (TimeoutError, ConnectionError) as exc:
        trial["problem"] = f"{type(exc).__name__}: {exc}"
    finally:
        await conn.close()
    # the microphone sends late chunks at once: a large lag shortens the sound on the wire
    trial["mic_max_lag_ms"] = round(conn.mic_max_lag_ms, 1)
    return trial


async def _overlap_answer(
    conn: Conn, overlap: Overlap, delay_s: float, wait_s: float
) -> dict[str, Any]:
    from app.audio import float_to_pcm16

    i_created, _, created = await conn.wait_for(
        lambda t, e: e["type"] == ResponseCreated.TYPE, 0, wait_s
    )
    rid = created["response"]["id"]

    def is_done(t: float, e: dict[str, Any]) -> bool:
        return e["type"] == ResponseDone.TYPE and e["response"]["id"] == rid

    await conn.wait_for(
        lambda t, e: e["type"] in AUDIO_DELTAS and e.get("response_id") == rid, i_created, wait_s
    )
    await asyncio.sleep(delay_s)
    if any(is_done(t, e) for t, e in conn.events(i_created)):
        return {"overlapped": False, "problem": "the answer ended before the sound began"}
    first_sent, last_sent = await conn.say(float_to_pcm16(overlap.samples))
    i_done, t_done, done = await conn.wait_for(is_done, i_created, wait_s)
    await _settle(conn, i_created, first_sent)
    out = _observe(conn.events(i_created), rid, first_sent, last_sent, t_done, done)
    if out["status"] == "cancelled":
        await _cancel_next(conn, i_done, last_sent, wait_s)
    return out


async def _settle(conn: Conn, start: int, first_sent: float) -> None:
    """Wait (a little) for the overlap's transcript and the final verdict, if it paused."""
    paused = [e for t, e in conn.events(start) if _is_verdict(e) and t >= first_sent]
    if not paused:
        return
    item = paused[0]["item_id"]
    with contextlib.suppress(TimeoutError):
        await conn.wait_for(
            lambda t, e: e["type"] == TRANSCRIPT_DONE and e.get("item_id") == item, start, SETTLE_S
        )


def _is_verdict(e: dict[str, Any]) -> bool:
    return bool(e["type"] == Interruption.TYPE)


def _observe(
    events: list[tuple[float, dict[str, Any]]],
    rid: str,
    first_sent: float,
    last_sent: float,
    t_done: float,
    done: dict[str, Any],
) -> dict[str, Any]:
    """The trial's outcome and times from the events from the answer's creation on."""
    said_over = [(t, e) for t, e in events if _is_verdict(e) and t >= first_sent]
    item = said_over[0][1]["item_id"] if said_over else None
    # the sound's own turn (a later one may pause the answer to the interruption)
    verdicts = [(t, e) for t, e in said_over if e["item_id"] == item]
    decided = next((t for t, e in verdicts if e["verdict"] != "wait"), None)
    started = next(
        (t for t, e in events if e["type"] == SpeechStarted.TYPE and t >= first_sent),
        None,
    )
    deltas = [t for t, e in events if e["type"] in AUDIO_DELTAS and e.get("response_id") == rid]
    before_pause = [t for t in deltas if started is None or t <= started]
    text = "".join(
        e.get("delta") or ""
        for _, e in events
        if e["type"] in TRANSCRIPT_DELTAS and e.get("response_id") == rid
    )
    response = done["response"]
    kept = next(
        (
            c.get("transcript")
            for o in response.get("output") or []
            for c in o.get("content") or []
            if c.get("transcript") is not None
        ),
        None,
    )
    heard = next(
        (
            e.get("transcript")
            for _, e in events
            if e["type"] == TRANSCRIPT_DONE and e.get("item_id") == item
        ),
        None,
    )
    return {
        "overlapped": True,
        "status": response["status"],
        "verdicts": [e["verdict"] for _, e in verdicts],
        "paused": bool(verdicts),
        "heard": heard,
        "answer_chars": len(text),
        "whole": response["status"] in ANSWERED and bool(text) and kept == text,
        "kept_chars": len(kept or ""),
        "audio_deltas_after_decision": sum(1 for t in deltas if decided and t > decided),
        # the client drops what it had queued at speech_started: the audio stops there
        "stop_ms": _ms(started, first_sent),
        "last_delta_before_pause_ms": _ms(before_pause[-1], first_sent) if before_pause else None,
        "done_ms": _ms(t_done, first_sent),
        "decision_after_speech_end_ms": _ms(decided, last_sent),
        "decision_after_stop_ms": _ms(decided, started),
        "sound_s": round(last_sent - first_sent, 3),
    }


async def _cancel_next(conn: Conn, start: int, last_sent: float, wait_s: float) -> None:
    """The interruption is a turn of its own, whose answer is not measured: cancel it."""
    try:
        i2, _, c2 = await conn.wait_for(
            lambda t, e: e["type"] == ResponseCreated.TYPE and t > last_sent, start, wait_s
        )
    except TimeoutError:
        return  # heard as no words: nothing to answer
    rid2 = c2["response"]["id"]

    def is_done(t: float, e: dict[str, Any]) -> bool:
        return e["type"] == ResponseDone.TYPE and e["response"]["id"] == rid2

    if not any(is_done(t, e) for t, e in conn.events(i2)):
        await conn.send({"type": "response.cancel"})
    await conn.wait_for(is_done, i2, wait_s)
