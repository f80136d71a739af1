"""A barge-in trial over a connection: a long answer, and the user talking over it."""

from __future__ import annotations

from typing import Any

from app.protocol.server_events import (
    OutputAudioCleared,
    ResponseCreated,
    ResponseDone,
    SpeechStarted,
)
from bench.voice.client import pause_after
from bench.voice.common import ANSWER_AUDIO, ms_between
from bench.voice.connection import Conn
from bench.voice.rtc_connection import RtcConn
from bench.voice.workload import LONG_ANSWER_INSTRUCTIONS, LONG_ANSWER_PROMPT, Clip


async def barge_in_trial(
    conn: Conn | RtcConn,
    interruption: Clip,
    turn_timeout: float,
    merge_window_s: float,
) -> dict[str, Any]:
    """A typed request for a long answer; once its audio streams, the user talks over it."""
    start = len(conn.log)
    trial: dict[str, Any] = {"measured": False}
    await conn.send(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": LONG_ANSWER_PROMPT}],
            },
        }
    )
    await conn.send(
        {
            "type": "response.create",
            "response": {"instructions": LONG_ANSWER_INSTRUCTIONS, "max_output_tokens": 400},
        }
    )
    try:
        i_created, _, created = await conn.wait_for(
            lambda t, e: e["type"] == ResponseCreated.TYPE, start, turn_timeout
        )
        rid = created["response"]["id"]
        await conn.wait_for(
            lambda t, e: e["type"] in ANSWER_AUDIO and e.get("response_id") == rid,
            i_created,
            turn_timeout,
        )
    except TimeoutError:
        trial["reason"] = f"no audio of the long answer within {turn_timeout:.0f} s"
        return trial
    first_sent, last_sent = await conn.say(interruption.pcm)
    try:
        i_done, t_done, done = await conn.wait_for(
            lambda t, e: e["type"] == ResponseDone.TYPE and e["response"]["id"] == rid,
            i_created,
            turn_timeout,
        )
    except TimeoutError:
        trial["reason"] = "the long answer never finished (no response.done)"
        return trial
    events = conn.events(i_created, i_done)
    deltas = [t for t, e in events if e["type"] in ANSWER_AUDIO and e.get("response_id") == rid]
    # The server announces speech_started once the speech has passed its barge-in hold,
    # right after it cancelled the answer (so after that answer's response.done).
    try:
        _, started, _ = await conn.wait_for(
            lambda t, e: e["type"] == SpeechStarted.TYPE and t >= first_sent,
            i_created,
            5.0,
        )
    except TimeoutError:
        started = None
    status = done["response"]["status"]
    trial.update(
        {
            "status": status,
            "status_details": done["response"].get("status_details"),
            "audio_deltas_before_interruption": sum(1 for t in deltas if t < first_sent),
            "audio_deltas_after_interruption": sum(1 for t in deltas if t >= first_sent),
            # A client flushes playback on speech_started: audio after it is played by nobody.
            "audio_deltas_after_speech_started": None
            if started is None
            else sum(1 for t in deltas if t > started),
            "to_speech_started_ms": ms_between(started, first_sent),
            "to_last_audio_delta_ms": ms_between(deltas[-1], first_sent) if deltas else None,
            "to_response_done_ms": ms_between(t_done, first_sent),
        }
    )
    if isinstance(conn, RtcConn):  # the server's word that it stopped the track
        trial["to_output_audio_buffer_cleared_ms"] = ms_between(
            next(
                (
                    t
                    for t, e in conn.events(i_created)
                    if e["type"] == OutputAudioCleared.TYPE and t >= first_sent
                ),
                None,
            ),
            first_sent,
        )
        # what the jitter buffer still played after the server stopped the track
        cleared, last = trial["to_output_audio_buffer_cleared_ms"], trial["to_last_audio_delta_ms"]
        trial["cleared_to_last_audio_ms"] = (
            None if cleared is None or last is None else round(last - cleared, 1)
        )
    if status != "cancelled":
        trial["reason"] = "the answer finished before the interruption took effect"
    elif deltas and deltas[-1] < first_sent:
        trial["reason"] = "all the answer's audio had arrived before the interruption started"
        trial["measured"] = True  # the cancel itself (response.done) is still measured
    else:
        trial["measured"] = True
    # The interruption is a turn of its own; its answer is not measured: cancel it, so
    # the next trial starts on a quiet session.
    try:
        i2, _, c2 = await conn.wait_for(
            lambda t, e: e["type"] == ResponseCreated.TYPE and t > last_sent, i_done, turn_timeout
        )
        rid2 = c2["response"]["id"]

        def is_done(t: float, e: dict[str, Any]) -> bool:
            return e["type"] == ResponseDone.TYPE and e["response"]["id"] == rid2

        if not any(is_done(t, e) for t, e in conn.events(i2)):
            await conn.send({"type": "response.cancel"})
        await conn.wait_for(is_done, i2, turn_timeout)
    except TimeoutError:
        trial["note"] = "the interruption got no answer to cancel"
    await pause_after(last_sent, merge_window_s)
    return trial
