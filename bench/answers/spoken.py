"""One spoken question to a GPT-Live session, and what came back: the live model's first
words, what the server heard, the delegation (if any), the backend's conclusion and the
answer said from it.

The client is `bench voice --protocol live`'s (a real-time microphone over the Live
WebSocket). Server delegation tells its progress as `response.event`s: the conclusion is
the message of the run that completes the task; the server appends it as commentary
where the live model says it, so the delegated answer is the speech after that
`session.commentary.appended`, and the live model's own answer the speech before."""

from __future__ import annotations

from typing import Any

from bench.voice.live_protocol import LIVE_PATH, LiveConn

ANSWER_GAP_S = 2.0  # no answer audio for this long and no task open: the turn is over
DELEGATED = "session.delegation.created"
RESPONSE_EVENT = "response.event"
COMMENTARY = "session.commentary.appended"


async def open_live(port: int, session: dict[str, Any]) -> LiveConn:
    """A Live WebSocket started with `session` (its microphone on)."""
    import asyncio
    import json

    import websockets

    url = f"ws://127.0.0.1:{port}{LIVE_PATH}"
    conn = LiveConn(await websockets.connect(url, max_size=None, open_timeout=30))
    await conn.ws.send(json.dumps({"type": "session.start", "session": session}))
    conn._tasks = [asyncio.create_task(conn._receive())]
    _, _, started = await conn.wait_for(lambda t, e: e["type"] == "session.started", 0, 30)
    conn.session = started["session"]
    conn._tasks.append(asyncio.create_task(conn._microphone()))
    return conn


def _conclusion(event: dict[str, Any]) -> str | None:
    """The backend's conclusion, where `event` is the response.event that carries it."""
    inner = event.get("event") or {}
    item = inner.get("item") or {}
    if inner.get("type") != "response.output_item.done" or item.get("type") != "message":
        return None
    return "".join(p.get("text", "") for p in item.get("content", []))


async def ask(conn: LiveConn, pcm: bytes, timeout_s: float) -> dict[str, Any]:
    """Say the question; wait for the answers (the delegated one too, when delegated)."""
    import time

    from app.protocol.server_events.live import (
        InputTranscriptDelta,
        OutputAudioDelta,
        OutputTranscriptDelta,
    )
    from bench.voice.common import ms_between
    from bench.voice.connection import heard_at

    start = len(conn.log)
    _, said_at = await conn.say(pcm)
    turn: dict[str, Any] = {"delegated": False, "conclusion": None, "status": "completed"}
    commented_at: float | None = None
    i = start
    while True:
        events = [(t, e) for t, e in conn.events(start, len(conn.log)) if t > said_at]
        for t, e in events:
            if e["type"] == DELEGATED and not turn["delegated"]:
                turn["delegated"], turn["delegated_ms"] = True, ms_between(t, said_at)
            text = _conclusion(e) if e["type"] == RESPONSE_EVENT else None
            if text is not None and turn["conclusion"] is None:
                turn["conclusion"], turn["concluded_ms"] = text, ms_between(t, said_at)
            if e["type"] == COMMENTARY and commented_at is None:
                commented_at = t
        audio = [t for t, e in events if e["type"] == OutputAudioDelta.TYPE]
        said = commented_at is not None and bool(audio) and audio[-1] > commented_at
        waiting = turn["delegated"] and turn["conclusion"] != "" and not said
        if audio and not waiting and time.monotonic() - audio[-1] > ANSWER_GAP_S:
            break
        if time.monotonic() > said_at + timeout_s:
            turn["status"] = "timeout"
            break
        try:
            i, _, _ = await conn.wait_for(lambda t, e: True, i, 0.25)
            i += 1
        except TimeoutError:
            pass
    events = [(t, e) for t, e in conn.events(start, len(conn.log)) if t > said_at]
    split = commented_at if commented_at is not None else float("inf")
    before = [(t, e) for t, e in events if t < split]
    after = [(t, e) for t, e in events if t >= split]

    def words(part: list[tuple[float, dict[str, Any]]]) -> str:
        return "".join(e["delta"] for _, e in part if e["type"] == OutputTranscriptDelta.TYPE)

    def first_heard(part: list[tuple[float, dict[str, Any]]]) -> float | None:
        return ms_between(
            heard_at([(t, e) for t, e in part if e["type"] == OutputAudioDelta.TYPE]), said_at
        )

    turn["own_answer"], turn["delegated_answer"] = words(before), words(after)
    heard = conn.events(start, len(conn.log))  # partials come while the speech goes on
    turn["heard"] = "".join(e["delta"] for _, e in heard if e["type"] == InputTranscriptDelta.TYPE)
    turn["first_word_ms"] = first_heard(events)
    turn["delegated_answer_ms"] = first_heard(after) if after else None
    return turn
