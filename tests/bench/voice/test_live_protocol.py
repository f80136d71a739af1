"""`bench voice --protocol live`'s Live client against a real server (real VAD, ASR and
TTS; a scripted LLM): a turn said at real-time pace is measured as the Realtime one is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench.voice.live_protocol import LIVE_PATH, LiveConn, live_turn
from tests.clients.conftest import (  # noqa: F401 (a fixture)
    BARGE_IN_S,
    SHORT_ANSWER,
    ScriptedServer,
    scripted_server,
    speech_pcm,
)

pytestmark = pytest.mark.timeout(600)


def test_a_live_turn_is_timed_from_the_speech_end_to_the_answers_first_sound(
    scripted_server: ScriptedServer,  # noqa: F811 - the fixture imported above
) -> None:
    async def main(address: str) -> dict[str, Any]:
        conn = await LiveConn.open(f"ws://{address}{LIVE_PATH}")
        try:
            assert conn.session["model"] == "gpt-live-1"
            return await live_turn(conn, speech_pcm(BARGE_IN_S), 120)
        finally:
            await conn.close()

    with scripted_server(SHORT_ANSWER) as address:
        turn = asyncio.run(main(address))
    assert turn["status"] == "completed"
    # "And so, my fellow Americans"; a pause after "And so" may end the turn there
    heard = turn["transcript"].lower()
    assert any(w in heard for w in ("and so", "fellow", "americans")), heard
    assert turn["answer"].endswith("".join(SHORT_ANSWER))  # after what a split turn cut
    assert 0 < turn["voice_to_voice_ms"] <= turn["voice_to_voice_audible_ms"]
