"""The bot's own voice from a loudspeaker, over a real socket at real-time pace: the
answer's audio comes back into the microphone 100 ms late and 20 dB quieter (as
`r1voice bench turns` plays it). It must not interrupt the answer; the user's voice over
the same echo still must."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from app.audio import float_to_pcm16
from bench.conversation.echo import Loudspeaker, ask_over_echo
from bench.voice.connection import Conn
from tests.clients.conftest import serve
from tests.conftest import app_with, load_clip
from tests.fakes import ScriptedLLM

ANSWER = [
    "The moon is the only natural satellite of the Earth. ",
    "It takes about a month to go around us, and it always shows the same face. ",
    "Its pull on the oceans makes the tides rise and fall twice a day.",
]


async def _scenario(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    conn = await Conn.open(url)
    try:
        speaker = Loudspeaker(conn, attenuation_db=20)
        detection = {"type": "server_vad", "create_response": False}
        await conn.send({"type": "session.update", "session": {"turn_detection": detection}})
        echo_only = await ask_over_echo(conn, speaker, "Tell me about the moon.")

        async def talk_over_it(response_id: str) -> None:
            await conn.wait_for(lambda t, e: e.get("response_id") == response_id, 0, 60)
            await asyncio.sleep(1.5)  # well into the answer and its echo
            await conn.say(float_to_pcm16(load_clip("jfk.flac")[: 24_000 * 3]))

        barge_in = await ask_over_echo(conn, speaker, "And again.", during=talk_over_it)
    finally:
        await conn.close()
    return echo_only, barge_in


def test_the_answers_echo_is_no_barge_in_but_the_user_over_it_is(shared_components: Any) -> None:
    components = dataclasses.replace(shared_components, llm=ScriptedLLM([ANSWER, ANSWER]))
    with serve(app_with(components)) as address:
        echo_only, barge_in = asyncio.run(_scenario(f"ws://{address}/v1/realtime?dialect=beta"))
    assert echo_only == {"status": "completed", "speech_started": 0}
    assert barge_in["status"] == "cancelled" and barge_in["speech_started"] >= 1
