"""A Live session is traced like a Realtime one: its trace reads the session's own
events (not their Live translation), so its report lists the turn and its stages."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.app.live.conftest import live_connection
from tests.clients.conftest import SHORT_ANSWER

pytestmark = pytest.mark.timeout(600)

USER_ASKS = [
    {"role": "user", "content": [{"type": "input_text", "text": "The capital of France?"}]}
]


def test_a_live_session_has_a_report_with_its_turn(scripted_live: Any) -> None:
    async def main(address: str) -> None:
        async with live_connection(address) as client:
            await client.start(input=USER_ASKS)
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "Paris" in e["delta"]
            )
            n = await client.send({"type": "session.close"})
            await client.wait("session.closed", after=n)
            await client.closed()

    with scripted_live(SHORT_ANSWER) as address:
        asyncio.run(main(address))
        listed = httpx.get(f"http://{address}/v1/r1voice/sessions", timeout=30).json()
        [summary] = listed["data"]
        report = httpx.get(f"http://{address}/v1/r1voice/sessions/{summary['id']}", timeout=30)
    report.raise_for_status()
    [turn] = report.json()["turns"]
    names = [s["name"] for s in turn["stages"]]
    assert any(n.startswith("chat ") for n in names), names
    assert "r1voice.tts" in names
