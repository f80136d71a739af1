"""Echo in `bench turns`: a loudspeaker playing the answer back into the microphone (after
100 ms, attenuated), and the trials that count the false barge-ins it causes."""

from __future__ import annotations

from typing import Any

from app.protocol.server_events import ResponseCreated, ResponseDone, SpeechStarted
from bench.voice.workload import ECHO_QUESTIONS


class Loudspeaker:
    """The room: each audio delta of the answer being played comes back into `conn`'s
    microphone after `delay_s`, `attenuation_db` quieter (real-time pace, in order)."""

    def __init__(self, conn: Any, attenuation_db: float, delay_s: float = 0.1) -> None:
        self.conn, self.delay_s = conn, delay_s
        self.gain = 10 ** (-attenuation_db / 20)
        self.response: str | None = None
        self.echoes: list[Any] = []
        conn.on_audio = self._heard

    def play(self, response_id: str) -> None:
        """From now on, echo this response's audio (after the delay's silence)."""
        import asyncio

        import numpy as np

        from app.audio import PROTOCOL_RATE

        delay = np.zeros(int(PROTOCOL_RATE * self.delay_s), dtype=np.int16).tobytes()
        self.response = response_id
        self.echoes = [asyncio.create_task(self.conn.say(delay))]

    def _heard(self, response_id: str | None, b64: str) -> None:
        import asyncio
        import base64

        import numpy as np

        if response_id != self.response:
            return
        pcm = np.frombuffer(base64.b64decode(b64), dtype=np.int16).astype(np.float32)
        quiet = (pcm * self.gain).astype(np.int16).tobytes()
        self.echoes.append(asyncio.create_task(self.conn.say(quiet)))

    async def finished(self) -> None:
        """The echo has been heard to its end."""
        import asyncio

        await asyncio.gather(*self.echoes)


async def ask_over_echo(
    conn: Any, speaker: Loudspeaker, question: str, during: Any = None
) -> dict[str, Any]:
    """Ask a typed question and play its spoken answer into the room; `during` (a
    coroutine function of the response id) runs while it plays. Returns the answer's
    status and how many `speech_started` the server sent meanwhile."""
    import asyncio

    start = len(conn.log)
    content = [{"type": "input_text", "text": question}]
    item = {"type": "message", "role": "user", "content": content}
    await conn.send({"type": "conversation.item.create", "item": item})
    await conn.send({"type": "response.create"})
    try:
        _, _, created = await conn.wait_for(
            lambda t, e: e["type"] == ResponseCreated.TYPE, start, 60
        )
        rid = created["response"]["id"]
        speaker.play(rid)
        if during is not None:
            await during(rid)
        _, _, done = await conn.wait_for(
            lambda t, e, r=rid: e["type"] == ResponseDone.TYPE and e["response"]["id"] == r,
            start,
            120,
        )
        status = done["response"]["status"]
    except TimeoutError:
        status = "timeout"
    await speaker.finished()
    await asyncio.sleep(1.0)
    events = [e for _, e in conn.events(start)]
    started = sum(1 for e in events if e["type"] == SpeechStarted.TYPE)
    outcome: dict[str, Any] = {"status": status, "speech_started": started}
    if status == "timeout":
        outcome["events"] = [e["type"] for e in events][-20:]
    return outcome


async def echo_trials(url: str, answers: int, attenuation_db: float) -> dict[str, Any]:
    """`answers` typed questions, each answer played back into the microphone at
    `attenuation_db`: how many the server took for a barge-in."""
    from bench.voice.connection import Conn

    conn = await Conn.open(url)
    speaker = Loudspeaker(conn, attenuation_db)
    # echo that ends up a turn is counted, not answered (the next question comes next)
    detection = {"type": "server_vad", "create_response": False}
    await conn.send({"type": "session.update", "session": {"turn_detection": detection}})
    try:
        outcomes = [
            await ask_over_echo(conn, speaker, ECHO_QUESTIONS[i % len(ECHO_QUESTIONS)])
            for i in range(answers)
        ]
    finally:
        await conn.close()
    from bench.voice.common import ANSWERED

    false = sum(1 for o in outcomes if o["status"] not in ANSWERED or o["speech_started"])
    return {"answers": len(outcomes), "false_barge_ins": false, "rows": outcomes}
